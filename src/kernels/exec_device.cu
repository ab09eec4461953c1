/*
 * exec_device.cu - the executor core (exec.h) instantiated for the GPU: one
 * block runs a collective's slices. Thread 0 checks readiness and publishes
 * counters (system-scope fences, since FIFOs may live in another process's
 * memory mapped through CUDA IPC); all threads move the data.
 */
#include <cuda_runtime.h>
#include <stdint.h>

#define DFCCL_HD __device__
#define DFCCL_LOAD_ACQUIRE(p) dfccl_device_load_acquire(p)
#define DFCCL_STORE_RELEASE(p, v) dfccl_device_store_release((p), (v))

__device__ static inline uint64_t dfccl_device_load_acquire(volatile uint64_t *p)
{
    uint64_t v = *p;
    __threadfence_system();
    return v;
}

__device__ static inline void dfccl_device_store_release(volatile uint64_t *p, uint64_t v)
{
    __threadfence_system();
    *p = v;
}

#include "exec.h"
#include "reduce.h"

/* All threads of the block copy bytes, 16 bytes at a time where aligned. */
__device__ static void dfccl_device_copy(char *dst, const char *src, size_t bytes)
{
    size_t i = threadIdx.x;
    if ((((uintptr_t)dst | (uintptr_t)src) & 15) == 0) {
        size_t vecs = bytes / 16;
        for (; i < vecs; i += blockDim.x) ((uint4 *)dst)[i] = ((const uint4 *)src)[i];
        i = vecs * 16 + threadIdx.x;
    }
    for (; i < bytes; i += blockDim.x) dst[i] = src[i];
}

__device__ static void dfccl_device_slice_move(const dfccl_exec_t *x, const dfccl_slice_t *s)
{
    size_t bytes = s->count * x->esize;

    if (s->in && s->reduce) {
        char *target = s->dst ? s->dst : s->out;
        dfccl_reduce_strided(target, s->in, s->src, s->count, threadIdx.x, blockDim.x, x->dtype,
                             x->op);
        if (s->dst && s->out) {
            __syncthreads();
            dfccl_device_copy(s->out, s->dst, bytes);
        }
    } else {
        const char *from = s->in ? s->in : s->src;
        if (s->dst && s->dst != from) dfccl_device_copy(s->dst, from, bytes);
        if (s->out) dfccl_device_copy(s->out, from, bytes);
    }
}

/*
 * Moves up to max_slices slices of x (in global memory); returns the number
 * moved. Stops when a peer is not ready, so the caller can switch to another
 * collective: the saved context in x is all that resuming needs.
 */
__device__ unsigned dfccl_exec_device_advance(dfccl_exec_t *x, unsigned max_slices)
{
    __shared__ dfccl_slice_t slice;
    __shared__ int ready;
    unsigned moved = 0;

    while (moved < max_slices) {
        if (threadIdx.x == 0) ready = !dfccl_exec_done(x) && dfccl_exec_slice_begin(x, &slice);
        __syncthreads();
        if (!ready) break;
        dfccl_device_slice_move(x, &slice);
        __syncthreads();
        if (threadIdx.x == 0) dfccl_exec_slice_end(x, &slice);
        __syncthreads();
        moved++;
    }
    __syncthreads();
    return moved;
}
