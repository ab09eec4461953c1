/* perf_types.c - datatype and op tables, conversions, inputs and reference. */
#include "tools/perf/perf_types.h"

#include <stdint.h>
#include <string.h>

enum { T_FLOAT, T_DOUBLE, T_INT8, T_UINT8, T_INT32, T_UINT32, T_INT64, T_UINT64 };

/* MPI handles are not constant expressions in Open MPI's ABI, so the table is filled lazily. */
static perf_type_t types[] = {
    {"float", MPI_DATATYPE_NULL, sizeof(float), T_FLOAT},
    {"double", MPI_DATATYPE_NULL, sizeof(double), T_DOUBLE},
    {"int8", MPI_DATATYPE_NULL, 1, T_INT8},
    {"uint8", MPI_DATATYPE_NULL, 1, T_UINT8},
    {"int32", MPI_DATATYPE_NULL, 4, T_INT32},
    {"uint32", MPI_DATATYPE_NULL, 4, T_UINT32},
    {"int64", MPI_DATATYPE_NULL, 8, T_INT64},
    {"uint64", MPI_DATATYPE_NULL, 8, T_UINT64},
    {NULL, MPI_DATATYPE_NULL, 0, 0},
};
static perf_op_t ops[] = {
    {"sum", MPI_OP_NULL, PERF_OP_SUM},
    {"prod", MPI_OP_NULL, PERF_OP_PROD},
    {"min", MPI_OP_NULL, PERF_OP_MIN},
    {"max", MPI_OP_NULL, PERF_OP_MAX},
    {NULL, MPI_OP_NULL, 0},
};

static void tables_fill(void)
{
    const MPI_Datatype mpi_types[] = {MPI_FLOAT, MPI_DOUBLE, MPI_INT8_T, MPI_UINT8_T,
                                      MPI_INT32_T, MPI_UINT32_T, MPI_INT64_T, MPI_UINT64_T};
    const MPI_Op mpi_ops[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
    for (int i = 0; types[i].name; i++)
        types[i].mpi = mpi_types[types[i].id];
    for (int i = 0; ops[i].name; i++)
        ops[i].mpi = mpi_ops[ops[i].id];
}

const perf_type_t *perf_type_find(const char *name)
{
    static const struct { const char *alias, *name; } aliases[] = {
        {"int", "int32"}, {"char", "int8"}, {"uint", "uint32"}, {"long", "int64"},
        {"ulong", "uint64"}, {"float32", "float"}, {"float64", "double"}, {NULL, NULL}};
    tables_fill();
    for (int i = 0; aliases[i].alias; i++)
        if (strcmp(name, aliases[i].alias) == 0)
            name = aliases[i].name;
    for (int i = 0; types[i].name; i++)
        if (strcmp(name, types[i].name) == 0)
            return &types[i];
    return NULL;
}

const perf_op_t *perf_op_find(const char *name)
{
    tables_fill();
    for (int i = 0; ops[i].name; i++)
        if (strcmp(name, ops[i].name) == 0)
            return &ops[i];
    return NULL;
}

/* Joins the names of a NULL-name-terminated table with '|': `first` points
 * at the first entry's name, entries are `stride` bytes apart. */
static void join_names(char *out, size_t len, const char *const *first, size_t stride)
{
    out[0] = '\0';
    for (const char *const *name = first; *name;
         name = (const char *const *)((const char *)name + stride)) {
        if (name != first)
            strncat(out, "|", len - strlen(out) - 1);
        strncat(out, *name, len - strlen(out) - 1);
    }
}

void perf_type_names(char *out, size_t len)
{
    join_names(out, len, &types[0].name, sizeof(types[0]));
}

void perf_op_names(char *out, size_t len)
{
    join_names(out, len, &ops[0].name, sizeof(ops[0]));
}

void perf_type_store(const perf_type_t *type, void *buf, size_t idx, double value)
{
    switch (type->id) {
    case T_FLOAT: ((float *)buf)[idx] = (float)value; break;
    case T_DOUBLE: ((double *)buf)[idx] = value; break;
    case T_INT8: ((int8_t *)buf)[idx] = (int8_t)value; break;
    case T_UINT8: ((uint8_t *)buf)[idx] = (uint8_t)value; break;
    case T_INT32: ((int32_t *)buf)[idx] = (int32_t)value; break;
    case T_UINT32: ((uint32_t *)buf)[idx] = (uint32_t)value; break;
    case T_INT64: ((int64_t *)buf)[idx] = (int64_t)value; break;
    case T_UINT64: ((uint64_t *)buf)[idx] = (uint64_t)value; break;
    }
}

double perf_type_load(const perf_type_t *type, const void *buf, size_t idx)
{
    switch (type->id) {
    case T_FLOAT: return ((const float *)buf)[idx];
    case T_DOUBLE: return ((const double *)buf)[idx];
    case T_INT8: return ((const int8_t *)buf)[idx];
    case T_UINT8: return ((const uint8_t *)buf)[idx];
    case T_INT32: return ((const int32_t *)buf)[idx];
    case T_UINT32: return ((const uint32_t *)buf)[idx];
    case T_INT64: return (double)((const int64_t *)buf)[idx];
    case T_UINT64: return (double)((const uint64_t *)buf)[idx];
    }
    return 0.0;
}

double perf_input_value(const perf_op_t *op, int rank, int nranks, size_t idx)
{
    switch (op->id) {
    case PERF_OP_SUM: return (double)((idx + 3u * (size_t)rank) % 4u);
    /* exactly one rank holds 2 per element: the product is 2 at any rank count */
    case PERF_OP_PROD: return (idx + (size_t)rank) % (size_t)nranks == 0 ? 2.0 : 1.0;
    case PERF_OP_MIN:
    case PERF_OP_MAX: return (double)((idx * 5u + 3u * (size_t)rank) % 11u);
    }
    return 0.0;
}

double perf_reference_value(const perf_op_t *op, int nranks, size_t idx)
{
    double acc = perf_input_value(op, 0, nranks, idx);
    for (int r = 1; r < nranks; r++) {
        double v = perf_input_value(op, r, nranks, idx);
        switch (op->id) {
        case PERF_OP_SUM: acc += v; break;
        case PERF_OP_PROD: acc *= v; break;
        case PERF_OP_MIN: acc = v < acc ? v : acc; break;
        case PERF_OP_MAX: acc = v > acc ? v : acc; break;
        }
    }
    return acc;
}
