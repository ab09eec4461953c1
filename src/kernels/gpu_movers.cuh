/*
 * gpu_movers.cuh - the daemon kernel's data movers: copies and reductions that all
 * threads of a block run together (16-byte vectors, scalar tails).
 */
#ifndef DFCCL_GPU_MOVERS_CUH
#define DFCCL_GPU_MOVERS_CUH

#include "kernels/gpu_device.cuh"
#include <stddef.h>
#include <stdint.h>
#include "core/exec.h"
#include "core/reduce.h"

/* ---- data movers: all threads of the block ------------------------------ */

/* 16-byte vectors each thread keeps in flight: enough outstanding loads for
 * a few dozen blocks to approach the HBM's bandwidth. */
#define GPU_UNROLL 4

__device__ static inline int gpu_aligned16(const void *p)
{
    return ((uintptr_t)p & 15) == 0;
}

/* dst and out (either may be NULL) receive bytes from `from`. Loads bypass
 * L1: FIFO slots and inboxes are rewritten by other processes. */
__device__ static void gpu_copy(char *dst, char *out, const char *from, size_t bytes)
{
    size_t i = threadIdx.x, vecs = 0;

    if (gpu_aligned16(from) && (!dst || gpu_aligned16(dst)) && (!out || gpu_aligned16(out))) {
        const uint4 *f = (const uint4 *)from;
        uint4 *d = (uint4 *)dst, *o = (uint4 *)out;
        size_t step = (size_t)blockDim.x * GPU_UNROLL;
        vecs = bytes / 16;
        for (; i + (GPU_UNROLL - 1) * blockDim.x < vecs; i += step) {
            uint4 v[GPU_UNROLL];
            _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++) v[u] = __ldcg(f + i + u * blockDim.x);
            _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++) {
                if (d) d[i + u * blockDim.x] = v[u];
                if (o) o[i + u * blockDim.x] = v[u];
            }
        }
        for (; i < vecs; i += blockDim.x) {
            uint4 v = __ldcg(f + i);
            if (d) d[i] = v;
            if (o) o[i] = v;
        }
        i = vecs * 16 + threadIdx.x;
    }
    for (; i < bytes; i += blockDim.x) {
        char v = ((const volatile char *)from)[i];
        if (dst) dst[i] = v;
        if (out) out[i] = v;
    }
}

/* A local copy whose ranges may overlap (reduce-scatter in place moves its
 * result to the front: dst < src). Every pass reads its whole piece before
 * anyone writes, and later pieces lie beyond what earlier ones wrote. */
__device__ static void gpu_move_overlapping(char *dst, const char *src, size_t bytes)
{
    size_t piece = (size_t)blockDim.x;

    for (size_t base = 0; base < bytes; base += piece) {
        size_t i = base + threadIdx.x;
        char v = 0;
        if (i < bytes) v = ((const volatile char *)src)[i];
        __syncthreads();
        if (i < bytes) dst[i] = v;
        __syncthreads();
    }
}

/* Reductions 16 bytes at a time, GPU_UNROLL vectors in flight per thread
 * (loads first, so the memory system has enough requests to reach full
 * bandwidth): r = in OP src, stored to dst and/or out. The scalar twins
 * (volatile loads: the data may come from another process) serve what is
 * not 16-byte aligned. */
