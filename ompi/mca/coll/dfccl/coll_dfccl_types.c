/*
 * coll_dfccl_types.c - which MPI datatypes and ops the engine carries, under
 * MPI's rules for predefined reductions; everything else falls back.
 */
#include <stdbool.h>
#include "coll_dfccl.h"

/* engine type of each predefined MPI type, indexed by the type's id; -1: none */
static int dtype_by_id[OMPI_DATATYPE_MAX_PREDEFINED];

static dfccl_dtype_t int_type(size_t size, bool is_signed)
{
    switch (size) {
    case 1:  return is_signed ? DFCCL_INT8 : DFCCL_UINT8;
    case 2:  return is_signed ? DFCCL_INT16 : DFCCL_UINT16;
    case 4:  return is_signed ? DFCCL_INT32 : DFCCL_UINT32;
    default: return is_signed ? DFCCL_INT64 : DFCCL_UINT64;
    }
}

static void map_type(MPI_Datatype handle, dfccl_dtype_t engine_type)
{
    ompi_datatype_t *dt = (ompi_datatype_t *)handle;
    if (dt->id >= 0 && dt->id < OMPI_DATATYPE_MAX_PREDEFINED) dtype_by_id[dt->id] = engine_type;
}

void mca_coll_dfccl_types_init(void)
{
    for (int i = 0; i < OMPI_DATATYPE_MAX_PREDEFINED; i++) dtype_by_id[i] = -1;
    map_type(MPI_SIGNED_CHAR, DFCCL_INT8);
    map_type(MPI_UNSIGNED_CHAR, DFCCL_UINT8);
    map_type(MPI_SHORT, int_type(sizeof(short), true));
    map_type(MPI_UNSIGNED_SHORT, int_type(sizeof(short), false));
    map_type(MPI_INT, int_type(sizeof(int), true));
    map_type(MPI_UNSIGNED, int_type(sizeof(int), false));
    map_type(MPI_LONG, int_type(sizeof(long), true));
    map_type(MPI_UNSIGNED_LONG, int_type(sizeof(long), false));
    map_type(MPI_LONG_LONG, int_type(sizeof(long long), true));
    map_type(MPI_UNSIGNED_LONG_LONG, int_type(sizeof(long long), false));
    map_type(MPI_INT8_T, DFCCL_INT8);
    map_type(MPI_UINT8_T, DFCCL_UINT8);
    map_type(MPI_INT16_T, DFCCL_INT16);
    map_type(MPI_UINT16_T, DFCCL_UINT16);
    map_type(MPI_INT32_T, DFCCL_INT32);
    map_type(MPI_UINT32_T, DFCCL_UINT32);
    map_type(MPI_INT64_T, DFCCL_INT64);
    map_type(MPI_UINT64_T, DFCCL_UINT64);
    map_type(MPI_FLOAT, DFCCL_FLOAT);
    map_type(MPI_DOUBLE, DFCCL_DOUBLE);
    if (sizeof(_Bool) == 1) map_type(MPI_C_BOOL, DFCCL_BOOL);
    map_type(MPI_BYTE, DFCCL_BYTE);
}

static bool map_op(struct ompi_op_t *op, dfccl_op_t *engine_op)
{
    /* predefined ops by handle; user ops, MAXLOC, MINLOC, REPLACE fall back */
    static const struct { MPI_Op handle; dfccl_op_t engine; } ops[] = {
        { MPI_SUM, DFCCL_OP_SUM },   { MPI_PROD, DFCCL_OP_PROD }, { MPI_MIN, DFCCL_OP_MIN },
        { MPI_MAX, DFCCL_OP_MAX },   { MPI_LAND, DFCCL_OP_LAND }, { MPI_LOR, DFCCL_OP_LOR },
        { MPI_LXOR, DFCCL_OP_LXOR }, { MPI_BAND, DFCCL_OP_BAND }, { MPI_BOR, DFCCL_OP_BOR },
        { MPI_BXOR, DFCCL_OP_BXOR },
    };
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        if (op == ops[i].handle) {
            *engine_op = ops[i].engine;
            return true;
        }
    }
    return false;
}

bool mca_coll_dfccl_map_reduction(ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  dfccl_dtype_t *engine_dtype, dfccl_op_t *engine_op)
{
    if (dtype == NULL || op == NULL || !ompi_datatype_is_predefined(dtype)) return false;
    if (dtype->id < 0 || dtype->id >= OMPI_DATATYPE_MAX_PREDEFINED || dtype_by_id[dtype->id] < 0)
        return false;
    if (!map_op(op, engine_op)) return false;
    *engine_dtype = (dfccl_dtype_t)dtype_by_id[dtype->id];
    /* MPI's rules: SUM/PROD/MIN/MAX on integers and floats, logical ops on
     * integers and C_BOOL, bitwise ops on integers and BYTE */
    return dfccl_op_supported(*engine_op, *engine_dtype) != 0;
}

/* Allgather moves bytes, but only of the datatypes the engine knows (the
 * reductions' list, MPI_BYTE, and MPI_CHAR, which shares int8's id). */
bool mca_coll_dfccl_map_gather_type(ompi_datatype_t *dtype, int count, size_t *bytes)
{
    size_t size;

    if (dtype == NULL || count < 0 || !ompi_datatype_is_predefined(dtype)) return false;
    if (dtype->id < 0 || dtype->id >= OMPI_DATATYPE_MAX_PREDEFINED || dtype_by_id[dtype->id] < 0)
        return false;
    ompi_datatype_type_size(dtype, &size);
    *bytes = size * (size_t)count;
    return true;
}
