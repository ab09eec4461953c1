/*
 * coll_values.c - deterministic inputs and closed-form expected results
 * (see coll_values.h).
 *
 * Value rules, per op, for up to ~120 ranks:
 *   SUM        small integers (signed types also negative) whose sum over
 *              all ranks fits int8 / uint8; floats hold small integers, so
 *              every summation order is exact
 *   PROD       1 almost everywhere; at most two ranks per element may give
 *              2, signed types sometimes -1: |product| <= 4
 *   MIN/MAX    full-range bit patterns (integers), small integers (floats)
 *   LAND/LOR/LXOR  0 or a nonzero 1/2 (C_BOOL: 0/1), biased so that each
 *              op's result is neither always 0 nor always 1
 *   BAND/BOR/BXOR  varied bits, denser for BAND and sparser for BOR
 *   NONE       (allgather) full-range values
 */
#include "coll_values.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

size_t value_elem_size(dfccl_dtype_t elem)
{
    switch (elem) {
    case DFCCL_INT8: case DFCCL_UINT8: case DFCCL_BOOL: case DFCCL_BYTE:
        return 1;
    case DFCCL_INT16: case DFCCL_UINT16:
        return 2;
    case DFCCL_INT32: case DFCCL_UINT32: case DFCCL_FLOAT:
        return 4;
    default:
        return 8;
    }
}

const char *value_elem_name(dfccl_dtype_t elem)
{
    static const char *const names[DFCCL_DTYPE_COUNT] = {
        "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
        "uint64", "float", "double", "bool", "byte", "float16", "bfloat16"
    };
    return elem < DFCCL_DTYPE_COUNT ? names[elem] : "?";
}

const char *value_op_name(dfccl_op_t op)
{
    static const char *const names[DFCCL_OP_COUNT + 1] = {
        "MPI_SUM", "MPI_PROD", "MPI_MIN", "MPI_MAX", "MPI_LAND", "MPI_LOR",
        "MPI_LXOR", "MPI_BAND", "MPI_BOR", "MPI_BXOR", "none"
    };
    return op <= DFCCL_OP_COUNT ? names[op] : "?";
}

static bool elem_is_integer(dfccl_dtype_t elem)
{
    return elem <= DFCCL_UINT64;
}

static bool elem_is_signed(dfccl_dtype_t elem)
{
    return elem == DFCCL_INT8 || elem == DFCCL_INT16 || elem == DFCCL_INT32 ||
           elem == DFCCL_INT64;
}

static bool elem_is_float(dfccl_dtype_t elem)
{
    return elem == DFCCL_FLOAT || elem == DFCCL_DOUBLE;
}

int value_op_legal(dfccl_op_t op, dfccl_dtype_t elem)
{
    switch (op) {
    case DFCCL_OP_SUM: case DFCCL_OP_PROD: case DFCCL_OP_MIN: case DFCCL_OP_MAX:
        return elem_is_integer(elem) || elem_is_float(elem);
    case DFCCL_OP_LAND: case DFCCL_OP_LOR: case DFCCL_OP_LXOR:
        return elem_is_integer(elem) || elem == DFCCL_BOOL;
    case DFCCL_OP_BAND: case DFCCL_OP_BOR: case DFCCL_OP_BXOR:
        return elem_is_integer(elem) || elem == DFCCL_BYTE;
    case DFCCL_OP_NONE:
        return 1;
    default:
        return 0;
    }
}

/* The spec with its per-element decisions made once per call. */
typedef struct {
    dfccl_op_t op;
    uint32_t   seed;
    int        nranks;
    bool       is_signed, is_float, is_bool;
    uint64_t   sum_span;   /* SUM values lie in [sum_low, sum_low + sum_span) */
    int64_t    sum_low;
} prepared_spec_t;