#define GPU_VEC_REDUCE(DT, T, U, OPN, OPM)                                                  \
    __device__ static inline uint4 gpu_op16_##DT##_##OPN(uint4 a, uint4 b)                   \
    {                                                                                         \
        uint4 r;                                                                              \
        const T *x = (const T *)&a, *y = (const T *)&b;                                       \
        T *z = (T *)&r;                                                                       \
        _Pragma("unroll") for (int k = 0; k < (int)(16 / sizeof(T)); k++)                     \
            z[k] = OPM(T, U, x[k], y[k]);                                                     \
        return r;                                                                             \
    }                                                                                         \
    __device__ static void gpu_vec_##DT##_##OPN(const uint4 *in, const uint4 *src, uint4 *dst, \
                                                uint4 *out, size_t n)                         \
    {                                                                                         \
        size_t step = (size_t)blockDim.x * GPU_UNROLL, i = threadIdx.x;                       \
        for (; i + (GPU_UNROLL - 1) * blockDim.x < n; i += step) {                            \
            uint4 a[GPU_UNROLL], b[GPU_UNROLL];                                               \
            _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++) {                          \
                a[u] = __ldcg(in + i + u * blockDim.x);                                       \
                b[u] = __ldcg(src + i + u * blockDim.x);                                      \
            }                                                                                 \
            _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++) {                          \
                uint4 r = gpu_op16_##DT##_##OPN(a[u], b[u]);                                  \
                if (dst) dst[i + u * blockDim.x] = r;                                         \
                if (out) out[i + u * blockDim.x] = r;                                         \
            }                                                                                 \
        }                                                                                     \
        for (; i < n; i += blockDim.x) {                                                      \
            uint4 r = gpu_op16_##DT##_##OPN(__ldcg(in + i), __ldcg(src + i));                 \
            if (dst) dst[i] = r;                                                              \
            if (out) out[i] = r;                                                              \
        }                                                                                     \
    }                                                                                         \
    /* direct: element-wise over nin inputs in rank order, into nout outputs;                \
     * two inputs' loads in flight together */                                               \
    __device__ static void gpu_vecn_##DT##_##OPN(char *const *ins, int nin, char *const *outs, \
                                                 int nout, size_t at, size_t n)               \
    {                                                                                         \
        size_t step = (size_t)blockDim.x * GPU_UNROLL, i = threadIdx.x;                       \
        (void)at;                                                                             \
        for (; i + (GPU_UNROLL - 1) * blockDim.x < n; i += step) {                            \
            uint4 a[GPU_UNROLL], b[GPU_UNROLL], c[GPU_UNROLL];                                \
            const uint4 *p = (const uint4 *)ins[0], *q;                                       \
            int k = 1;                                                                        \
            _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++) a[u] = __ldcg(p + i + u * blockDim.x); \
            for (; k + 1 < nin; k += 2) {                                                     \
                p = (const uint4 *)ins[k];                                                    \
                q = (const uint4 *)ins[k + 1];                                                \
                _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++) {                      \
                    b[u] = __ldcg(p + i + u * blockDim.x);                                    \
                    c[u] = __ldcg(q + i + u * blockDim.x);                                    \
                }                                                                             \
                _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++)                        \
                    a[u] = gpu_op16_##DT##_##OPN(gpu_op16_##DT##_##OPN(a[u], b[u]), c[u]);    \
            }                                                                                 \
            if (k < nin) {                                                                    \
                p = (const uint4 *)ins[k];                                                    \
                _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++) b[u] = __ldcg(p + i + u * blockDim.x); \
                _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++)                        \
                    a[u] = gpu_op16_##DT##_##OPN(a[u], b[u]);                                 \
            }                                                                                 \
            for (int j = 0; j < nout; j++) {                                                  \
                uint4 *o = (uint4 *)outs[j];                                                  \
                _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++) o[i + u * blockDim.x] = a[u]; \
            }                                                                                 \
        }                                                                                     \
        for (; i < n; i += blockDim.x) {                                                      \
            uint4 a = __ldcg((const uint4 *)ins[0] + i);                                      \
            for (int k = 1; k < nin; k++)                                                     \
                a = gpu_op16_##DT##_##OPN(a, __ldcg((const uint4 *)ins[k] + i));              \
            for (int j = 0; j < nout; j++) ((uint4 *)outs[j])[i] = a;                         \
        }                                                                                     \
    }                                                                                         \
    __device__ static void gpu_scan_##DT##_##OPN(char *const *ins, int nin, char *const *outs, \
                                                 int nout, size_t at, size_t n)               \
    {                                                                                         \
        for (size_t i = threadIdx.x; i < n; i += blockDim.x) {                                \
            T a = ((const volatile T *)(ins[0] + at))[i];                                     \
            for (int k = 1; k < nin; k++) {                                                   \
                T y = ((const volatile T *)(ins[k] + at))[i];                                 \
                a = OPM(T, U, a, y);                                                          \
            }                                                                                 \
            for (int j = 0; j < nout; j++) ((T *)(outs[j] + at))[i] = a;                      \
        }                                                                                     \
    }                                                                                         \
    __device__ static void gpu_sca_##DT##_##OPN(const void *in_, const void *src_, void *dst_, \
                                                void *unused, size_t n)                       \
    {                                                                                         \
        const volatile T *in = (const volatile T *)in_, *src = (const volatile T *)src_;      \
        T *dst = (T *)dst_;                                                                   \
        (void)unused;                                                                         \
        for (size_t i = threadIdx.x; i < n; i += blockDim.x) {                                \
            T x = in[i], y = src[i];                                                          \
            dst[i] = OPM(T, U, x, y);                                                         \
        }                                                                                     \
    }
