/*
 * kernels.h - host-callable entry point of the CUDA side: the daemon kernel,
 * compiled for sm_90 plus PTX wherever nvcc is found.
 */
#ifndef DFCCL_KERNELS_H
#define DFCCL_KERNELS_H

#include <stddef.h>
#include "include/dfccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Launches the daemon kernel (daemon_kernel.cu) with *env as its
 * parameter. Returns the CUDA error code of the launch (0 on success). */
struct dfccl_gpu_env;
int dfccl_gpu_kernel_launch(const struct dfccl_gpu_env *env, unsigned blocks, unsigned threads,
                            void *stream);

/* How many daemon-kernel blocks of `threads` threads one SM of the current
 * device holds at once (*per_sm). Returns the CUDA error code (0 on success). */
int dfccl_gpu_kernel_per_sm(unsigned threads, int *per_sm);

#ifdef __cplusplus
}
#endif
#endif
