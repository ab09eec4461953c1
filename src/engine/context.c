/* context.c - the per-process engine: lifecycle (with every backend's part),
 * posting to a communicator's backend, completions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/internal.h"
#include "engine/stage.h"
#include "util/log.h"
#include "core/wait_policy.h"

uint64_t dfccl_wait_spin_ns = DFCCL_WAIT_SPIN_NS;

/* Closes the backends opened so far, last first. */
static void context_close_backends(dfccl_context_t *ctx)
{
    for (int i = DFCCL_BACKEND_COUNT - 1; i >= 0; i--)
        if (ctx->backend_state[i] != NULL) {
            ctx->backends[i]->context_close(ctx, ctx->backend_state[i]);
            ctx->backend_state[i] = NULL;
        }
}

dfccl_status_t dfccl_context_open(const dfccl_config_t *config,
                                  const dfccl_backend_ops_t *const *backends,
                                  dfccl_context_t **context_p)
{
    dfccl_context_t *ctx;
    dfccl_status_t status = DFCCL_OK;

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
    pthread_mutex_init(&ctx->net_lock, NULL);
    dfccl_cqueue_init(&ctx->complete);
    for (int i = 0; i < DFCCL_BACKEND_COUNT && status == DFCCL_OK; i++) {
        void *state = NULL;
        ctx->backends[i] = backends[i];
        status = backends[i]->context_open(ctx, &state);
        if (status == DFCCL_OK) ctx->backend_state[i] = state;
    }
    if (status != DFCCL_OK) {
        context_close_backends(ctx);
        dfccl_cqueue_fini(&ctx->complete);
        pthread_mutex_destroy(&ctx->net_lock);
        dfccl_plan_set_free(&ctx->plans);
        free(ctx);
        return status;
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
    context_close_backends(ctx);
    dfccl_net_close(ctx->net);   /* after the backends' threads: nobody pumps any more */
    dfccl_cqueue_fini(&ctx->complete);
    pthread_mutex_destroy(&ctx->net_lock);
    dfccl_plan_set_free(&ctx->plans);
    free(ctx);
}

/* The call as its backend takes it: args, or (staged) args on a block of
 * the backend's memory, the input copied in (*stage_p, else NULL). */
static dfccl_status_t coll_stage(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                 dfccl_coll_args_t *staged, dfccl_stage_t **stage_p)
{
    dfccl_status_t status;
    bool needed;

    *stage_p = NULL;
    if ((status = dfccl_stage_needed(comm, args, &needed)) != DFCCL_OK) return status;
    if (!needed) {
        *staged = *args;
        return DFCCL_OK;
    }
    if ((status = dfccl_comm_usable(comm)) != DFCCL_OK &&
        __atomic_load_n(&comm->setup_status, __ATOMIC_ACQUIRE) != DFCCL_INPROGRESS)
        return status;
    return dfccl_stage_open(comm, args, false, staged, stage_p);
}

dfccl_status_t dfccl_coll_post(dfccl_comm_t *comm, const dfccl_coll_args_t *args)
{
    dfccl_coll_args_t call;
    dfccl_stage_t *stage;
    dfccl_status_t status;

    if (comm == NULL || args == NULL) return DFCCL_ERR_INVALID_PARAM;
    if ((status = coll_stage(comm, args, &call, &stage)) != DFCCL_OK) return status;
    status = dfccl_comm_queue_post(comm, &call);
    if (status == DFCCL_INPROGRESS) return DFCCL_OK;   /* queued until the set-up ends */
    if (status == DFCCL_OK && (status = dfccl_comm_usable(comm)) == DFCCL_OK)
        status = comm->ops->post(comm, &call);
    if (status != DFCCL_OK) dfccl_stage_close(stage);
    return status;
}

dfccl_status_t dfccl_coll_run(dfccl_comm_t *comm, const dfccl_coll_args_t *args)
{
    dfccl_status_t status;
    bool staged;

    if (comm == NULL || args == NULL) return DFCCL_ERR_INVALID_PARAM;
    if ((status = dfccl_stage_needed(comm, args, &staged)) != DFCCL_OK) return status;
    if (staged) {   /* its result is copied out by the polling thread: a post */
        status = dfccl_coll_post(comm, args);
        return status == DFCCL_OK ? DFCCL_INPROGRESS : status;
    }
    status = dfccl_comm_queue_post(comm, args);
    if (status != DFCCL_OK) return status;   /* DFCCL_INPROGRESS: queued */
    if ((status = dfccl_comm_usable(comm)) != DFCCL_OK) return status;
    if (comm->ops->run != NULL) return comm->ops->run(comm, args);
    status = comm->ops->post(comm, args);
    return status == DFCCL_OK ? DFCCL_INPROGRESS : status;
}

int dfccl_context_poll(dfccl_context_t *ctx, dfccl_completion_t *out, int max)
{
    dfccl_cqueue_entry_t popped[16];
    int n = 0, got;

    for (int i = 0; i < DFCCL_BACKEND_COUNT; i++)
        if (ctx->backends[i]->poll != NULL) ctx->backends[i]->poll(ctx);
    do {
        got = dfccl_cqueue_poll(&ctx->complete, popped, max - n < 16 ? max - n : 16);
        for (int i = 0; i < got; i++) {
            if (popped[i].stage == NULL) out[n++] = popped[i].done;
            else if (dfccl_stage_finish(popped[i].stage, popped[i].done.status, &out[n])) n++;
        }
    } while (got > 0 && n < max);
    return n;
}

int dfccl_context_wait(dfccl_context_t *ctx, uint64_t timeout_ns)
{
    return dfccl_cqueue_wait(&ctx->complete, timeout_ns);
}

dfccl_status_t dfccl_coll_elsewhere(dfccl_comm_t *comm, dfccl_coll_type_t type, uint64_t bytes)
{
    if (comm == NULL || (unsigned)type >= DFCCL_COLL_TYPE_COUNT) return DFCCL_ERR_INVALID_PARAM;
    if (comm->ops->outside == NULL) return DFCCL_OK;
    return comm->ops->outside(comm, type, bytes);
}
