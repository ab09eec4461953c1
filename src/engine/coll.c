/*
 * coll.c - what every backend does with a posted collective: the arguments
 * checked, the generic part of its record, its place in the communicator's
 * order, and its completion handed to the caller.
 */
#include <stdlib.h>
#include <string.h>
#include "engine/internal.h"
#include "util/log.h"

dfccl_status_t dfccl_coll_check_args(const dfccl_comm_t *comm, const dfccl_coll_args_t *a,
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

void dfccl_call_init(dfccl_call_t *call, const dfccl_coll_args_t *args, size_t total)
{
    call->type        = args->type;
    call->priority    = args->priority;
    call->user        = args->user;
    call->callback    = args->callback;
    call->total_count = total;
}

void dfccl_coll_enter(dfccl_comm_t *comm, dfccl_call_t *coll, const dfccl_coll_args_t *args)
{
    coll->seq = __atomic_fetch_add(&comm->next_seq, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&comm->refs, 1, __ATOMIC_ACQ_REL);
    coll->comm = comm;
    dfccl_debug("post %s #%llu on %s comm %#llx: %zu x %s op %s%s, priority %d",
                dfccl_coll_type_name(args->type), (unsigned long long)coll->seq, comm->ops->name,
                (unsigned long long)comm->key, coll->total_count, dfccl_dtype_name(args->dtype),
                dfccl_op_name(args->op), args->sendbuf == DFCCL_IN_PLACE ? " in place" : "",
                args->priority);
}

void dfccl_coll_complete(dfccl_context_t *ctx, const dfccl_call_t *coll, dfccl_status_t status)
{
    if (coll->callback != NULL) {
        coll->callback(coll->user, status);
        return;
    }
    if (dfccl_cqueue_push(&ctx->complete, coll->user, status) != DFCCL_OK)
        dfccl_error("completion of %s #%llu lost: out of memory", dfccl_coll_type_name(coll->type),
                    (unsigned long long)coll->seq);
}
