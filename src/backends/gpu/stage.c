/*
 * stage.c - staging for a rank whose buffers are not of the memory kind
 * its collective's path carries: host buffers on the GPU path (under
 * coll_dfccl_host_buffers=engine, where every rank of a GPU-capable
 * communicator takes the GPU path whatever its buffers), device buffers on
 * the host path. The caller copies the input into a staging block, the
 * collective runs on the block, and the result is copied out before the
 * request completes.
 *
 * Device blocks come from cudaMalloc (so the direct path can export them
 * like any application buffer) and are kept for reuse: cudaMalloc and
 * cudaFree per call would cost more than the copies, and cudaFree waits for
 * the running daemon kernel. Idle blocks beyond gpu_stage_keep_bytes are
 * freed by the proxy thread while the kernel is out. Sizes are rounded up
 * by at most an eighth, so that blocks fit later calls of similar size.
 */
#include <stdlib.h>
#include "backends/gpu/stage.h"
#include "util/log.h"

#define GPU_STAGE_MIN_BYTES ((size_t)64 * 1024)

typedef struct gpu_stage_block {
    struct gpu_stage_block *next;
    char                   *ptr;
    size_t                  bytes;
    int                     lent;
} gpu_stage_block_t;

/* Up to a multiple of a power of two that is at most an eighth of the size
 * (64 KiB at least). */
static size_t gpu_stage_round(size_t bytes)
{
    size_t granule = GPU_STAGE_MIN_BYTES;
    while (granule < bytes / 8) granule *= 2;
    if (bytes > SIZE_MAX - granule) return bytes;
    return (bytes + granule - 1) / granule * granule;
}

dfccl_status_t gpu_stage_take(dfccl_gpu_t *g, size_t bytes, void **buf_p)
{
    size_t rounded = gpu_stage_round(bytes);
    gpu_stage_block_t *b, *best = NULL;
    cudaError_t e;
    int previous;

    pthread_mutex_lock(&g->stage.lock);
    for (b = g->stage.blocks; b != NULL; b = b->next)
        if (!b->lent && b->bytes >= rounded && (best == NULL || b->bytes < best->bytes)) best = b;
    if (best != NULL) {
        best->lent = 1;
        g->stage.idle_bytes -= best->bytes;
        *buf_p = best->ptr;
        pthread_mutex_unlock(&g->stage.lock);
        return DFCCL_OK;
    }
    pthread_mutex_unlock(&g->stage.lock);

    b = calloc(1, sizeof(*b));
    if (b == NULL) return DFCCL_ERR_NO_MEMORY;
    previous = gpu_device_enter(g);
    e = cudaMalloc((void **)&b->ptr, rounded);
    gpu_device_leave(g, previous);
    if (e != cudaSuccess) {
        cudaGetLastError();   /* out of memory is this call's failure, not a sticky error */
        dfccl_error("no device memory to stage %zu bytes: %s", bytes, gpu_err(e));
        free(b);
        return DFCCL_ERR_NO_MEMORY;
    }
    b->bytes = rounded;
    b->lent = 1;
    pthread_mutex_lock(&g->stage.lock);
    b->next = g->stage.blocks;
    g->stage.blocks = b;
    pthread_mutex_unlock(&g->stage.lock);
    *buf_p = b->ptr;
    return DFCCL_OK;
}

void dfccl_gpu_stage_free(dfccl_context_t *ctx, void *buf)
{
    dfccl_gpu_t *g = __atomic_load_n(&gpu_ctx_of(ctx)->gpu, __ATOMIC_ACQUIRE);

    if (buf == NULL || g == NULL) return;
    pthread_mutex_lock(&g->stage.lock);
    for (gpu_stage_block_t *b = g->stage.blocks; b != NULL; b = b->next) {
        if (b->ptr == buf && b->lent) {
            b->lent = 0;
            g->stage.idle_bytes += b->bytes;
            break;
        }
    }
    if (g->stage.idle_bytes > ctx->config.gpu_stage_keep_bytes)
        __atomic_store_n(&g->stage.trim, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g->stage.lock);
}

void gpu_stage_trim(dfccl_gpu_t *g)
{
    gpu_stage_block_t **link, *unused = NULL;

    pthread_mutex_lock(&g->stage.lock);
    __atomic_store_n(&g->stage.trim, 0, __ATOMIC_RELEASE);
    link = &g->stage.blocks;
    while (*link != NULL && g->stage.idle_bytes > g->fixed.ctx->config.gpu_stage_keep_bytes) {
        gpu_stage_block_t *b = *link;
        if (b->lent) {
            link = &b->next;
            continue;
        }
        *link = b->next;
        g->stage.idle_bytes -= b->bytes;
        b->next = unused;
        unused = b;
    }
    pthread_mutex_unlock(&g->stage.lock);
    while (unused != NULL) {   /* the proxy thread: the engine's device is current */
        gpu_stage_block_t *next = unused->next;
        cudaFree(unused->ptr);
        free(unused);
        unused = next;
    }
}

void gpu_stage_release(dfccl_gpu_t *g)
{
    gpu_stage_block_t *b = g->stage.blocks, *next;

    for (; b != NULL; b = next) {
        next = b->next;
        cudaFree(b->ptr);
        free(b);
    }
    g->stage.blocks = NULL;
}

dfccl_status_t dfccl_gpu_copy(dfccl_context_t *ctx, void *dst, const void *src, size_t bytes)
{
    dfccl_gpu_t *g = __atomic_load_n(&gpu_ctx_of(ctx)->gpu, __ATOMIC_ACQUIRE);
    cudaError_t e;

    if (bytes == 0) return DFCCL_OK;
    if (g != NULL) {
        /* the backend's copy stream never waits for the daemon kernel */
        int previous = gpu_device_enter(g);
        e = gpu_copy_now(g, dst, src, bytes, cudaMemcpyDefault);
        gpu_device_leave(g, previous);
    } else {
        /* host path, device buffers, no GPU side in this process: on the
         * device that holds the buffer (the thread may have none current),
         * its per-thread stream, waited for (a copy from pageable memory may
         * return before its data has landed) */
        struct cudaPointerAttributes a;
        int previous = -1, device = -1;
        if (cudaPointerGetAttributes(&a, dst) == cudaSuccess && a.type == cudaMemoryTypeDevice)
            device = a.device;
        else if (cudaPointerGetAttributes(&a, src) == cudaSuccess && a.type == cudaMemoryTypeDevice)
            device = a.device;
        cudaGetLastError();
        cudaGetDevice(&previous);
        if (device >= 0 && device != previous) cudaSetDevice(device);
        e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cudaStreamPerThread);
        if (e == cudaSuccess) e = cudaStreamSynchronize(cudaStreamPerThread);
        if (device >= 0 && previous >= 0 && device != previous) cudaSetDevice(previous);
    }
    if (e != cudaSuccess) {
        dfccl_error("staging copy of %zu bytes (%p -> %p) failed: %s", bytes, src, dst,
                    gpu_err(e));
        return DFCCL_ERR_SYSTEM;
    }
    return DFCCL_OK;
}
