/*
 * direct.h - the host side of the direct path: our buffers exported for the
 * peers, the peers' buffers mapped for the kernel, and the jobs that hold
 * those mappings.
 */
#ifndef DFCCL_GPU_DIRECT_H
#define DFCCL_GPU_DIRECT_H

#include "backends/gpu/state.h"

/* Our buffer at ptr as the peers map it (the engine's device current);
 * 0 when CUDA cannot export it. */
int  gpu_direct_export(dfccl_gpu_t *g, const char *ptr, dfccl_gpu_ipc_handle_t *h, uint64_t *offset,
                       uint64_t *alloc);
/* The rest run on the proxy thread. */
/* Answers the kernel's requests for the peers' buffers. */
void gpu_direct_service(dfccl_gpu_t *g);
/* The kernel has left: answers held back for it go out. */
void gpu_direct_release_held(dfccl_gpu_t *g);
/* Unmaps what was evicted while the kernel ran. */
void gpu_direct_close_pending(dfccl_gpu_t *g);
/* A communicator's mappings, when it is freed (the kernel is out). */
void gpu_direct_maps_release(dfccl_gpu_comm_t *gc, int size);
/* Frees a job, giving the peer mappings it used back. */
void gpu_job_free(gpu_job_t *job);

#endif
