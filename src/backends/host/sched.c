/*
 * sched.c - the host backend's scheduler (host_sched.h says who runs it): takes
 * collectives from the submission queue, runs their plans through the
 * executor core, and posts completions.
 *
 * Preemptive mode (config.preempt = 1):
 * - The active list is ordered by (priority high first, communicator key,
 *   sequence number): a global order every rank computes alike.
 * - On each communicator only its oldest collective may run (they share the
 *   communicator's FIFOs, and MPI orders them alike on all ranks).
 * - A pass walks the runnable collectives in that order, and ends at the
 *   first that moved data (the next pass starts at the head again). A collective keeps
 *   the thread while it moves data (stickiness); once it has waited for a
 *   peer longer than its budget it gives way, with nothing half-done (the
 *   executor only stops between slices). The first in the order gets the
 *   long head budget, so ranks converge on the same collective; a turn with
 *   progress doubles a collective's budget, one without halves it.
 * - A pass without progress anywhere backs off: spin, yield, then nap.
 *
 * Serial mode (config.preempt = 0) runs only the oldest submission, the way
 * NCCL does: kept as the baseline that deadlocks on disordered programs.
 *
 * Watchdog: a runnable collective blocked for config.timeout_sec (time the
 * scheduler spent on other collectives that moved is not counted against it)
 * fails with a line saying what it waits for and one per peer saying what
 * that peer does (watch.c); its communicator is then broken (its FIFO
 * counters are out of step), later collectives on it fail at once, and the
 * peers, which read it on its board, fail theirs. Before a collective moves
 * anything, the identity its sending peer published must match its own; a
 * blocked collective fails early when a peer broke or its process is gone.
 */
#include <stdlib.h>
#include "util/clock.h"
#include "backends/host/host.h"
#include "util/log.h"
#include "core/sched_policy.h"
#include "core/wait_policy.h"

/* Watchdog accounting: the time between two turns of a blocked collective
 * counts against it up to this much; beyond, the scheduler was busy with other
 * collectives that moved, and the gap is not this one's fault. */
#define SCHED_VISIT_GAP_CAP_NS 100000000ull
/* Slices moved per executor call before the clock is read again. */
#define SCHED_SLICE_BATCH 64

typedef enum { RUN_DONE, RUN_PROGRESS, RUN_BLOCKED, RUN_MISMATCH } sched_run_t;

static int coll_before(const dfccl_coll_t *a, const dfccl_coll_t *b)
{
    dfccl_sched_key_t ka = { a->priority, a->comm->key, a->seq };
    dfccl_sched_key_t kb = { b->priority, b->comm->key, b->seq };
    return dfccl_sched_before(&ka, &kb);
}

static void sched_admit(dfccl_context_t *ctx, dfccl_coll_t *first)
{
    while (first != NULL) {
        dfccl_coll_t *c = first, **link = &dfccl_host_ctx(ctx)->sched.active;
        first = first->next;
        dfccl_host_send_ident(c->comm, c->seq, &c->ident);
        if (ctx->config.preempt) {
            while (*link != NULL && coll_before(*link, c)) link = &(*link)->next;
        } else {
            while (*link != NULL) link = &(*link)->next;
        }
        c->next = *link;
        *link = c;
    }
}

void dfccl_sched_admit(dfccl_context_t *ctx, dfccl_coll_t *coll)
{
    coll->next = NULL;
    sched_admit(ctx, coll);
}

static void sched_finish(dfccl_context_t *ctx, dfccl_coll_t **link, dfccl_status_t status)
{
    dfccl_coll_t *coll = *link;

    *link = coll->next;
    coll->comm->next_run_seq = coll->seq + 1;   /* the next one on this comm may run */
    dfccl_board_done(coll->comm->board, coll->seq + 1);
    if (coll->marker) {   /* a call that failed at its post: nobody waits for it */
        dfccl_comm_release(coll->comm);
        free(coll);
        return;
    }
    dfccl_stats_add_finished(coll->type, status, coll->exec.sent_bytes);
    if (coll->crosses && status == DFCCL_OK) dfccl_stats_add_net();
    dfccl_coll_complete(ctx, &coll->call, status);
    dfccl_comm_release(coll->comm);
    free(coll);
}

/* Whether the thread running a turn should give way now although its
 * collective's budget lasts: new collectives wait to be admitted (one of
 * them may come first in the global order: ranks that started in different
 * orders then find their common head sooner), a driving caller's time is up,
 * or a caller wants to drive while the daemon runs it. */
