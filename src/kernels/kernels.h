/*
 * kernels.h - host-callable entry points of the CUDA side. The daemon kernel
 * itself comes with the CUDA backend; what is here is the device
 * instantiation of the portable core (reductions, slice protocol) that it
 * will run, compiled for sm_90 plus PTX wherever nvcc is found.
 */
#ifndef DFCCL_KERNELS_H
#define DFCCL_KERNELS_H

#include <stddef.h>
#include "dfccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dst[i] = a[i] OP b[i] on the device, on stream (a cudaStream_t, may be
 * NULL). Returns 0 on success, -1 for an uncarried (type, op), or the CUDA
 * error code of the launch. */
int dfccl_cuda_reduce(void *dst, const void *a, const void *b, size_t n,
                      dfccl_dtype_t dtype, dfccl_op_t op, void *stream);

#ifdef __cplusplus
}
#endif
#endif
