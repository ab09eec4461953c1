/* context.c - the per-process engine: lifecycle, posting, completions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "log.h"

dfccl_status_t dfccl_context_create(const dfccl_config_t *config, dfccl_context_t **context_p)
{
    dfccl_context_t *ctx;
    int rc;

    if (context_p == NULL) return DFCCL_ERR_INVALID_PARAM;
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) return DFCCL_ERR_NO_MEMORY;
    if (config) ctx->config = *config;
    else dfccl_config_init(&ctx->config);
    if (dfccl_config_check(&ctx->config, DFCCL_CONFIG_ENGINE) != DFCCL_OK) {
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
    dfccl_watch_install_dump_signal();
    pthread_mutex_init(&ctx->gpu_lock, NULL);
    dfccl_queue_init(&ctx->submit);
    dfccl_cqueue_init(&ctx->complete);
    rc = pthread_create(&ctx->daemon, NULL, dfccl_daemon_main, ctx);
    if (rc != 0) {
        dfccl_error("cannot start the engine daemon thread: %s", strerror(rc));
        dfccl_cqueue_fini(&ctx->complete);
        dfccl_queue_fini(&ctx->submit);
        pthread_mutex_destroy(&ctx->gpu_lock);
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
    dfccl_gpu_destroy(ctx);
    dfccl_queue_stop(&ctx->submit);
    pthread_join(ctx->daemon, NULL);
    dfccl_cqueue_fini(&ctx->complete);
    dfccl_queue_fini(&ctx->submit);
    pthread_mutex_destroy(&ctx->gpu_lock);
    free(ctx);
}

static dfccl_status_t coll_check_args(const dfccl_comm_t *comm, const dfccl_coll_args_t *a,
                                      size_t *total)
{
    size_t n = 0;

    if ((unsigned)a->dtype >= DFCCL_DTYPE_COUNT) return DFCCL_ERR_INVALID_PARAM;
    switch (a->type) {
    case DFCCL_COLL_ALLREDUCE:
        if (!dfccl_op_supported(a->op, a->dtype)) return DFCCL_ERR_UNSUPPORTED;
        n = a->count;
        break;
    case DFCCL_COLL_ALLGATHER:
        n = a->count * (size_t)comm->size;
        break;
    case DFCCL_COLL_REDUCE_SCATTER:
        if (!dfccl_op_supported(a->op, a->dtype)) return DFCCL_ERR_UNSUPPORTED;
        if (a->counts == NULL) return DFCCL_ERR_INVALID_PARAM;
        for (int i = 0; i < comm->size; i++) n += a->counts[i];
        break;
    default:
        return DFCCL_ERR_INVALID_PARAM;
    }
    if (n > 0 && (a->recvbuf == NULL || a->sendbuf == NULL)) return DFCCL_ERR_INVALID_PARAM;
    *total = n;
    return DFCCL_OK;
}

/* A host communicator that broke here, or whose peer broke before the
 * collective about to be posted: the call fails at once (so that callers
 * that retry, as Open MPI's context-id agreement does, see an error rather
 * than a request that fails). A peer's failure breaks it here too. */
dfccl_status_t dfccl_comm_post_check(dfccl_comm_t *comm)
{
    uint64_t seq = __atomic_load_n(&comm->next_seq, __ATOMIC_RELAXED);
    char line[DFCCL_BOARD_WHY + 96];

    if (__atomic_load_n(&comm->broken, __ATOMIC_ACQUIRE)) return DFCCL_ERR_BROKEN;
    if (dfccl_watch_peer_broke(comm, seq, line, sizeof(line))) {
        dfccl_error("rank %d of comm %#llx: collective #%llu fails at once: %s", comm->rank,
                    (unsigned long long)comm->key, (unsigned long long)seq, line);
        dfccl_comm_break(comm, seq, DFCCL_ERR_PEER_FAILED, line);
        return DFCCL_ERR_PEER_FAILED;
    }
    return DFCCL_OK;
}

uint64_t dfccl_coll_post_marker(dfccl_comm_t *comm, dfccl_ident_t *ident)
{
    dfccl_coll_t *marker = calloc(1, sizeof(*marker));
    uint64_t seq = __atomic_fetch_add(&comm->next_seq, 1, __ATOMIC_RELAXED);

    ident->seq1 = seq + 1;
    dfccl_board_post(comm->board, seq, ident);
    if (marker == NULL) {   /* its place must still be taken */
        dfccl_error("rank %d of comm %#llx: out of memory for the place of #%llu: the"
                    " communicator cannot be used further", comm->rank,
                    (unsigned long long)comm->key, (unsigned long long)seq);
        dfccl_comm_break(comm, seq, DFCCL_ERR_NO_MEMORY, "out of memory");
        return seq;
    }
    marker->marker = 1;
    marker->type = (dfccl_coll_type_t)ident->type;
    marker->seq = seq;
    marker->ident = *ident;
    __atomic_add_fetch(&comm->refs, 1, __ATOMIC_ACQ_REL);
    marker->comm = comm;
    dfccl_queue_push(&comm->context->submit, marker);
    return seq;
}