static int sched_give_way(dfccl_context_t *ctx, uint64_t now)
{
    const dfccl_sched_t *s = &dfccl_host_ctx(ctx)->sched;

    if (__atomic_load_n(&dfccl_host_ctx(ctx)->submit.pending, __ATOMIC_ACQUIRE)) return 1;
    if (s->deadline_ns != 0) return now >= s->deadline_ns;
    return __atomic_load_n(&s->drivers, __ATOMIC_ACQUIRE) > 0;
}

/* One step of a collective's algorithm: the one-shot, or its plan through
 * the executor; *mismatch when a peer made another call (said, and the
 * communicator broken). */
static dfccl_exec_result_t sched_advance(dfccl_coll_t *coll, int *mismatch)
{
    dfccl_status_t ident;

    if (coll->oneshot) {
        dfccl_oneshot_result_t r = dfccl_oneshot_advance(coll);
        *mismatch = r == DFCCL_ONESHOT_MISMATCH;
        return r == DFCCL_ONESHOT_DONE ? DFCCL_EXEC_DONE : DFCCL_EXEC_BLOCKED;
    }
    /* no byte moves before the sending peer is known to make the same
     * call; waiting for its post is waiting for a peer like any other */
    ident = coll->checked ? DFCCL_OK : dfccl_watch_ident(coll);
    *mismatch = ident == DFCCL_ERR_MISMATCH;
    if (ident != DFCCL_OK) return DFCCL_EXEC_BLOCKED;
    return dfccl_exec_host_advance(&coll->exec, SCHED_SLICE_BATCH);
}

/* One turn: run while data moves; give way after budget_ns without, or
 * sooner (sched_give_way). */
static sched_run_t sched_run(dfccl_context_t *ctx, dfccl_coll_t *coll, uint64_t budget_ns)
{
    uint64_t blocked_since = 0, now;
    int moved = 0, mismatch;

    for (;;) {
        /* slots to and from other nodes move while the executor works */
        dfccl_net_progress(__atomic_load_n(&ctx->net, __ATOMIC_ACQUIRE));
        dfccl_exec_result_t r = sched_advance(coll, &mismatch);
        if (mismatch) return RUN_MISMATCH;
        if (r == DFCCL_EXEC_DONE) {
            /* hand the last slots over (and note that sends are under way) */
            dfccl_net_progress(__atomic_load_n(&ctx->net, __ATOMIC_ACQUIRE));
            return RUN_DONE;
        }
        now = dfccl_now_ns();
        if (r == DFCCL_EXEC_PROGRESS) {
            moved = 1;
            blocked_since = 0;
            continue;
        }
        if (blocked_since == 0) blocked_since = now;
        if (now - blocked_since >= budget_ns || sched_give_way(ctx, now))
            return moved ? RUN_PROGRESS : RUN_BLOCKED;
        dfccl_wait_pause(now - blocked_since);
    }
}

