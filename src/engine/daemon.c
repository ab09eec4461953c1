/*
 * daemon.c - the host backend's daemon thread: takes collectives from the
 * submission queue, runs their plans through the executor core, and posts
 * completions.
 *
 * Collectives run one at a time in submission order (NCCL's serial model).
 * The executor already gives up at slice boundaries when a peer is not
 * ready; this loop then backs off and retries, and fails a collective that
 * made no progress for config.timeout_sec with a line saying what it waits for.
 */
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include "clock.h"
#include "internal.h"
#include "log.h"

/* Backoff while the running collective waits for a peer: spin first (a peer
 * on another core answers within microseconds), then yield the core (ranks
 * may outnumber cores), then nap so an idle wait does not burn a core. */
#define DAEMON_SPIN_NS   20000ull
#define DAEMON_YIELD_NS  1000000ull
#define DAEMON_NAP_NS    50000L
/* An idle daemon polls for new work this long before it sleeps on the queue:
 * back-to-back collectives then skip a thread wake-up. */
#define DAEMON_IDLE_SPIN_NS 50000ull
/* Slices moved per call before the daemon looks at its queues again. */
#define DAEMON_SLICE_BATCH 64

typedef struct daemon_list {
    dfccl_coll_t *head, *tail;
} daemon_list_t;

static void daemon_list_append(daemon_list_t *l, dfccl_coll_t *first)
{
    while (first != NULL) {
        dfccl_coll_t *next = first->next;
        first->next = NULL;
        if (l->tail) l->tail->next = first;
        else l->head = first;
        l->tail = first;
        first = next;
    }
}

static dfccl_coll_t *daemon_list_pop(daemon_list_t *l)
{
    dfccl_coll_t *c = l->head;
    l->head = c->next;
    if (l->head == NULL) l->tail = NULL;
    return c;
}

static void daemon_finish(dfccl_context_t *ctx, dfccl_coll_t *coll, dfccl_status_t status)
{
    dfccl_stats_add_completed(coll->type, status);
    dfccl_stats_add_bytes(coll->exec.sent_bytes);
    if (dfccl_cqueue_push(&ctx->complete, coll->user, status) != DFCCL_OK)
        dfccl_error("completion of %s #%llu lost: out of memory", dfccl_coll_type_name(coll->type),
                    (unsigned long long)coll->seq);
    dfccl_comm_release(coll->comm);
    free(coll);
}

static void daemon_diagnose(const dfccl_coll_t *coll, double idle_sec)
{
    const dfccl_exec_t *x = &coll->exec;
    const dfccl_comm_t *comm = coll->comm;
    const dfccl_fifo_t *f = x->waiting == DFCCL_WAIT_SEND ? x->send_fifo : x->recv_fifo;

    dfccl_error("rank %d of comm %#llx (size %d): %s #%llu (%zu x %s, op %s) made no progress"
                " for %.1f s at step %u of %u (element %llu of %llu): waiting for %s rank %d"
                " (fifo tail %llu, head %llu, %u slots)",
                comm->rank, (unsigned long long)comm->key, comm->size,
                dfccl_coll_type_name(coll->type), (unsigned long long)coll->seq,
                coll->total_count, dfccl_dtype_name(x->dtype), dfccl_op_name(x->op), idle_sec,
                x->step + 1, x->nsteps, (unsigned long long)x->offset,
                (unsigned long long)(x->step < x->nsteps ? x->steps[x->step].count : 0),
                x->waiting == DFCCL_WAIT_SEND ? "a free slot at" : "data from", f->peer,
                (unsigned long long)__atomic_load_n(&f->ctrl->tail, __ATOMIC_ACQUIRE),
                (unsigned long long)__atomic_load_n(&f->ctrl->head, __ATOMIC_ACQUIRE), f->nslots);
}

static void daemon_backoff(uint64_t waited_ns)
{
    if (waited_ns < DAEMON_SPIN_NS) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    } else if (waited_ns < DAEMON_YIELD_NS) {
        sched_yield();
    } else {
        struct timespec nap = { 0, DAEMON_NAP_NS };
        nanosleep(&nap, NULL);
    }
}

void *dfccl_daemon_main(void *arg)
{
    dfccl_context_t *ctx = arg;
    uint64_t timeout_ns = (uint64_t)(ctx->config.timeout_sec * 1e9);
    daemon_list_t active = { NULL, NULL };
    uint64_t blocked_since = 0;
    dfccl_coll_t *coll;

    for (;;) {
        if (active.head == NULL) {
            uint64_t idle_since = dfccl_now_ns();
            while (!__atomic_load_n(&ctx->submit.pending, __ATOMIC_ACQUIRE) &&
                   !__atomic_load_n(&ctx->submit.stop, __ATOMIC_ACQUIRE) &&
                   dfccl_now_ns() - idle_since < DAEMON_IDLE_SPIN_NS)
                sched_yield();
        }
        if (active.head == NULL || __atomic_load_n(&ctx->submit.pending, __ATOMIC_ACQUIRE))
            daemon_list_append(&active, dfccl_queue_take_all(&ctx->submit, active.head == NULL));
        if (__atomic_load_n(&ctx->submit.stop, __ATOMIC_ACQUIRE)) break;
        coll = active.head;
        if (coll == NULL) continue;

        if (coll->last_progress_ns == 0) {       /* just became the running one */
            coll->last_progress_ns = dfccl_now_ns();
            blocked_since = 0;
            if (coll->comm->broken) {
                dfccl_error("rank %d of comm %#llx: %s #%llu fails at once: an earlier collective"
                            " on this communicator failed", coll->comm->rank,
                            (unsigned long long)coll->comm->key, dfccl_coll_type_name(coll->type),
                            (unsigned long long)coll->seq);
                daemon_finish(ctx, daemon_list_pop(&active), DFCCL_ERR_TIMEOUT);
                continue;
            }
        }
        switch (dfccl_exec_host_advance(&coll->exec, DAEMON_SLICE_BATCH)) {
        case DFCCL_EXEC_DONE:
            daemon_finish(ctx, daemon_list_pop(&active), DFCCL_OK);
            break;
        case DFCCL_EXEC_PROGRESS:
            coll->last_progress_ns = dfccl_now_ns();
            blocked_since = 0;
            break;
        case DFCCL_EXEC_BLOCKED: {
            uint64_t now = dfccl_now_ns();
            if (blocked_since == 0) blocked_since = now;
            if (now - coll->last_progress_ns > timeout_ns) {
                daemon_diagnose(coll, (double)(now - coll->last_progress_ns) / 1e9);
                coll->comm->broken = 1;   /* its FIFO counters are now out of step */
                daemon_finish(ctx, daemon_list_pop(&active), DFCCL_ERR_TIMEOUT);
            } else {
                daemon_backoff(now - blocked_since);
            }
            break;
        }
        }
    }
    /* shutting down: nothing still queued or running will complete */
    daemon_list_append(&active, dfccl_queue_take_all(&ctx->submit, 0));
    while (active.head != NULL) daemon_finish(ctx, daemon_list_pop(&active), DFCCL_ERR_SHUTDOWN);
    return NULL;
}