#define GPU_VEC_INT(DT, T, U)                                                                 \
    GPU_VEC_REDUCE(DT, T, U, SUM, DFCCL_R_SUM) GPU_VEC_REDUCE(DT, T, U, PROD, DFCCL_R_PROD)   \
    GPU_VEC_REDUCE(DT, T, U, MIN, DFCCL_R_MIN) GPU_VEC_REDUCE(DT, T, U, MAX, DFCCL_R_MAX)     \
    GPU_VEC_REDUCE(DT, T, U, LAND, DFCCL_R_LAND) GPU_VEC_REDUCE(DT, T, U, LOR, DFCCL_R_LOR)   \
    GPU_VEC_REDUCE(DT, T, U, LXOR, DFCCL_R_LXOR) GPU_VEC_REDUCE(DT, T, U, BAND, DFCCL_R_BAND) \
    GPU_VEC_REDUCE(DT, T, U, BOR, DFCCL_R_BOR) GPU_VEC_REDUCE(DT, T, U, BXOR, DFCCL_R_BXOR)
#define GPU_VEC_FLOAT(DT, T, U)                                                               \
    GPU_VEC_REDUCE(DT, T, U, SUM, DFCCL_R_SUM) GPU_VEC_REDUCE(DT, T, U, PROD, DFCCL_R_PROD)   \
    GPU_VEC_REDUCE(DT, T, U, MIN, DFCCL_R_MIN) GPU_VEC_REDUCE(DT, T, U, MAX, DFCCL_R_MAX)
/* 16-bit floats through reduce.h's portable conversions (float arithmetic,
 * one rounding per operation, as on the host) */
#define GPU_VEC_HALF(DT, T, U)                                                                \
    GPU_VEC_REDUCE(DT, T, U, SUM, DFCCL_R_HSUM) GPU_VEC_REDUCE(DT, T, U, PROD, DFCCL_R_HPROD) \
    GPU_VEC_REDUCE(DT, T, U, MIN, DFCCL_R_HMIN) GPU_VEC_REDUCE(DT, T, U, MAX, DFCCL_R_HMAX)
DFCCL_FOREACH_INT_TYPE(GPU_VEC_INT)
DFCCL_FOREACH_FLOAT_TYPE(GPU_VEC_FLOAT)
DFCCL_FOREACH_HALF_TYPE(GPU_VEC_HALF)
GPU_VEC_REDUCE(DFCCL_BOOL, uint8_t, uint8_t, LAND, DFCCL_R_LAND)
GPU_VEC_REDUCE(DFCCL_BOOL, uint8_t, uint8_t, LOR, DFCCL_R_LOR)
GPU_VEC_REDUCE(DFCCL_BOOL, uint8_t, uint8_t, LXOR, DFCCL_R_LXOR)
GPU_VEC_REDUCE(DFCCL_BYTE, uint8_t, uint8_t, BAND, DFCCL_R_BAND)
GPU_VEC_REDUCE(DFCCL_BYTE, uint8_t, uint8_t, BOR, DFCCL_R_BOR)
GPU_VEC_REDUCE(DFCCL_BYTE, uint8_t, uint8_t, BXOR, DFCCL_R_BXOR)