/* One pass over the runnable collectives; returns 1 when anything moved. */
static int sched_pass(dfccl_context_t *ctx)
{
    dfccl_sched_t *s = &dfccl_host_ctx(ctx)->sched;
    const dfccl_config_t *cfg = &ctx->config;
    dfccl_coll_t **link = &s->active;
    int progressed = 0, first = 1;

    while (*link != NULL) {
        dfccl_coll_t *coll = *link;
        uint64_t budget;

        /* a driving caller returns to its completion at once */
        if (progressed && s->deadline_ns != 0 &&
            __atomic_load_n(&ctx->complete.used, __ATOMIC_ACQUIRE) > 0)
            break;
        if (coll->seq != coll->comm->next_run_seq) {   /* an older one runs first */
            link = &coll->next;
            continue;
        }
        if (coll->marker) {   /* its place in the order, nothing to move */
            sched_finish(ctx, link, DFCCL_OK);
            progressed = 1;
            continue;
        }
        if (coll->last_visit_ns == 0) {
            coll->last_visit_ns = dfccl_now_ns();
            dfccl_watch_peers_reset(coll);
        }
        if (__atomic_load_n(&coll->comm->broken, __ATOMIC_ACQUIRE)) {
            dfccl_error("rank %d of comm %#llx: %s #%llu fails at once: an earlier collective"
                        " on this communicator failed", coll->comm->rank,
                        (unsigned long long)coll->comm->key, dfccl_coll_type_name(coll->type),
                        (unsigned long long)coll->seq);
            sched_finish(ctx, link, DFCCL_ERR_BROKEN);
            progressed = 1;
            continue;
        }
        budget = dfccl_sched_turn_budget(&s->budgets, coll->budget_ns, first);
        first = 0;
        sched_run_t r = sched_run(ctx, coll, budget);
        if (r == RUN_DONE) {   /* its board says so when it is finished */
            sched_finish(ctx, link, DFCCL_OK);
            progressed = 1;
            continue;
        }
        uint64_t now = dfccl_now_ns(), gap = now - coll->last_visit_ns;
        coll->last_visit_ns = now;
        dfccl_board_progress(coll->comm->board, coll->seq, coll->exec.round, coll->exec.step,
                             coll->exec.waiting, coll->exec.wait_peer, now);
        switch (r) {
        case RUN_DONE:   /* finished above: not reached */
            break;
        case RUN_MISMATCH:   /* said, and the communicator broken, by watch.c */
            sched_finish(ctx, link, DFCCL_ERR_MISMATCH);
            progressed = 1;
            continue;
        case RUN_PROGRESS:
            coll->budget_ns = dfccl_sched_adapt(&s->budgets, coll->budget_ns, 1);
            coll->blocked_ns = 0;
            dfccl_watch_peers_reset(coll);
            progressed = 1;
            break;
        case RUN_BLOCKED: {
            dfccl_status_t peers;
            coll->blocked_ns += gap < SCHED_VISIT_GAP_CAP_NS ? gap : SCHED_VISIT_GAP_CAP_NS;
            coll->budget_ns = dfccl_sched_adapt(&s->budgets, coll->budget_ns, 0);
            if (coll->blocked_ns > s->timeout_ns) {
                dfccl_watch_timeout(coll, (double)coll->blocked_ns / 1e9);
                sched_finish(ctx, link, DFCCL_ERR_TIMEOUT);
                progressed = 1;
                continue;
            }
            peers = dfccl_watch_peers(coll);
            if (peers != DFCCL_OK) {
                sched_finish(ctx, link, peers);
                progressed = 1;
                continue;
            }
            break;
        }
        }
        if (!cfg->preempt) break;   /* serial: only the oldest submission runs */
        /* After progress anywhere, start again from the head: it is what all
         * ranks converge on, and the peers that just moved may now let it go. */
        if (progressed) break;
        if (sched_give_way(ctx, now)) break;
        link = &coll->next;
    }
    return progressed;
}

void dfccl_sched_init(dfccl_sched_t *s, const dfccl_context_t *ctx)
{
    pthread_mutex_init(&s->lock, NULL);
    s->active = NULL;
    s->timeout_ns = (uint64_t)(ctx->config.timeout_sec * 1e9);
    dfccl_config_budgets(&ctx->config, &s->budgets);
    s->stalled_since = 0;
    s->deadline_ns = 0;
    s->drivers = 0;
    s->driven = 0;
}

void dfccl_sched_fini(dfccl_sched_t *s)
{
    pthread_mutex_destroy(&s->lock);
}

int dfccl_sched_round(dfccl_context_t *ctx)
{
    dfccl_sched_t *s = &dfccl_host_ctx(ctx)->sched;
    dfccl_net_t *net = __atomic_load_n(&ctx->net, __ATOMIC_ACQUIRE);
    int moved = 0;

    if (dfccl_watch_dump_requested()) dfccl_watch_dump(s->active);
    /* sends to other nodes still under way keep the scheduler going: the
     * peers wait for them though our side of the collective ended */
    if (s->active == NULL && dfccl_net_busy(net)) moved = dfccl_net_progress(net);
    if (s->active == NULL || __atomic_load_n(&dfccl_host_ctx(ctx)->submit.pending, __ATOMIC_ACQUIRE))
        sched_admit(ctx, dfccl_queue_take_all(&dfccl_host_ctx(ctx)->submit));
    if (s->active != NULL && sched_pass(ctx)) moved = 1;
    return moved;
}

int dfccl_sched_idle(dfccl_context_t *ctx)
{
    return dfccl_host_ctx(ctx)->sched.active == NULL &&
           !__atomic_load_n(&dfccl_host_ctx(ctx)->submit.pending, __ATOMIC_ACQUIRE) &&
           !dfccl_net_busy(__atomic_load_n(&ctx->net, __ATOMIC_ACQUIRE));
}

void dfccl_sched_drain(dfccl_context_t *ctx)
{
    dfccl_sched_t *s = &dfccl_host_ctx(ctx)->sched;

    sched_admit(ctx, dfccl_queue_take_all(&dfccl_host_ctx(ctx)->submit));
    while (s->active != NULL) sched_finish(ctx, &s->active, DFCCL_ERR_SHUTDOWN);
}

void dfccl_sched_backoff(dfccl_sched_t *s, int moved)
{
    uint64_t now;

    if (moved) {
        s->stalled_since = 0;
        return;
    }
    now = dfccl_now_ns();
    if (s->stalled_since == 0) s->stalled_since = now;
    dfccl_wait_pause(now - s->stalled_since);
}
