/*
 * comm_release.h - a GPU communicator's end: its device memory, mappings
 * and table entry, freed by the proxy thread while the kernel is out.
 */
#ifndef DFCCL_GPU_COMM_RELEASE_H
#define DFCCL_GPU_COMM_RELEASE_H

#include "backends/gpu/state.h"

/* Released communicators: their memory goes while the kernel is out (a
 * cudaFree would wait for it anyway). */
typedef struct gpu_dead {
    dfccl_gpu_comm_t *gc;
    int size, rank;
} gpu_dead_t;

/* Unmaps the peers' regions and buffers, closes the links to other nodes,
 * frees our region and gives its entry in the device communicator table
 * back. */
void gpu_comm_free_resources(dfccl_gpu_t *g, dfccl_gpu_comm_t *gc, int size, int rank);
/* The communicator's host memory, its resources gone. */
void gpu_comm_free(dfccl_gpu_comm_t *gc);
/* Frees the released communicators; proxy thread, the kernel out. */
void gpu_free_dead(dfccl_gpu_t *g);

#endif
