/*
 * stage.c - staged calls (stage.h). MPI codes may pass host buffers on a
 * communicator whose peers pass device buffers (or the reverse), and all
 * ranks must still take one path: such a rank's call runs on a block of the
 * path's memory. The block is taken from the communicator's backend (the
 * GPU's keeps device blocks for reuse) or, for host memory, from the C
 * library; copies go through whichever backend can copy device memory.
 *
 * The result is copied out by the polling thread, never by the thread that
 * completes the collective: that thread is a backend's (the host daemon,
 * the GPU side's proxy), and a copy there would hold up every other
 * collective it carries.
 */
#include <stdlib.h>
#include <string.h>
#include "engine/internal.h"
#include "engine/stage.h"
#include "util/log.h"

#define DFCCL_STAGE_ALIGN 64   /* vector movers want aligned parts; 64 is a cache line */

struct dfccl_stage {
    dfccl_context_t           *ctx;
    const dfccl_backend_ops_t *holder;   /* whose memory the block is */
    const dfccl_backend_ops_t *copier;
    dfccl_coll_type_t          type;
    char                      *block;
    const void                *in_src;   /* the caller's input ... */
    void                      *in_dst;   /* ... goes here */
    size_t                     in_bytes;
    const void                *out;      /* the result on the block ... */
    void                      *user_out; /* ... goes here */
    size_t                     out_bytes;
    void                      *user;     /* the caller's cookie and callback */
    void                     (*callback)(void *user, dfccl_status_t status);
    bool                       kept;     /* a prepared call's */
    int                        pending;  /* kept: a run is posted (atomic) */
};

static size_t stage_align(size_t bytes)
{
    return (bytes + DFCCL_STAGE_ALIGN - 1) & ~(size_t)(DFCCL_STAGE_ALIGN - 1);
}

static const dfccl_backend_ops_t *stage_copier(const dfccl_context_t *ctx)
{
    for (int i = 0; i < DFCCL_BACKEND_COUNT; i++)
        if (ctx->backends[i] != NULL && ctx->backends[i]->copy != NULL) return ctx->backends[i];
    return NULL;
}

dfccl_status_t dfccl_stage_needed(const dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                  bool *needed)
{
    if ((unsigned)args->buffers > DFCCL_BUFFERS_MIXED) return DFCCL_ERR_INVALID_PARAM;
    *needed = args->buffers != DFCCL_BUFFERS_NATIVE && args->buffers != comm->ops->memory;
    return DFCCL_OK;
}

/* Completion of a staged run, on the backend's thread: to the polling thread. */
static void stage_done(void *arg, dfccl_status_t status)
{
    dfccl_stage_t *stage = arg;

    if (dfccl_cqueue_push_stage(&stage->ctx->complete, stage, status) != DFCCL_OK)
        dfccl_error("completion of a staged %s lost: out of memory",
                    dfccl_coll_type_name(stage->type));
}

static dfccl_status_t stage_copy(const dfccl_stage_t *stage, void *dst, const void *src,
                                 size_t bytes)
{
    if (bytes == 0) return DFCCL_OK;
    return stage->copier->copy(stage->ctx, dst, src, bytes);
}

static void stage_free_block(dfccl_stage_t *stage)
{
    if (stage->holder->stage_alloc != NULL) stage->holder->stage_free(stage->ctx, stage->block);
    else free(stage->block);
}

/* Where the input and the result lie on the block, and its size. In place
 * stays in place: the path's algorithm may depend on it, and it must be
 * the one the other ranks chose. */
static void stage_layout(dfccl_stage_t *stage, const dfccl_comm_t *comm,
                         const dfccl_coll_args_t *args, size_t *in_at, size_t *out_at,
                         size_t *bytes)
{
    size_t esize = dfccl_dtype_size(args->dtype), block, all = 0, out_bytes;
    bool in_place = args->sendbuf == DFCCL_IN_PLACE;

    *in_at = 0;
    stage->in_src = in_place ? args->recvbuf : args->sendbuf;
    switch (args->type) {
    case DFCCL_COLL_ALLREDUCE:
        stage->in_bytes = out_bytes = stage->out_bytes = args->count * esize;
        break;
    case DFCCL_COLL_ALLGATHER:   /* our block in; in place, to its place */
        block = args->count * esize;
        stage->in_bytes = block;
        out_bytes = stage->out_bytes = (size_t)comm->size * block;
        if (in_place) {
            *in_at = (size_t)comm->rank * block;
            stage->in_src = (const char *)args->recvbuf + *in_at;
        }
        break;
    default:   /* reduce-scatter: all in, our block out (first, in place) */
        for (int r = 0; r < comm->size; r++) all += args->counts[r] * esize;
        stage->in_bytes = all;
        stage->out_bytes = args->counts[comm->rank] * esize;
        out_bytes = in_place ? all : stage->out_bytes;
        break;
    }
    *out_at = in_place ? 0 : stage_align(stage->in_bytes);
    *bytes = *out_at + out_bytes;
}

