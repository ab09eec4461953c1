/* context.c - the per-process engine: lifecycle, posting to a communicator's
 * backend, completions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/internal.h"
#include "util/log.h"
#include "core/wait_policy.h"

uint64_t dfccl_wait_spin_ns = DFCCL_WAIT_SPIN_NS;

dfccl_status_t dfccl_context_create(const dfccl_config_t *config, dfccl_context_t **context_p)
{
    dfccl_context_t *ctx;
    int rc;

    if (context_p == NULL) return DFCCL_ERR_INVALID_PARAM;
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) return DFCCL_ERR_NO_MEMORY;
    if (dfccl_config_adopt(config, &ctx->config) != DFCCL_OK ||
        dfccl_config_check(&ctx->config, DFCCL_CONFIG_ENGINE) != DFCCL_OK) {
        free(ctx);
        return DFCCL_ERR_INVALID_PARAM;
    }
    /* The GPU side starts on first use and refuses such knobs then; naming
     * them here already says which knob it will be. */
    (void)dfccl_config_check(&ctx->config, DFCCL_CONFIG_GPU);
    /* a slot must hold at least one element of the widest type, and whole
     * elements of every type (slot_bytes' lower bound is such a multiple) */
    ctx->config.slot_bytes &= ~(size_t)15;
    dfccl_log_level = ctx->config.verbose;
    __atomic_store_n(&dfccl_wait_spin_ns, ctx->config.oversubscribed ? 0 : DFCCL_WAIT_SPIN_NS,
                     __ATOMIC_RELAXED);
    /* read now, not kept: the caller's string need not outlive this call */
    if (dfccl_plan_set_load(ctx->config.plan_dir, &ctx->plans) != DFCCL_OK) {
        free(ctx);
        return DFCCL_ERR_NO_MEMORY;
    }
    ctx->config.plan_dir = NULL;
    dfccl_watch_install_dump_signal();
    pthread_mutex_init(&ctx->gpu_lock, NULL);
    pthread_mutex_init(&ctx->net_lock, NULL);
    dfccl_queue_init(&ctx->submit);
    dfccl_cqueue_init(&ctx->complete);
    dfccl_sched_init(&ctx->sched, ctx);
    rc = pthread_create(&ctx->daemon, NULL, dfccl_daemon_main, ctx);
    if (rc != 0) {
        dfccl_error("cannot start the engine daemon thread: %s", strerror(rc));
        dfccl_sched_fini(&ctx->sched);
        dfccl_cqueue_fini(&ctx->complete);
        dfccl_queue_fini(&ctx->submit);
        pthread_mutex_destroy(&ctx->gpu_lock);
        pthread_mutex_destroy(&ctx->net_lock);
        dfccl_plan_set_free(&ctx->plans);
        free(ctx);
        return DFCCL_ERR_SYSTEM;
    }
    dfccl_info("engine started: slots %u x %zu bytes, timeout %.1f s, %s", ctx->config.fifo_slots,
               ctx->config.slot_bytes, ctx->config.timeout_sec,
               ctx->config.preempt ? "preemptive" : "serial");
    *context_p = ctx;
    return DFCCL_OK;
}

void dfccl_context_destroy(dfccl_context_t *ctx)
{
    if (ctx == NULL) return;
    dfccl_streams_stop(ctx);
    dfccl_gpu_destroy(ctx);
    dfccl_streams_free(ctx);
    dfccl_queue_stop(&ctx->submit);
    pthread_join(ctx->daemon, NULL);
    dfccl_net_close(ctx->net);   /* after the daemon: nobody pumps any more */
    dfccl_sched_fini(&ctx->sched);
    dfccl_cqueue_fini(&ctx->complete);
    dfccl_queue_fini(&ctx->submit);
    pthread_mutex_destroy(&ctx->gpu_lock);
    pthread_mutex_destroy(&ctx->net_lock);
    dfccl_plan_set_free(&ctx->plans);
    free(ctx);
}

dfccl_status_t dfccl_coll_post(dfccl_comm_t *comm, const dfccl_coll_args_t *args)
{
    dfccl_status_t status;

    if (comm == NULL || args == NULL) return DFCCL_ERR_INVALID_PARAM;
    if ((status = dfccl_comm_usable(comm)) != DFCCL_OK) return status;
    return comm->ops->post(comm, args);
}

dfccl_status_t dfccl_coll_run(dfccl_comm_t *comm, const dfccl_coll_args_t *args)
{
    dfccl_status_t status;

    if (comm == NULL || args == NULL) return DFCCL_ERR_INVALID_PARAM;
    if ((status = dfccl_comm_usable(comm)) != DFCCL_OK) return status;
    if (comm->ops->run != NULL) return comm->ops->run(comm, args);
    status = comm->ops->post(comm, args);
    return status == DFCCL_OK ? DFCCL_INPROGRESS : status;
}

int dfccl_context_poll(dfccl_context_t *ctx, dfccl_completion_t *out, int max)
{
    dfccl_gpu_poll(ctx);
    return dfccl_cqueue_poll(&ctx->complete, out, max);
}

int dfccl_context_wait(dfccl_context_t *ctx, uint64_t timeout_ns)
{
    return dfccl_cqueue_wait(&ctx->complete, timeout_ns);
}
