/*
 * portable.h - qualifiers that let the executor core compile both as host C
 * and as CUDA device code (one source of truth for the data path and policy).
 */
#ifndef DFCCL_PORTABLE_H
#define DFCCL_PORTABLE_H

#ifdef __CUDACC__
#define DFCCL_HD __host__ __device__
#else
#define DFCCL_HD
#endif

#define DFCCL_INLINE static inline

#endif