static prepared_spec_t prepare(const value_spec_t *spec)
{
    prepared_spec_t p = {
        .op = spec->op, .seed = spec->seed,
        .nranks = spec->nranks > 0 ? spec->nranks : 1,
        .is_signed = elem_is_signed(spec->elem),
        .is_float = elem_is_float(spec->elem),
        .is_bool = spec->elem == DFCCL_BOOL,
    };
    int64_t bound;
    if (p.is_float) {
        bound = 1000;                 /* far inside float's exact integers */
        p.sum_low = -bound;
        p.sum_span = 2 * (uint64_t)bound + 1;
    } else if (p.is_signed) {
        bound = 120 / p.nranks;       /* |sum| <= 120 fits int8 */
        if (bound < 1) bound = 1;
        p.sum_low = -bound;
        p.sum_span = 2 * (uint64_t)bound + 1;
    } else {
        bound = 250 / p.nranks;       /* sum <= 250 fits uint8 */
        if (bound < 1) bound = 1;
        p.sum_low = 0;
        p.sum_span = (uint64_t)bound + 1;
    }
    return p;
}

/* A cheap integer hash: the reference for a 1M-element call evaluates it
 * once per (rank, element), so it must cost a few cycles, not a division. */
static inline uint32_t hash32(int rank, uint64_t index, uint32_t seed)
{
    uint32_t x = (uint32_t)index * 0x9e3779b1u + (uint32_t)(index >> 32) +
                 (uint32_t)rank * 0x85ebca77u + seed;
    x ^= x >> 15;
    x *= 0x2c1b3c6du;
    x ^= x >> 12;
    x *= 0x297a2d39u;
    x ^= x >> 15;
    return x;
}

/* 64 varied bits from one 32-bit hash. */
static inline uint64_t widen(uint32_t h)
{
    uint32_t hi = (h ^ (h >> 16)) * 0x7feb352du;
    return (uint64_t)(hi ^ (hi >> 15)) << 32 | h;
}

/* h scaled onto [0, span) without a division. */
static inline uint64_t scale(uint32_t h, uint64_t span)
{
    return ((uint64_t)h * span) >> 32;
}

static inline int64_t logical_value(const prepared_spec_t *p, uint32_t h, bool zero)
{
    if (zero)
        return 0;
    /* Integers also get 2: any nonzero value must count as true. */
    return p->is_bool ? 1 : 1 + (int64_t)((h >> 8) & 1);
}

/* Rank `rank`'s input at element `index`, before conversion to the type. */
static inline int64_t input_value(const prepared_spec_t *p, int rank, uint64_t index)
{
    uint32_t h = hash32(rank, index, p->seed);
    switch (p->op) {
    case DFCCL_OP_SUM:
        return p->sum_low + (int64_t)scale(h, p->sum_span);
    case DFCCL_OP_PROD: {
        uint64_t n = (uint64_t)p->nranks;
        /* Test the cheap bits first: the modulo runs for a quarter only. */
        if ((h & 3) == 0 && ((uint64_t)rank == index % n ||
                             (uint64_t)rank == (index + 3) % n))
            return 2;
        if ((p->is_signed || p->is_float) && (h & 0x30) == 0x10)
            return -1;
        return 1;
    }
    case DFCCL_OP_MIN: case DFCCL_OP_MAX:
        return p->is_float ? (int64_t)scale(h, 4001) - 2000 : (int64_t)widen(h);
    case DFCCL_OP_LAND:
        return logical_value(p, h, (h & 7) == 0);   /* mostly true */
    case DFCCL_OP_LOR:
        return logical_value(p, h, (h & 7) != 0);   /* mostly false */
    case DFCCL_OP_LXOR:
        return logical_value(p, h, (h & 1) != 0);
    case DFCCL_OP_BAND: {
        uint64_t bits = widen(h);
        return (int64_t)(bits | (bits >> 3));
    }
    case DFCCL_OP_BOR: {
        uint64_t bits = widen(h);
        return (int64_t)(bits & (bits >> 3));
    }
    case DFCCL_OP_BXOR:
        return (int64_t)widen(h);
    default:                                          /* copies */
        if (p->is_bool)
            return (int64_t)(h & 1);
        if (p->is_float)
            return (int64_t)scale(h, 2000001) - 1000000;
        return (int64_t)widen(h);
    }
}

#define FILL_LOOP(T)                                                      \
    do {                                                                  \
        T *out = buf;                                                     \
        for (size_t k = 0; k < n; k++)                                    \
            out[k] = (T)input_value(&p, rank, first_index + k);           \
    } while (0)

