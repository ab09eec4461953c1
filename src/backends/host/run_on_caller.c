/*
 * run_on_caller.c - a blocking caller's small collective, run at once on its own
 * thread (dfccl_coll_run).
 *
 * Driving the scheduler (daemon.c) already spares a waiting caller the
 * hand-off to the daemon thread, but a collective still passes through the
 * submission queue, the active list, the completion queue and a record on
 * the heap, each with its lock: several times the cost of the one-shot's
 * own write and reads. When the scheduler has nothing else to run, the
 * caller takes its lock and runs the one-shot itself from a record on its
 * stack; it is then the only collective there is, so the global order and
 * the budgets say it may wait for its peers the head's budget. Once that is
 * spent, or another collective is submitted meanwhile (it may come first in
 * the order), the record goes to the scheduler as it stands (the one-shot's
 * saved context) and the call waits as any other. Holding the scheduler's
 * lock keeps the daemon thread off, so no collective is run by two threads.
 */
#include <stdlib.h>
#include <string.h>
#include "util/clock.h"
#include "backends/host/host.h"
#include "core/wait_policy.h"

/* Its place in the communicator's order and the identity its peers
 * check: a post's, but no reference on the communicator, which the caller
 * holds until it returns (the hand-over takes one). */
static void caller_enter(dfccl_comm_t *comm, dfccl_coll_t *coll)
{
    coll->seq = __atomic_fetch_add(&comm->next_seq, 1, __ATOMIC_RELAXED);
    coll->comm = comm;
    coll->ident.seq1 = coll->seq + 1;
    dfccl_host_publish(comm, coll->seq, &coll->ident);
}

/* The collective's end on the caller's thread: what sched.c's finish does,
 * but nobody waits for a completion. */
static dfccl_status_t caller_finish(dfccl_comm_t *comm, const dfccl_coll_t *coll,
                                     dfccl_status_t status)
{
    comm->next_run_seq = coll->seq + 1;
    dfccl_board_done(comm->board, coll->seq + 1);
    dfccl_stats_add_ran(coll->type, DFCCL_STATS_ONESHOT, status, coll->exec.sent_bytes);
    return status;
}

/* Waits for the peers' contributions within the head's budget, unless
 * another collective is submitted meanwhile: DONE, MISMATCH, or BLOCKED
 * (the record is then handed over). */
static dfccl_oneshot_result_t caller_turn(dfccl_context_t *ctx, dfccl_coll_t *coll)
{
    const dfccl_sched_t *s = &dfccl_host_ctx(ctx)->sched;
    uint64_t budget = dfccl_sched_turn_budget(&s->budgets, coll->budget_ns, 1), since = 0, now = 0;
    unsigned looks = 0;

    for (;;) {
        dfccl_oneshot_result_t r = dfccl_oneshot_advance(coll);
        if (r != DFCCL_ONESHOT_BLOCKED) return r;
        if (__atomic_load_n(&dfccl_host_ctx(ctx)->submit.pending, __ATOMIC_ACQUIRE)) return DFCCL_ONESHOT_BLOCKED;
        /* the clock every few looks: a read costs about as much as a look,
         * and most waits end within a few */
        if ((++looks & 7) == 0) {
            now = dfccl_now_ns();
            if (since == 0) since = now;
            if (now - since >= budget) return DFCCL_ONESHOT_BLOCKED;
        }
        dfccl_wait_pause(now - since);
    }
}

/* The record, as it stands, goes to the scheduler; NULL when out of memory. */
static dfccl_coll_t *caller_copy(const dfccl_coll_t *coll)
{
    dfccl_coll_t *heap = malloc(sizeof(*heap));

    if (heap == NULL) return NULL;
    memcpy(heap, coll, sizeof(*heap));
    heap->exec.steps = heap->steps;
    return heap;
}

/* The daemon thread looks at this count to stand back (daemon.c); bumped
 * by the lock's holder, so a plain store. */
static void caller_count_turn(dfccl_sched_t *s)
{
    __atomic_store_n(&s->driven, s->driven + 1, __ATOMIC_RELEASE);
}

dfccl_status_t dfccl_host_run(dfccl_comm_t *comm, const dfccl_coll_args_t *args)
{
    dfccl_context_t *ctx = comm->context;
    dfccl_sched_t *s = &dfccl_host_ctx(ctx)->sched;
    dfccl_coll_t coll, *heap;
    dfccl_oneshot_result_t r;
    dfccl_status_t status;
    size_t total;

    status = dfccl_host_post_checks(comm, args, &total);
    if (status != DFCCL_OK) return status;
    if (!ctx->config.caller_drives || args->callback != NULL ||
        !dfccl_oneshot_serves(comm, args, total))
        goto post;
    /* the scheduler busy (the daemon runs it, or another caller): the queue */
    if (pthread_mutex_trylock(&s->lock) != 0) goto post;
    if (!dfccl_sched_idle(ctx)) {
        pthread_mutex_unlock(&s->lock);
        goto post;
    }
    caller_count_turn(s);
    memset(&coll, 0, sizeof(coll));
    dfccl_oneshot_init(comm, args, total, &coll);
    dfccl_ident_make(&coll.ident, args, comm->size, DFCCL_OK);
    caller_enter(comm, &coll);
    /* an older collective of this communicator, posted by another thread,
     * may be on its way to the scheduler: it runs first */
    r = comm->next_run_seq == coll.seq ? caller_turn(ctx, &coll) : DFCCL_ONESHOT_BLOCKED;
    if (r != DFCCL_ONESHOT_BLOCKED) {
        status = caller_finish(comm, &coll, r == DFCCL_ONESHOT_DONE ? DFCCL_OK
                                                                     : DFCCL_ERR_MISMATCH);
        pthread_mutex_unlock(&s->lock);
        return status;
    }
    heap = caller_copy(&coll);
    if (heap == NULL) {
        /* our place is taken and our contribution maybe written: the
         * peers must learn that this call failed */
        dfccl_comm_break(comm, coll.seq, DFCCL_ERR_NO_MEMORY, "out of memory");
        status = caller_finish(comm, &coll, DFCCL_ERR_NO_MEMORY);
        pthread_mutex_unlock(&s->lock);
        return status;
    }
    __atomic_add_fetch(&comm->refs, 1, __ATOMIC_ACQ_REL);
    dfccl_stats_add_posted(heap->type);
    dfccl_stats_add_algorithm(DFCCL_STATS_ONESHOT);
    dfccl_sched_admit(ctx, heap);
    pthread_mutex_unlock(&s->lock);
    dfccl_queue_kick(&dfccl_host_ctx(ctx)->submit);   /* a sleeping daemon must not sleep on it */
    return DFCCL_INPROGRESS;
post:
    status = dfccl_host_post_checked(comm, args, total);
    return status == DFCCL_OK ? DFCCL_INPROGRESS : status;
}
