/*
 * exec_cpu.h - the executor core (exec.h) with the CPU's atomics, for code
 * that runs on the host: the host backend's executor, and the GPU backend's
 * host side, which shares the kernel's descriptors (gpu_shared.h).
 */
#ifndef DFCCL_EXEC_CPU_H
#define DFCCL_EXEC_CPU_H

#define DFCCL_LOAD_ACQUIRE(p)     __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define DFCCL_STORE_RELEASE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#include "core/exec.h"

#endif
