/*
 * backend.h - the GPU backend's creation on first use, its daemon kernel's
 * size, and its end.
 */
#ifndef DFCCL_GPU_BACKEND_H
#define DFCCL_GPU_BACKEND_H

#include "backends/gpu/state.h"

/* The context's GPU side, created on first use. */
dfccl_status_t gpu_get(dfccl_context_t *ctx, dfccl_gpu_t **gpu_p);
/* Daemon blocks of `threads` threads the device holds at once (its *sms
 * SMs times the blocks per SM); 0 when CUDA cannot say. */
int gpu_block_capacity(int device, unsigned threads, int *sms);

#endif
