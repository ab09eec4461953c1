/*
 * reduce.h - element-wise reductions for every carried (type, op), written
 * once for host C and CUDA device code.
 *
 * Signed integer SUM and PROD are computed in the unsigned twin type so that
 * overflow wraps (as every MPI implementation's hardware does) instead of
 * being undefined behaviour.
 */
#ifndef DFCCL_REDUCE_H
#define DFCCL_REDUCE_H

#include <stddef.h>
#include <stdint.h>
#include "dfccl.h"
#include "portable.h"

/* X(dtype, C type, unsigned twin used for wrapping arithmetic) */
#define DFCCL_FOREACH_INT_TYPE(X)            \
    X(DFCCL_INT8,   int8_t,   uint8_t)       \
    X(DFCCL_UINT8,  uint8_t,  uint8_t)       \
    X(DFCCL_INT16,  int16_t,  uint16_t)      \
    X(DFCCL_UINT16, uint16_t, uint16_t)      \
    X(DFCCL_INT32,  int32_t,  uint32_t)      \
    X(DFCCL_UINT32, uint32_t, uint32_t)      \
    X(DFCCL_INT64,  int64_t,  uint64_t)      \
    X(DFCCL_UINT64, uint64_t, uint64_t)

#define DFCCL_FOREACH_FLOAT_TYPE(X)          \
    X(DFCCL_FLOAT,  float,  float)           \
    X(DFCCL_DOUBLE, double, double)

#define DFCCL_R_SUM(T, U, a, b)  ((T)((U)(a) + (U)(b)))
/* 1u first: uint8/uint16 operands would otherwise promote to (signed) int */
#define DFCCL_R_PROD(T, U, a, b) ((T)(1u * (U)(a) * (U)(b)))
#define DFCCL_R_MIN(T, U, a, b)  ((b) < (a) ? (b) : (a))
#define DFCCL_R_MAX(T, U, a, b)  ((b) > (a) ? (b) : (a))
#define DFCCL_R_LAND(T, U, a, b) ((T)(((a) != 0) && ((b) != 0)))
#define DFCCL_R_LOR(T, U, a, b)  ((T)(((a) != 0) || ((b) != 0)))
#define DFCCL_R_LXOR(T, U, a, b) ((T)(((a) != 0) != ((b) != 0)))
#define DFCCL_R_BAND(T, U, a, b) ((T)((a) & (b)))
#define DFCCL_R_BOR(T, U, a, b)  ((T)((a) | (b)))
#define DFCCL_R_BXOR(T, U, a, b) ((T)((a) ^ (b)))

/* One loop per (type, op): dst may alias a or b element for element. */
#define DFCCL_DEFINE_REDUCE(NAME, T, U, OPM)                                   \
    DFCCL_INLINE DFCCL_HD void NAME(void *dst_, const void *a_, const void *b_, \
                                    size_t n, size_t first, size_t stride)      \
    {                                                                            \
        T *dst = (T *)dst_;                                                      \
        const T *a = (const T *)a_, *b = (const T *)b_;                          \
        for (size_t i = first; i < n; i += stride) {                             \
            T x = a[i], y = b[i];                                                \
            dst[i] = OPM(T, U, x, y);                                            \
        }                                                                        \
    }

