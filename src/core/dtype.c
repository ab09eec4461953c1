/* dtype.c - names, sizes and the (op, type) table of what the engine carries. */
#include "include/dfccl.h"
#include "core/reduce.h"

static const struct { const char *name; size_t size; } dtypes[DFCCL_DTYPE_COUNT] = {
    [DFCCL_INT8]   = { "int8", 1 },   [DFCCL_UINT8]  = { "uint8", 1 },
    [DFCCL_INT16]  = { "int16", 2 },  [DFCCL_UINT16] = { "uint16", 2 },
    [DFCCL_INT32]  = { "int32", 4 },  [DFCCL_UINT32] = { "uint32", 4 },
    [DFCCL_INT64]  = { "int64", 8 },  [DFCCL_UINT64] = { "uint64", 8 },
    [DFCCL_FLOAT]  = { "float", 4 },  [DFCCL_DOUBLE] = { "double", 8 },
    [DFCCL_BOOL]   = { "bool", 1 },   [DFCCL_BYTE]   = { "byte", 1 },
    [DFCCL_FLOAT16] = { "float16", 2 }, [DFCCL_BFLOAT16] = { "bfloat16", 2 },
};

static const char *const op_names[DFCCL_OP_COUNT + 1] = {
    "sum", "prod", "min", "max", "land", "lor", "lxor", "band", "bor", "bxor", "none"
};

size_t dfccl_dtype_size(dfccl_dtype_t dtype)
{
    return (unsigned)dtype < DFCCL_DTYPE_COUNT ? dtypes[dtype].size : 0;
}

const char *dfccl_dtype_name(dfccl_dtype_t dtype)
{
    return (unsigned)dtype < DFCCL_DTYPE_COUNT ? dtypes[dtype].name : "invalid";
}

const char *dfccl_op_name(dfccl_op_t op)
{
    return (unsigned)op <= DFCCL_OP_COUNT ? op_names[op] : "invalid";
}

int dfccl_op_supported(dfccl_op_t op, dfccl_dtype_t dtype)
{
    unsigned char a = 0, b = 0, r;
    /* the reduction table is the single source of truth: ask it on one element */
    if ((unsigned)op >= DFCCL_OP_COUNT || (unsigned)dtype >= DFCCL_DTYPE_COUNT) return 0;
    if (dfccl_dtype_size(dtype) != 1) {
        unsigned long long x = 0, y = 0, z;
        return dfccl_reduce_strided(&z, &x, &y, 1, 0, 1, dtype, op);
    }
    return dfccl_reduce_strided(&r, &a, &b, 1, 0, 1, dtype, op);
}

const char *dfccl_coll_type_name(dfccl_coll_type_t type)
{
    switch (type) {
    case DFCCL_COLL_ALLREDUCE:      return "allreduce";
    case DFCCL_COLL_ALLGATHER:      return "allgather";
    case DFCCL_COLL_REDUCE_SCATTER: return "reduce_scatter";
    default:                        return "invalid";
    }
}

const char *dfccl_status_string(dfccl_status_t status)
{
    switch (status) {
    case DFCCL_OK:                return "success";
    case DFCCL_INPROGRESS:        return "in progress";
    case DFCCL_ERR_INVALID_PARAM: return "invalid parameter";
    case DFCCL_ERR_NO_MEMORY:     return "out of memory";
    case DFCCL_ERR_SYSTEM:        return "system call failed";
    case DFCCL_ERR_BOOTSTRAP:     return "bootstrap exchange failed";
    case DFCCL_ERR_TIMEOUT:       return "no progress before the timeout";
    case DFCCL_ERR_UNSUPPORTED:   return "unsupported";
    case DFCCL_ERR_SHUTDOWN:      return "engine shut down";
    case DFCCL_ERR_MISMATCH:      return "the ranks' calls do not match";
    case DFCCL_ERR_PEER_FAILED:   return "a peer failed";
    case DFCCL_ERR_BROKEN:        return "an earlier collective on this communicator failed";
    default:                      return "unknown status";
    }
}
