/*
 * stage.h - staging memory: device blocks lent to collectives whose buffers
 * are not of the memory kind their path carries, kept for reuse.
 */
#ifndef DFCCL_GPU_STAGE_H
#define DFCCL_GPU_STAGE_H

#include "backends/gpu/state.h"

/* The backend's staging operations (backend_ops.h): a block of at least
 * `bytes` of the engine's device memory, created with the backend on first
 * use (blocks are reused and kept until the context ends, or trimmed), its
 * return, and a copy between any host and device memory, complete on
 * return. */
dfccl_status_t dfccl_gpu_stage_alloc(dfccl_context_t *ctx, size_t bytes, void **buf_p);
void dfccl_gpu_stage_free(dfccl_context_t *ctx, void *buf);
dfccl_status_t dfccl_gpu_copy(dfccl_context_t *ctx, void *dst, const void *src, size_t bytes);
/* Lends a block of at least `bytes` (dfccl_gpu_stage_alloc, once the
 * backend exists). */
dfccl_status_t gpu_stage_take(dfccl_gpu_t *g, size_t bytes, void **buf_p);
/* Frees idle staging blocks beyond the configured amount; the proxy thread
 * calls it while the kernel is out (cudaFree would wait for it). */
void gpu_stage_trim(dfccl_gpu_t *g);
/* Frees the staging blocks; at the backend's end. */
void gpu_stage_release(dfccl_gpu_t *g);

#endif