#define DFCCL_DEFINE_INT_REDUCES(DT, T, U)                       \
    DFCCL_DEFINE_REDUCE(dfccl_reduce_##DT##_SUM,  T, U, DFCCL_R_SUM)  \
    DFCCL_DEFINE_REDUCE(dfccl_reduce_##DT##_PROD, T, U, DFCCL_R_PROD) \
    DFCCL_DEFINE_REDUCE(dfccl_reduce_##DT##_MIN,  T, U, DFCCL_R_MIN)  \
    DFCCL_DEFINE_REDUCE(dfccl_reduce_##DT##_MAX,  T, U, DFCCL_R_MAX)  \
    DFCCL_DEFINE_REDUCE(dfccl_reduce_##DT##_LAND, T, U, DFCCL_R_LAND) \
    DFCCL_DEFINE_REDUCE(dfccl_reduce_##DT##_LOR,  T, U, DFCCL_R_LOR)  \
    DFCCL_DEFINE_REDUCE(dfccl_reduce_##DT##_LXOR, T, U, DFCCL_R_LXOR) \
    DFCCL_DEFINE_REDUCE(dfccl_reduce_##DT##_BAND, T, U, DFCCL_R_BAND) \
    DFCCL_DEFINE_REDUCE(dfccl_reduce_##DT##_BOR,  T, U, DFCCL_R_BOR)  \
    DFCCL_DEFINE_REDUCE(dfccl_reduce_##DT##_BXOR, T, U, DFCCL_R_BXOR)

#define DFCCL_DEFINE_FLOAT_REDUCES(DT, T, U)                     \
    DFCCL_DEFINE_REDUCE(dfccl_reduce_##DT##_SUM,  T, U, DFCCL_R_SUM)  \
    DFCCL_DEFINE_REDUCE(dfccl_reduce_##DT##_PROD, T, U, DFCCL_R_PROD) \
    DFCCL_DEFINE_REDUCE(dfccl_reduce_##DT##_MIN,  T, U, DFCCL_R_MIN)  \
    DFCCL_DEFINE_REDUCE(dfccl_reduce_##DT##_MAX,  T, U, DFCCL_R_MAX)

DFCCL_FOREACH_INT_TYPE(DFCCL_DEFINE_INT_REDUCES)
DFCCL_FOREACH_FLOAT_TYPE(DFCCL_DEFINE_FLOAT_REDUCES)
/* C _Bool and opaque bytes travel as uint8_t */
DFCCL_DEFINE_REDUCE(dfccl_reduce_DFCCL_BOOL_LAND, uint8_t, uint8_t, DFCCL_R_LAND)
DFCCL_DEFINE_REDUCE(dfccl_reduce_DFCCL_BOOL_LOR,  uint8_t, uint8_t, DFCCL_R_LOR)
DFCCL_DEFINE_REDUCE(dfccl_reduce_DFCCL_BOOL_LXOR, uint8_t, uint8_t, DFCCL_R_LXOR)
DFCCL_DEFINE_REDUCE(dfccl_reduce_DFCCL_BYTE_BAND, uint8_t, uint8_t, DFCCL_R_BAND)
DFCCL_DEFINE_REDUCE(dfccl_reduce_DFCCL_BYTE_BOR,  uint8_t, uint8_t, DFCCL_R_BOR)
DFCCL_DEFINE_REDUCE(dfccl_reduce_DFCCL_BYTE_BXOR, uint8_t, uint8_t, DFCCL_R_BXOR)

/*
 * dst[i] = a[i] OP b[i] for i = first, first + stride, ... < n. A host caller
 * passes first 0, stride 1; a CUDA thread passes its index and the grid size.
 * Returns 0 for a (type, op) pair the engine does not carry.
 */
DFCCL_INLINE DFCCL_HD int dfccl_reduce_strided(void *dst, const void *a, const void *b,
                                               size_t n, size_t first, size_t stride,
                                               dfccl_dtype_t dtype, dfccl_op_t op)
{
#define DFCCL_CASE(DT, OP) \
    case DFCCL_OP_##OP: dfccl_reduce_##DT##_##OP(dst, a, b, n, first, stride); return 1;
#define DFCCL_INT_CASES(DT, T, U)                                                   \
    case DT:                                                                        \
        switch (op) {                                                               \
        DFCCL_CASE(DT, SUM) DFCCL_CASE(DT, PROD)                  \
        DFCCL_CASE(DT, MIN) DFCCL_CASE(DT, MAX)                   \
        DFCCL_CASE(DT, LAND) DFCCL_CASE(DT, LOR)                  \
        DFCCL_CASE(DT, LXOR) DFCCL_CASE(DT, BAND)                 \
        DFCCL_CASE(DT, BOR) DFCCL_CASE(DT, BXOR)                  \
        default: return 0;                                                          \
        }
#define DFCCL_FLOAT_CASES(DT, T, U)                                                 \
    case DT:                                                                        \
        switch (op) {                                                               \
        DFCCL_CASE(DT, SUM) DFCCL_CASE(DT, PROD)                  \
        DFCCL_CASE(DT, MIN) DFCCL_CASE(DT, MAX)                   \
        default: return 0;                                                          \
        }
    switch (dtype) {
    DFCCL_FOREACH_INT_TYPE(DFCCL_INT_CASES)
    DFCCL_FOREACH_FLOAT_TYPE(DFCCL_FLOAT_CASES)
    case DFCCL_BOOL:
        switch (op) {
        DFCCL_CASE(DFCCL_BOOL, LAND) DFCCL_CASE(DFCCL_BOOL, LOR)
        DFCCL_CASE(DFCCL_BOOL, LXOR)
        default: return 0;
        }
    case DFCCL_BYTE:
        switch (op) {
        DFCCL_CASE(DFCCL_BYTE, BAND) DFCCL_CASE(DFCCL_BYTE, BOR)
        DFCCL_CASE(DFCCL_BYTE, BXOR)
        default: return 0;
        }
    default:
        return 0;
    }
#undef DFCCL_INT_CASES
#undef DFCCL_FLOAT_CASES
#undef DFCCL_CASE
}

/* Host convenience: the whole range. */
void dfccl_reduce(void *dst, const void *a, const void *b, size_t n,
                  dfccl_dtype_t dtype, dfccl_op_t op);

#endif
