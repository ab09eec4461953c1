/* reduce_kernel.cu - the portable reductions (reduce.h) as a grid-stride kernel. */
#include <cuda_runtime.h>
#include "kernels.h"
#include "reduce.h"

__global__ void dfccl_reduce_kernel(void *dst, const void *a, const void *b, size_t n,
                                    dfccl_dtype_t dtype, dfccl_op_t op)
{
    size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    dfccl_reduce_strided(dst, a, b, n, first, stride, dtype, op);
}

extern "C" int dfccl_cuda_reduce(void *dst, const void *a, const void *b, size_t n,
                                 dfccl_dtype_t dtype, dfccl_op_t op, void *stream)
{
    const unsigned threads = 256;
    size_t blocks = (n + threads - 1) / threads;

    if (!dfccl_op_supported(op, dtype)) return -1;
    if (n == 0) return 0;
    if (blocks > 1024) blocks = 1024;   /* grid-stride: enough blocks to fill the GPU */
    dfccl_reduce_kernel<<<(unsigned)blocks, threads, 0, (cudaStream_t)stream>>>(dst, a, b, n,
                                                                                 dtype, op);
    return (int)cudaGetLastError();
}