dfccl_status_t dfccl_stage_open(dfccl_comm_t *comm, const dfccl_coll_args_t *args, bool kept,
                                dfccl_coll_args_t *staged, dfccl_stage_t **stage_p)
{
    dfccl_context_t *ctx = comm->context;
    size_t total, in_at, out_at, bytes;
    dfccl_status_t status;
    dfccl_stage_t *stage;

    if ((status = dfccl_coll_check_args(comm, args, &total)) != DFCCL_OK) return status;
    if ((stage = calloc(1, sizeof(*stage))) == NULL) return DFCCL_ERR_NO_MEMORY;
    stage->ctx = ctx;
    stage->holder = comm->ops;
    stage->copier = stage_copier(ctx);
    stage->type = args->type;
    stage->kept = kept;
    stage->user = args->user;
    stage->callback = args->callback;
    stage->user_out = args->recvbuf;
    if (stage->copier == NULL) {
        dfccl_error("%s on %s comm %#llx: its buffers are not of the memory its backend "
                    "carries, and this build cannot copy device memory",
                    dfccl_coll_type_name(args->type), comm->ops->name,
                    (unsigned long long)comm->key);
        free(stage);
        return DFCCL_ERR_UNSUPPORTED;
    }
    stage_layout(stage, comm, args, &in_at, &out_at, &bytes);
    if (comm->ops->stage_alloc != NULL) {
        status = comm->ops->stage_alloc(ctx, bytes, (void **)&stage->block);
    } else {
        stage->block = aligned_alloc(DFCCL_STAGE_ALIGN, stage_align(bytes > 0 ? bytes : 1));
        status = stage->block != NULL ? DFCCL_OK : DFCCL_ERR_NO_MEMORY;
    }
    if (status != DFCCL_OK) {
        dfccl_error("%s on %s comm %#llx: cannot stage %zu bytes: %s",
                    dfccl_coll_type_name(args->type), comm->ops->name,
                    (unsigned long long)comm->key, bytes, dfccl_status_string(status));
        free(stage);
        return status;
    }
    stage->in_dst = stage->block + in_at;
    stage->out = stage->block + out_at;   /* in-place reduce-scatter: our block comes first */
    if (!kept && (status = stage_copy(stage, stage->in_dst, stage->in_src, stage->in_bytes)) !=
                     DFCCL_OK) {
        dfccl_stage_close(stage);
        return status;
    }
    *staged = *args;
    if (args->sendbuf != DFCCL_IN_PLACE) staged->sendbuf = stage->block;
    staged->recvbuf = stage->block + out_at;
    staged->buffers = DFCCL_BUFFERS_NATIVE;
    staged->user = stage;
    staged->callback = stage_done;
    *stage_p = stage;
    return DFCCL_OK;
}

dfccl_status_t dfccl_stage_start(dfccl_stage_t *stage, void *user)
{
    dfccl_status_t status;

    if (__atomic_exchange_n(&stage->pending, 1, __ATOMIC_ACQ_REL)) return DFCCL_ERR_INVALID_PARAM;
    stage->user = user;
    status = stage_copy(stage, stage->in_dst, stage->in_src, stage->in_bytes);
    if (status != DFCCL_OK) dfccl_stage_abandon(stage);
    return status;
}

void dfccl_stage_abandon(dfccl_stage_t *stage)
{
    __atomic_store_n(&stage->pending, 0, __ATOMIC_RELEASE);
}

void dfccl_stage_close(dfccl_stage_t *stage)
{
    if (stage == NULL) return;
    stage_free_block(stage);
    free(stage);
}

bool dfccl_stage_finish(dfccl_stage_t *stage, dfccl_status_t status, dfccl_completion_t *done)
{
    void *user = stage->user;
    void (*callback)(void *, dfccl_status_t) = stage->callback;

    if (status == DFCCL_OK)
        status = stage_copy(stage, stage->user_out, stage->out, stage->out_bytes);
    if (stage->kept) dfccl_stage_abandon(stage);   /* ready for the next start */
    else dfccl_stage_close(stage);
    if (callback != NULL) {
        callback(user, status);
        return false;
    }
    done->user = user;
    done->status = status;
    return true;
}