/* A call that fails here still takes its place in the communicator's
 * order: its peers, which may have posted theirs, find it on our board and
 * fail theirs instead of pairing it with our next call. */
static dfccl_status_t coll_post_rejected(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                         dfccl_status_t status)
{
    dfccl_ident_t ident;
    char what[160];

    dfccl_ident_make(&ident, args, comm->size, status);
    dfccl_coll_post_marker(comm, &ident);
    dfccl_ident_describe(&ident, what, sizeof(what));
    dfccl_info("rank %d of comm %#llx: %s", comm->rank, (unsigned long long)comm->key, what);
    return status;
}

dfccl_status_t dfccl_coll_post(dfccl_comm_t *comm, const dfccl_coll_args_t *args)
{
    dfccl_context_t *ctx;
    dfccl_coll_t *coll;
    dfccl_status_t status;
    uint32_t max_steps;
    uint64_t max_block;
    size_t total;
    int in_place;

    if (comm == NULL || args == NULL) return DFCCL_ERR_INVALID_PARAM;
    if (comm->gpu == NULL) {
        status = dfccl_comm_post_check(comm);
        if (status != DFCCL_OK) return status;
    }
    status = coll_check_args(comm, args, &total);
    if (status != DFCCL_OK)
        return comm->gpu == NULL && (unsigned)args->type < DFCCL_COLL_TYPE_COUNT
                   ? coll_post_rejected(comm, args, status) : status;
    ctx = comm->context;
    max_steps = dfccl_plan_max_steps(comm->size);
    coll = calloc(1, sizeof(*coll) + max_steps * sizeof(dfccl_step_t));
    if (coll == NULL) return DFCCL_ERR_NO_MEMORY;
    in_place = args->sendbuf == DFCCL_IN_PLACE;
    status = dfccl_plan_ring(args->type, comm->rank, comm->size, in_place, args->count,
                             args->counts, coll->steps, &coll->exec.nsteps, &max_block);
    if (status != DFCCL_OK) {
        free(coll);
        return status;
    }
    coll->type        = args->type;
    coll->priority    = args->priority;
    coll->user        = args->user;
    coll->total_count = total;
    coll->budget_ns   = ctx->config.budget_ns;
    coll->seq         = __atomic_fetch_add(&comm->next_seq, 1, __ATOMIC_RELAXED);
    coll->exec.steps       = coll->steps;
    coll->exec.sendbuf     = in_place ? NULL : (char *)args->sendbuf;
    coll->exec.recvbuf     = (char *)args->recvbuf;
    coll->exec.dtype       = args->dtype;
    coll->exec.op          = args->op;
    coll->exec.esize       = dfccl_dtype_size(args->dtype);
    coll->exec.slice_elems = ctx->config.slot_bytes / coll->exec.esize;
    coll->exec.chunk_elems = dfccl_plan_chunk_elems(ctx->config.slot_bytes, ctx->config.fifo_slots,
                                                    coll->exec.esize);
    coll->exec.nrounds     = (max_block + coll->exec.chunk_elems - 1) / coll->exec.chunk_elems;
    coll->exec.recv_fifo   = &comm->recv_fifo;
    coll->exec.send_fifo   = &comm->send_fifo;
    __atomic_add_fetch(&comm->refs, 1, __ATOMIC_ACQ_REL);
    coll->comm = comm;
    /* before handing it over: once submitted, coll may complete and go */
    dfccl_debug("post %s #%llu on %scomm %#llx: %zu x %s op %s%s, priority %d",
                dfccl_coll_type_name(args->type), (unsigned long long)coll->seq,
                comm->gpu != NULL ? "GPU " : "", (unsigned long long)comm->key, total,
                dfccl_dtype_name(args->dtype), dfccl_op_name(args->op),
                in_place ? " in place" : "", args->priority);
    if (comm->gpu != NULL) {
        if (comm->broken) status = DFCCL_ERR_TIMEOUT;   /* see the earlier failure's diagnosis */
        else status = dfccl_gpu_submit(coll, args);
        if (status != DFCCL_OK) {
            dfccl_comm_release(comm);
            free(coll);
            return status;
        }
        dfccl_stats_add_posted(args->type);
        return DFCCL_OK;
    }
    /* what the peer receiving from us checks before any data moves */
    dfccl_ident_make(&coll->ident, args, comm->size, DFCCL_OK);
    coll->ident.seq1 = coll->seq + 1;
    dfccl_board_post(comm->board, coll->seq, &coll->ident);
    coll->checked = comm->size == 1;
    dfccl_stats_add_posted(args->type);
    dfccl_queue_push(&ctx->submit, coll);
    return DFCCL_OK;
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