void values_fill(void *buf, size_t n, uint64_t first_index, int rank,
                 const value_spec_t *spec)
{
    prepared_spec_t p = prepare(spec);
    switch (spec->elem) {
    case DFCCL_INT8:   FILL_LOOP(int8_t);   break;
    case DFCCL_UINT8:  FILL_LOOP(uint8_t);  break;
    case DFCCL_BYTE:   FILL_LOOP(uint8_t);  break;
    case DFCCL_BOOL:   FILL_LOOP(bool);     break;
    case DFCCL_INT16:  FILL_LOOP(int16_t);  break;
    case DFCCL_UINT16: FILL_LOOP(uint16_t); break;
    case DFCCL_INT32:  FILL_LOOP(int32_t);  break;
    case DFCCL_UINT32: FILL_LOOP(uint32_t); break;
    case DFCCL_INT64:  FILL_LOOP(int64_t);  break;
    case DFCCL_UINT64: FILL_LOOP(uint64_t); break;
    case DFCCL_FLOAT:  FILL_LOOP(float);    break;
    case DFCCL_DOUBLE: FILL_LOOP(double);   break;
    default: break;
    }
}

/* acc starts from rank 0's value passed through INIT, then folds in the
 * other ranks with COMBINE(acc, v). */
#define AS_IS(x) (x)
#define TRUTH(x) ((x) != 0)
#define REDUCE_LOOP(T, INIT, COMBINE)                                     \
    do {                                                                  \
        T *out = buf;                                                     \
        for (size_t k = 0; k < n; k++) {                                  \
            uint64_t index = first_index + k;                             \
            T acc = (T)INIT((T)input_value(&p, 0, index));                \
            for (int r = 1; r < p.nranks; r++) {                          \
                T v = (T)input_value(&p, r, index);                       \
                acc = (T)(COMBINE);                                       \
            }                                                             \
            out[k] = acc;                                                 \
        }                                                                 \
    } while (0)

#define ARITHMETIC_CASES(T)                                               \
    case DFCCL_OP_SUM:  REDUCE_LOOP(T, AS_IS, acc + v); break;            \
    case DFCCL_OP_PROD: REDUCE_LOOP(T, AS_IS, acc * v); break;            \
    case DFCCL_OP_MIN:  REDUCE_LOOP(T, AS_IS, v < acc ? v : acc); break;  \
    case DFCCL_OP_MAX:  REDUCE_LOOP(T, AS_IS, v > acc ? v : acc); break;

#define LOGICAL_CASES(T)                                                  \
    case DFCCL_OP_LAND: REDUCE_LOOP(T, TRUTH, acc && v); break;           \
    case DFCCL_OP_LOR:  REDUCE_LOOP(T, TRUTH, acc || v); break;           \
    case DFCCL_OP_LXOR: REDUCE_LOOP(T, TRUTH, (acc != 0) != (v != 0)); break;

#define BITWISE_CASES(T)                                                  \
    case DFCCL_OP_BAND: REDUCE_LOOP(T, AS_IS, acc & v); break;            \
    case DFCCL_OP_BOR:  REDUCE_LOOP(T, AS_IS, acc | v); break;            \
    case DFCCL_OP_BXOR: REDUCE_LOOP(T, AS_IS, acc ^ v); break;

#define DEFINE_INTEGER_REDUCTION(NAME, T)                                 \
    static void NAME(void *buf, size_t n, uint64_t first_index,           \
                     prepared_spec_t p)                                   \
    {                                                                     \
        switch (p.op) {                                                   \
        ARITHMETIC_CASES(T)                                               \
        LOGICAL_CASES(T)                                                  \
        BITWISE_CASES(T)                                                  \
        default: break;                                                   \
        }                                                                 \
    }

DEFINE_INTEGER_REDUCTION(reduce_int8, int8_t)
DEFINE_INTEGER_REDUCTION(reduce_uint8, uint8_t)
DEFINE_INTEGER_REDUCTION(reduce_int16, int16_t)
DEFINE_INTEGER_REDUCTION(reduce_uint16, uint16_t)
DEFINE_INTEGER_REDUCTION(reduce_int32, int32_t)
DEFINE_INTEGER_REDUCTION(reduce_uint32, uint32_t)
DEFINE_INTEGER_REDUCTION(reduce_int64, int64_t)
DEFINE_INTEGER_REDUCTION(reduce_uint64, uint64_t)

