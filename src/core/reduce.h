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
#include "include/dfccl.h"
#include "core/portable.h"

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

/* X(dtype, storage type, format prefix): 16-bit floats, stored as their bits
 * and reduced in float (sum and product rounded once to the format, to
 * nearest even; min and max pick an operand unchanged). Plain C, so host
 * and device code share it without CUDA's half headers. */
#define DFCCL_FOREACH_HALF_TYPE(X)                 \
    X(DFCCL_FLOAT16,  uint16_t, dfccl_fp16)        \
    X(DFCCL_BFLOAT16, uint16_t, dfccl_bf16)

typedef union { float f; uint32_t u; } dfccl_f32_bits_t;

DFCCL_INLINE DFCCL_HD float dfccl_fp16_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    dfccl_f32_bits_t v;

    if (exp == 0x1fu) {   /* inf, nan */
        v.u = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        v.u = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        v.u = sign;
    } else {   /* subnormal: man x 2^-24 */
        v.f = (float)man * (1.0f / 16777216.0f);
        v.u |= sign;
    }
    return v.f;
}

DFCCL_INLINE DFCCL_HD uint16_t dfccl_fp16_from_float(float f)
{
    dfccl_f32_bits_t v;
    uint32_t sign, abs_u, exp, man, half, rest;

    v.f = f;
    sign = (v.u >> 16) & 0x8000u;
    abs_u = v.u & 0x7fffffffu;
    if (abs_u >= 0x7f800000u)   /* inf stays inf, nan stays a quiet nan */
        return (uint16_t)(sign | 0x7c00u | (abs_u > 0x7f800000u ? 0x200u : 0));
    if (abs_u >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);   /* rounds past 65504 */
    exp = abs_u >> 23;
    if (exp < 113) {   /* subnormal or zero in fp16: round man x 2^(exp-150) to 2^-24 units */
        if (exp < 102) return (uint16_t)sign;
        man = (abs_u & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - exp, q = man >> shift;
        rest = man & ((1u << shift) - 1);
        half = 1u << (shift - 1);
        if (rest > half || (rest == half && (q & 1))) q++;
        return (uint16_t)(sign | q);
    }
    man = abs_u & 0x7fffffu;
    half = ((exp - 112) << 10) | (man >> 13);
    rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1))) half++;
    return (uint16_t)(sign | half);
}

DFCCL_INLINE DFCCL_HD float dfccl_bf16_to_float(uint16_t b)
{
    dfccl_f32_bits_t v;
    v.u = (uint32_t)b << 16;
    return v.f;
}

DFCCL_INLINE DFCCL_HD uint16_t dfccl_bf16_from_float(float f)
{
    dfccl_f32_bits_t v;
    v.f = f;
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x40u);   /* quiet nan */
    return (uint16_t)((v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16);
}

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
/* 16-bit floats: U is the format's prefix (DFCCL_FOREACH_HALF_TYPE) */
#define DFCCL_R_HSUM(T, U, a, b)  U##_from_float(U##_to_float(a) + U##_to_float(b))
#define DFCCL_R_HPROD(T, U, a, b) U##_from_float(U##_to_float(a) * U##_to_float(b))
#define DFCCL_R_HMIN(T, U, a, b)  (U##_to_float(b) < U##_to_float(a) ? (b) : (a))
#define DFCCL_R_HMAX(T, U, a, b)  (U##_to_float(b) > U##_to_float(a) ? (b) : (a))

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

#define DFCCL_DEFINE_HALF_REDUCES(DT, T, U)                      \
    DFCCL_DEFINE_REDUCE(dfccl_reduce_##DT##_SUM,  T, U, DFCCL_R_HSUM)  \
    DFCCL_DEFINE_REDUCE(dfccl_reduce_##DT##_PROD, T, U, DFCCL_R_HPROD) \
    DFCCL_DEFINE_REDUCE(dfccl_reduce_##DT##_MIN,  T, U, DFCCL_R_HMIN)  \
    DFCCL_DEFINE_REDUCE(dfccl_reduce_##DT##_MAX,  T, U, DFCCL_R_HMAX)

DFCCL_FOREACH_INT_TYPE(DFCCL_DEFINE_INT_REDUCES)
DFCCL_FOREACH_FLOAT_TYPE(DFCCL_DEFINE_FLOAT_REDUCES)
DFCCL_FOREACH_HALF_TYPE(DFCCL_DEFINE_HALF_REDUCES)
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
    DFCCL_FOREACH_HALF_TYPE(DFCCL_FLOAT_CASES)
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
