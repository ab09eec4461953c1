/*
 * gpu_device.cuh - what the daemon kernel's headers share before any other:
 * how the portable core (core/*.h) compiles for the device, the FIFO
 * counters' memory order, the global clock, and whether the latency trace
 * is compiled in. Every kernels/*.cuh includes it first.
 */
#ifndef DFCCL_GPU_DEVICE_CUH
#define DFCCL_GPU_DEVICE_CUH

/* The core's inline functions take DFCCL_HD and the counters' order from
 * the macros below when they are parsed: a core header read first would
 * have compiled them for the host as well (portable.h's default), where
 * gpu_load_acquire does not exist. */
#if defined(DFCCL_PORTABLE_H)
#error "kernels/gpu_device.cuh must come before any core/ or backends/ header"
#endif

#include <stdint.h>

/* The core runs only on the device here, so it may call device-only
 * functions (portable.h). */
#define DFCCL_HD __device__
#define DFCCL_LOAD_ACQUIRE(p) gpu_load_acquire(p)
#define DFCCL_STORE_RELEASE(p, v) gpu_store_release((p), (v))

/* The FIFO counters' order, at system scope for every FIFO: the other end
 * is another process's kernel on this or another GPU, or, for a FIFO to
 * another node in pinned host memory, the proxy thread on the CPU. The
 * release is thread 0's after the block's barrier, so the slot's bytes that
 * all threads wrote (and the slot's length, for the proxy) are visible
 * system-wide before the tail that publishes them; the acquire's fence
 * keeps the slot's loads after the counter's, and the barrier that follows
 * hands that order to the other threads. The proxy writes a received slot
 * and then the tail with release order, and frees a sent slot through the
 * head the same way. */

__device__ static inline uint64_t gpu_load_acquire(volatile uint64_t *p)
{
    uint64_t v = *p;
    __threadfence_system();
    return v;
}

__device__ static inline void gpu_store_release(volatile uint64_t *p, uint64_t v)
{
    __threadfence_system();
    *p = v;
}

/* The GPU's global clock in ns (%globaltimer), alike on all its SMs. */
__device__ static inline uint64_t gpu_now_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* The latency trace (config gpu_trace, gpu_trace.cuh) is in the kernel only
 * where configure's --enable-gpu-trace defined DFCCL_GPU_TRACE: compiled
 * in, every stamp tests a launch parameter even with the trace off, and
 * the stamps' code sits between the scheduler's. GPU_TRACE_ON(env): is
 * it on in this launch? Without the trace a constant 0, so every stamp
 * compiles to nothing (the host then never asks for it: backend.c). */
#ifdef DFCCL_GPU_TRACE
#define GPU_TRACE_BUILT 1
#else
#define GPU_TRACE_BUILT 0
#endif
#define GPU_TRACE_ON(env) (GPU_TRACE_BUILT && (env)->trace)

#endif
