/*
 * coll_dfccl_types.c - which MPI datatypes and ops the engine carries, under
 * MPI's rules for predefined reductions (everything else falls back), and
 * the MPI error class of each engine status.
 */
#include <stdbool.h>
#include "coll_dfccl.h"

/* Predefined types by handle. Several MPI types share one internal id
 * (MPI_BYTE and MPI_UNSIGNED_CHAR, for one), so the id cannot tell them apart. */
#define DFCCL_MAX_TYPES 32
static struct { MPI_Datatype handle; dfccl_dtype_t engine; } known_types[DFCCL_MAX_TYPES];
static int n_known_types;

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
    known_types[n_known_types].handle = handle;
    known_types[n_known_types].engine = engine_type;
    n_known_types++;
}

void mca_coll_dfccl_types_init(void)
{
    n_known_types = 0;
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

static bool lookup_type(ompi_datatype_t *dtype, dfccl_dtype_t *engine_type)
{
    for (int i = 0; i < n_known_types; i++) {
        if ((MPI_Datatype)dtype == known_types[i].handle) {
            *engine_type = known_types[i].engine;
            return true;
        }
    }
    return false;
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
    if (dtype == NULL || op == NULL || !lookup_type(dtype, engine_dtype)) return false;
    if (!map_op(op, engine_op)) return false;
    /* MPI's rules: SUM/PROD/MIN/MAX on integers and floats, logical ops on
     * integers and C_BOOL, bitwise ops on integers and BYTE */
    return dfccl_op_supported(*engine_op, *engine_dtype) != 0;
}

/* Allgather moves bytes: any datatype whose `count` elements lie contiguous
 * in memory (predefined, or derived like MPI_Type_contiguous(4, MPI_DOUBLE)),
 * so that ranks describing the same data differently take the same route.
 * *offset: where the data starts relative to the buffer (the true lower
 * bound). Non-contiguous layouts take the stock path. */
bool mca_coll_dfccl_map_gather_type(ompi_datatype_t *dtype, int count, size_t *bytes,
                                    ptrdiff_t *offset)
{
    ptrdiff_t true_lb = 0, true_extent = 0;
    size_t size;

    if (dtype == NULL || (MPI_Datatype)dtype == MPI_DATATYPE_NULL || count < 0) return false;
    ompi_datatype_type_size(dtype, &size);
    if (count > 0 && size > 0 && !ompi_datatype_is_contiguous_memory_layout(dtype, count))
        return false;
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    *bytes = size * (size_t)count;
    *offset = *bytes > 0 ? true_lb : 0;
    return true;
}

/* An engine status as the MPI error a request or call returns. */
int mca_coll_dfccl_request_error(dfccl_status_t status)
{
    switch (status) {
    case DFCCL_OK:                return MPI_SUCCESS;
    case DFCCL_ERR_INVALID_PARAM: return MPI_ERR_ARG;
    case DFCCL_ERR_NO_MEMORY:     return MPI_ERR_NO_MEM;
    case DFCCL_ERR_MISMATCH:      /* the engine printed which rank and what differs */
    case DFCCL_ERR_PEER_FAILED:   /* ... which peer failed */
    case DFCCL_ERR_BROKEN:        /* ... the earlier failure */
    case DFCCL_ERR_TIMEOUT:       /* the engine printed what it waited for */
    case DFCCL_ERR_SHUTDOWN:
    case DFCCL_ERR_SYSTEM:
    case DFCCL_ERR_BOOTSTRAP:     return MPI_ERR_OTHER;
    default:                      return MPI_ERR_INTERN;
    }
}