/* Returns 0 for a (type, op) the engine does not carry (never submitted).
 * PREFIX: gpu_vec (n 16-byte vectors) or gpu_sca (n elements, dst only).
 * The dispatchers stay out of line (__noinline__): their (type, op) bodies
 * are nine tenths of the kernel's code; inlined, they split the scheduler
 * and LL path into pieces megabytes apart and made ptxas take several
 * times as long. */
#define GPU_DEFINE_DISPATCH(NAME, PREFIX, PT, QT)                                         \
__device__ static __noinline__ int NAME(PT in, PT src, QT dst, QT out, size_t n,           \
                                        dfccl_dtype_t dtype, dfccl_op_t op)                \
{                                                                                          \
    GPU_DISPATCH_BODY(PREFIX)                                                              \
}
#define GPU_DISPATCH_BODY(PREFIX)                                                          \
    switch (dtype) {                                                                       \
    DFCCL_FOREACH_INT_TYPE(GPU_INT_CASES_##PREFIX)                                         \
    DFCCL_FOREACH_FLOAT_TYPE(GPU_FLOAT_CASES_##PREFIX)                                     \
    DFCCL_FOREACH_HALF_TYPE(GPU_FLOAT_CASES_##PREFIX)                                      \
    case DFCCL_BOOL:                                                                       \
        switch (op) {                                                                      \
        GPU_CASE_##PREFIX(DFCCL_BOOL, LAND) GPU_CASE_##PREFIX(DFCCL_BOOL, LOR)            \
        GPU_CASE_##PREFIX(DFCCL_BOOL, LXOR)                                                \
        default: return 0;                                                                 \
        }                                                                                  \
    case DFCCL_BYTE:                                                                       \
        switch (op) {                                                                      \
        GPU_CASE_##PREFIX(DFCCL_BYTE, BAND) GPU_CASE_##PREFIX(DFCCL_BYTE, BOR)            \
        GPU_CASE_##PREFIX(DFCCL_BYTE, BXOR)                                                \
        default: return 0;                                                                 \
        }                                                                                  \
    default:                                                                               \
        return 0;                                                                          \
    }
#define GPU_CASE_gpu_vec(DT, OP) case DFCCL_OP_##OP: gpu_vec_##DT##_##OP(in, src, dst, out, n); return 1;
#define GPU_CASE_gpu_sca(DT, OP) case DFCCL_OP_##OP: gpu_sca_##DT##_##OP(in, src, dst, out, n); return 1;
#define GPU_CASE_gpu_vecn(DT, OP) \
    case DFCCL_OP_##OP: gpu_vecn_##DT##_##OP(ins, nin, outs, nout, at, n); return 1;
#define GPU_CASE_gpu_scan(DT, OP) \
    case DFCCL_OP_##OP: gpu_scan_##DT##_##OP(ins, nin, outs, nout, at, n); return 1;
#define GPU_INT_CASES_GEN(C, DT)                                                           \
    case DT:                                                                               \
        switch (op) {                                                                      \
        C(DT, SUM) C(DT, PROD) C(DT, MIN) C(DT, MAX) C(DT, LAND) C(DT, LOR) C(DT, LXOR)   \
        C(DT, BAND) C(DT, BOR) C(DT, BXOR)                                                 \
        default: return 0;                                                                 \
        }
#define GPU_FLOAT_CASES_GEN(C, DT)                                                         \
    case DT:                                                                               \
        switch (op) {                                                                      \
        C(DT, SUM) C(DT, PROD) C(DT, MIN) C(DT, MAX)                                       \
        default: return 0;                                                                 \
        }
#define GPU_INT_CASES_gpu_vec(DT, T, U) GPU_INT_CASES_GEN(GPU_CASE_gpu_vec, DT)
#define GPU_INT_CASES_gpu_sca(DT, T, U) GPU_INT_CASES_GEN(GPU_CASE_gpu_sca, DT)
#define GPU_FLOAT_CASES_gpu_vec(DT, T, U) GPU_FLOAT_CASES_GEN(GPU_CASE_gpu_vec, DT)
#define GPU_FLOAT_CASES_gpu_sca(DT, T, U) GPU_FLOAT_CASES_GEN(GPU_CASE_gpu_sca, DT)
#define GPU_INT_CASES_gpu_vecn(DT, T, U) GPU_INT_CASES_GEN(GPU_CASE_gpu_vecn, DT)
#define GPU_INT_CASES_gpu_scan(DT, T, U) GPU_INT_CASES_GEN(GPU_CASE_gpu_scan, DT)
#define GPU_FLOAT_CASES_gpu_vecn(DT, T, U) GPU_FLOAT_CASES_GEN(GPU_CASE_gpu_vecn, DT)
#define GPU_FLOAT_CASES_gpu_scan(DT, T, U) GPU_FLOAT_CASES_GEN(GPU_CASE_gpu_scan, DT)
GPU_DEFINE_DISPATCH(gpu_vec_reduce, gpu_vec, const uint4 *, uint4 *)
GPU_DEFINE_DISPATCH(gpu_sca_reduce, gpu_sca, const void *, void *)

/* Over nin inputs into nout outputs: n 16-byte vectors (gpu_vecn), or n
 * elements from byte `at` on (gpu_scan). */
#define GPU_DEFINE_DISPATCH_N(NAME, PREFIX)                                                \
__device__ static __noinline__ int NAME(char *const *ins, int nin, char *const *outs,      \
                                        int nout, size_t at, size_t n, dfccl_dtype_t dtype, \
                                        dfccl_op_t op)                                     \
{                                                                                          \
    GPU_DISPATCH_BODY(PREFIX)                                                              \
}
GPU_DEFINE_DISPATCH_N(gpu_vecn_reduce, gpu_vecn)
GPU_DEFINE_DISPATCH_N(gpu_scan_reduce, gpu_scan)


/* target = in OP src over count elements; target is dst, else out; out gets
 * a copy when both are wanted. */
__device__ static void gpu_reduce(char *dst, char *out, const char *in, const char *src,
                                  size_t count, size_t esize, dfccl_dtype_t dtype, dfccl_op_t op)
{
    size_t bytes = count * esize, vec_bytes = 0;
    char *target = dst ? dst : out;

    if (gpu_aligned16(in) && gpu_aligned16(src) && gpu_aligned16(target) &&
        (!dst || !out || gpu_aligned16(out))) {
        vec_bytes = bytes & ~(size_t)15;
        gpu_vec_reduce((const uint4 *)in, (const uint4 *)src, (uint4 *)dst, (uint4 *)out,
                       vec_bytes / 16, dtype, op);
    }
    if (vec_bytes < bytes) {
        size_t done = vec_bytes / esize;
        gpu_sca_reduce(in + vec_bytes, src + vec_bytes, target + vec_bytes, NULL, count - done,
                       dtype, op);
        if (dst && out) {
            __syncthreads();
            gpu_copy(NULL, out + vec_bytes, dst + vec_bytes, bytes - vec_bytes);
        }
    }
}

/* One ring slice: exactly what exec_host.c does on the host. */
__device__ static __noinline__ void gpu_slice_move(const dfccl_exec_t *x, const dfccl_slice_t *s)
{
    size_t bytes = s->count * x->esize;

    if (s->in && s->reduce && s->dst && s->dst != s->src && s->dst < s->src + bytes &&
        s->src < s->dst + bytes) {
        /* an in-place reduce-scatter's result moving to the front over its
         * own input: threads would read input that others already wrote, so
         * combine in the received slot (ours until it is released), then
         * copy it out */
        gpu_reduce((char *)s->in, NULL, s->in, s->src, s->count, x->esize, x->dtype, x->op);
        __syncthreads();
        gpu_copy(s->dst, s->out, s->in, bytes);
    } else if (s->in && s->reduce) {
        gpu_reduce(s->dst, s->out, s->in, s->src, s->count, x->esize, x->dtype, x->op);
    } else if (s->in) {
        gpu_copy(s->dst, s->out, s->in, bytes);
    } else if (s->out) {
        gpu_copy(s->dst != s->src ? s->dst : NULL, s->out, s->src, bytes);
    } else if (s->dst && s->dst != s->src) {
        gpu_move_overlapping(s->dst, s->src, bytes);
    }
}

#endif
