/*
 * daemon.c - who runs the host scheduler (sched.c): the daemon thread, for
 * asynchronous progress, and callers that wait for a host collective
 * (dfccl_context_drive), for latency (host_sched.h says why both).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include "util/clock.h"
#include "backends/host/host.h"
#include "util/exit_park.h"
#include "util/log.h"
#include "core/wait_policy.h"

/* 1 while a caller drives the scheduler or did so since the daemon's last
 * look (*seen: the turns it counted then; a clock read per turn would cost
 * callers more). */
static int sched_driven(dfccl_sched_t *s, uint64_t *seen)
{
    uint64_t driven = __atomic_load_n(&s->driven, __ATOMIC_ACQUIRE);
    int changed = driven != *seen;

    *seen = driven;
    return changed || __atomic_load_n(&s->drivers, __ATOMIC_ACQUIRE) > 0;
}

void *dfccl_daemon_main(void *arg)
{
    dfccl_context_t *ctx = arg;
    dfccl_sched_t *s = &dfccl_host_ctx(ctx)->sched;
    dfccl_queue_t *sq = &dfccl_host_ctx(ctx)->submit;
    uint64_t seen = __atomic_load_n(&s->driven, __ATOMIC_ACQUIRE);

    for (;;) {
        if (__atomic_load_n(&sq->stop, __ATOMIC_ACQUIRE)) break;
        /* the process exits under us: UCX (and CUDA) go next */
        if (dfccl_exiting()) dfccl_exit_park();
        if (sched_driven(s, &seen)) {
            /* a waiting caller runs the scheduler: look again after the
             * linger (submissions do not wake this nap while callers drive) */
            dfccl_queue_nap(sq, DFCCL_WAIT_DRIVER_LINGER_NS);
            continue;
        }
        pthread_mutex_lock(&s->lock);
        int idle = dfccl_sched_idle(ctx), moved = 0;
        if (!idle) {
            moved = dfccl_sched_round(ctx);
            dfccl_sched_backoff(s, moved);
        }
        pthread_mutex_unlock(&s->lock);
        if (!idle) continue;
        /* Idle: poll for new work a little (back-to-back collectives then
         * skip a thread wake-up), then sleep on the submission queue. */
        uint64_t idle_since = dfccl_now_ns();
        while (!__atomic_load_n(&sq->pending, __ATOMIC_ACQUIRE) &&
               !__atomic_load_n(&sq->stop, __ATOMIC_ACQUIRE) &&
               dfccl_now_ns() - idle_since < DFCCL_WAIT_IDLE_SPIN_NS)
            sched_yield();
        if (dfccl_watch_dump_requested()) dfccl_watch_dump(NULL);
        /* callers that drive while it sleeps keep it back only while they do */
        seen = __atomic_load_n(&s->driven, __ATOMIC_ACQUIRE);
        dfccl_queue_wait(sq, DFCCL_WAIT_IDLE_SLEEP_NS);
    }
    /* shutting down: nothing still queued or running will complete */
    pthread_mutex_lock(&s->lock);
    dfccl_sched_drain(ctx);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int dfccl_context_drive(dfccl_context_t *ctx, uint64_t max_ns)
{
    dfccl_sched_t *s;
    int ready;

    if (ctx == NULL || !ctx->config.caller_drives) return -1;
    if (__atomic_load_n(&ctx->complete.used, __ATOMIC_ACQUIRE) > 0) return 1;
    s = &dfccl_host_ctx(ctx)->sched;
    /* the daemon thread gives the scheduler up at its next look */
    __atomic_add_fetch(&s->drivers, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_lock(&s->lock);
    s->deadline_ns = dfccl_now_ns() + max_ns;
    for (;;) {
        int moved = dfccl_sched_round(ctx);
        if (moved) s->stalled_since = 0;   /* the next wait starts short */
        ready = __atomic_load_n(&ctx->complete.used, __ATOMIC_ACQUIRE) > 0;
        if (ready || dfccl_now_ns() >= s->deadline_ns || dfccl_sched_idle(ctx)) break;
        dfccl_sched_backoff(s, moved);
    }
    s->deadline_ns = 0;
    int left = !dfccl_sched_idle(ctx);
    pthread_mutex_unlock(&s->lock);
    __atomic_add_fetch(&s->driven, 1, __ATOMIC_RELEASE);
    __atomic_sub_fetch(&s->drivers, 1, __ATOMIC_ACQ_REL);
    /* work left for the daemon, which may have gone to sleep before this
     * caller began: it must not sleep on it */
    if (left) dfccl_queue_kick(&dfccl_host_ctx(ctx)->submit);
    return ready;
}

/* The host backend's part of a context: the queues, the scheduler and the
 * daemon thread that runs it (backend_ops.h). */
dfccl_status_t dfccl_host_context_open(dfccl_context_t *ctx, void **state)
{
    dfccl_host_ctx_t *hc = calloc(1, sizeof(*hc));
    int rc;

    if (hc == NULL) return DFCCL_ERR_NO_MEMORY;
    dfccl_queue_init(&hc->submit);
    dfccl_sched_init(&hc->sched, ctx);
    /* the daemon reads its state through the context: set before it starts */
    ctx->backend_state[DFCCL_BACKEND_HOST] = hc;
    rc = pthread_create(&hc->daemon, NULL, dfccl_daemon_main, ctx);
    if (rc != 0) {
        dfccl_error("cannot start the engine daemon thread: %s", strerror(rc));
        ctx->backend_state[DFCCL_BACKEND_HOST] = NULL;
        dfccl_sched_fini(&hc->sched);
        dfccl_queue_fini(&hc->submit);
        free(hc);
        return DFCCL_ERR_SYSTEM;
    }
    hc->daemon_exit = dfccl_exit_guard_add(dfccl_queue_wake_at_exit, &hc->submit);
    *state = hc;
    return DFCCL_OK;
}

void dfccl_host_context_close(dfccl_context_t *ctx, void *state)
{
    dfccl_host_ctx_t *hc = state;

    (void)ctx;
    dfccl_queue_stop(&hc->submit);
    pthread_join(hc->daemon, NULL);
    dfccl_exit_guard_remove(hc->daemon_exit);
    dfccl_sched_fini(&hc->sched);
    dfccl_queue_fini(&hc->submit);
    free(hc);
}