#define DEFINE_FLOAT_REDUCTION(NAME, T)                                   \
    static void NAME(void *buf, size_t n, uint64_t first_index,           \
                     prepared_spec_t p)                                   \
    {                                                                     \
        switch (p.op) {                                                   \
        ARITHMETIC_CASES(T)                                               \
        default: break;                                                   \
        }                                                                 \
    }

DEFINE_FLOAT_REDUCTION(reduce_float, float)
DEFINE_FLOAT_REDUCTION(reduce_double, double)

static void reduce_bool(void *buf, size_t n, uint64_t first_index, prepared_spec_t p)
{
    switch (p.op) {
    LOGICAL_CASES(bool)
    default: break;
    }
}

static void reduce_byte(void *buf, size_t n, uint64_t first_index, prepared_spec_t p)
{
    switch (p.op) {
    BITWISE_CASES(uint8_t)
    default: break;
    }
}

void values_expect_reduction(void *buf, size_t n, uint64_t first_index,
                             const value_spec_t *spec)
{
    /* MPI applies the op only between two operands: a single rank's result
     * is its input unchanged (Open MPI copies it; a logical op therefore
     * leaves 2 as 2). */
    if (spec->nranks <= 1) {
        values_fill(buf, n, first_index, 0, spec);
        return;
    }
    prepared_spec_t p = prepare(spec);
    switch (spec->elem) {
    case DFCCL_INT8:   reduce_int8(buf, n, first_index, p);   break;
    case DFCCL_UINT8:  reduce_uint8(buf, n, first_index, p);  break;
    case DFCCL_INT16:  reduce_int16(buf, n, first_index, p);  break;
    case DFCCL_UINT16: reduce_uint16(buf, n, first_index, p); break;
    case DFCCL_INT32:  reduce_int32(buf, n, first_index, p);  break;
    case DFCCL_UINT32: reduce_uint32(buf, n, first_index, p); break;
    case DFCCL_INT64:  reduce_int64(buf, n, first_index, p);  break;
    case DFCCL_UINT64: reduce_uint64(buf, n, first_index, p); break;
    case DFCCL_FLOAT:  reduce_float(buf, n, first_index, p);  break;
    case DFCCL_DOUBLE: reduce_double(buf, n, first_index, p); break;
    case DFCCL_BOOL:   reduce_bool(buf, n, first_index, p);   break;
    case DFCCL_BYTE:   reduce_byte(buf, n, first_index, p);   break;
    default: break;
    }
}

void values_format(char *out, size_t out_len, const void *element, dfccl_dtype_t elem)
{
    size_t size = value_elem_size(elem);
    unsigned char bytes[8] = { 0 };
    memcpy(bytes, element, size);
    char value[64];
    union { int8_t i8; uint8_t u8; int16_t i16; uint16_t u16; int32_t i32;
            uint32_t u32; int64_t i64; uint64_t u64; float f; double d; } v;
    memcpy(&v, element, size);
    switch (elem) {
    case DFCCL_INT8:   snprintf(value, sizeof value, "%d", v.i8); break;
    case DFCCL_INT16:  snprintf(value, sizeof value, "%d", v.i16); break;
    case DFCCL_INT32:  snprintf(value, sizeof value, "%" PRId32, v.i32); break;
    case DFCCL_INT64:  snprintf(value, sizeof value, "%" PRId64, v.i64); break;
    case DFCCL_UINT8: case DFCCL_BYTE: case DFCCL_BOOL:
                       snprintf(value, sizeof value, "%u", v.u8); break;
    case DFCCL_UINT16: snprintf(value, sizeof value, "%u", v.u16); break;
    case DFCCL_UINT32: snprintf(value, sizeof value, "%" PRIu32, v.u32); break;
    case DFCCL_UINT64: snprintf(value, sizeof value, "%" PRIu64, v.u64); break;
    case DFCCL_FLOAT:  snprintf(value, sizeof value, "%.9g", v.f); break;
    case DFCCL_DOUBLE: snprintf(value, sizeof value, "%.17g", v.d); break;
    default:           snprintf(value, sizeof value, "?"); break;
    }
    char hex[20] = "";
    for (size_t i = 0; i < size; i++)   /* memory order */
        snprintf(hex + 2 * i, sizeof hex - 2 * i, "%02x", bytes[i]);
    snprintf(out, out_len, "%s (0x%s)", value, hex);
}
