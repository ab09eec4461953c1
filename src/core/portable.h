/*
 * portable.h - qualifiers that let the executor core compile both as host C
 * and as CUDA device code (one source of truth for the data path and policy).
 */
#ifndef DFCCL_PORTABLE_H
#define DFCCL_PORTABLE_H

/* A translation unit that only runs the core on the device may define
 * DFCCL_HD as __device__ first, so the core can call device-only atomics. */
#ifndef DFCCL_HD
#ifdef __CUDACC__
#define DFCCL_HD __host__ __device__
#else
#define DFCCL_HD
#endif
#endif

#define DFCCL_INLINE static inline

#endif
