/*
 * coll_case.c - self-contained collective calls for the disorder tests
 * (see coll_case.h).
 */
#include "coll_case.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD_BYTES 64
#define GUARD_BYTE 0xa5

const case_type_t case_reduce_types[] = {
    { MPI_INT,           "MPI_INT",           DFCCL_INT32,  DFCCL_OP_SUM },
    { MPI_FLOAT,         "MPI_FLOAT",         DFCCL_FLOAT,  DFCCL_OP_SUM },
    { MPI_DOUBLE,        "MPI_DOUBLE",        DFCCL_DOUBLE, DFCCL_OP_MAX },
    { MPI_LONG,          "MPI_LONG",          DFCCL_INT64,  DFCCL_OP_MIN },
    { MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", DFCCL_UINT8,  DFCCL_OP_BXOR },
    { MPI_SHORT,         "MPI_SHORT",         DFCCL_INT16,  DFCCL_OP_PROD },
    { MPI_UNSIGNED,      "MPI_UNSIGNED",      DFCCL_UINT32, DFCCL_OP_BOR },
    { MPI_C_BOOL,        "MPI_C_BOOL",        DFCCL_BOOL,   DFCCL_OP_LXOR },
};
const size_t case_reduce_type_count = sizeof case_reduce_types / sizeof case_reduce_types[0];

const case_type_t case_gather_types[] = {
    { MPI_CHAR,     "MPI_CHAR",     DFCCL_INT8,   DFCCL_OP_NONE },
    { MPI_INT,      "MPI_INT",      DFCCL_INT32,  DFCCL_OP_NONE },
    { MPI_DOUBLE,   "MPI_DOUBLE",   DFCCL_DOUBLE, DFCCL_OP_NONE },
    { MPI_UINT16_T, "MPI_UINT16_T", DFCCL_UINT16, DFCCL_OP_NONE },
};
const size_t case_gather_type_count = sizeof case_gather_types / sizeof case_gather_types[0];

const char *coll_case_kind_name(case_kind_t kind)
{
    static const char *const names[CASE_KIND_COUNT] = {
        "allreduce", "allgather", "reduce_scatter", "reduce_scatter_block"
    };
    return kind < CASE_KIND_COUNT ? names[kind] : "?";
}

dfccl_coll_type_t coll_case_engine_kind(case_kind_t kind)
{
    switch (kind) {
    case CASE_ALLREDUCE: return DFCCL_COLL_ALLREDUCE;
    case CASE_ALLGATHER: return DFCCL_COLL_ALLGATHER;
    default:             return DFCCL_COLL_REDUCE_SCATTER;
    }
}

const case_type_t *coll_case_pick_type(case_kind_t kind, uint64_t draw)
{
    if (kind == CASE_ALLGATHER)
        return &case_gather_types[draw % case_gather_type_count];
    return &case_reduce_types[draw % case_reduce_type_count];
}

size_t coll_case_count_for_bytes(case_kind_t kind, const case_type_t *type,
                                 size_t bytes, int comm_size)
{
    size_t count = bytes / value_elem_size(type->elem);
    /* allgather's count is per rank: divide so the whole call moves about
     * `bytes`, like the reductions do. */
    if (kind == CASE_ALLGATHER)
        count /= (size_t)comm_size;
    return count > 0 ? count : 1;
}

/* Ratio 2:0:3:1 repeating, as in coll_check: some ranks get nothing. */
static void reduce_scatter_counts(size_t count, int size, int *recvcounts)
{
    static const unsigned weights[4] = { 2, 0, 3, 1 };
    for (int r = 0; r < size; r++)
        recvcounts[r] = (int)(count * weights[r % 4] / (2 * (size_t)size));
}

static value_spec_t spec_of(const coll_case_t *c)
{
    value_spec_t spec = {
        .elem = c->type->elem, .op = c->type->op, .seed = c->seed,
        .nranks = c->size,
    };
    return spec;
}

/* Elements of this rank's input and where its result starts in the
 * reduced vector. */
static size_t input_elems(const coll_case_t *c, uint64_t *result_first)
{
    size_t total = 0;
    *result_first = 0;
    switch (c->kind) {
    case CASE_ALLREDUCE:
    case CASE_ALLGATHER:
        return c->count;
    case CASE_REDUCE_SCATTER:
        for (int r = 0; r < c->size; r++) {
            if (r == c->me)
                *result_first = total;
            total += (size_t)c->recvcounts[r];
        }
        return total;
    default:
        *result_first = (uint64_t)c->me * (uint64_t)c->block_count;
        return (size_t)c->size * (size_t)c->block_count;
    }
}

int coll_case_prepare(coll_case_t *c)
{
    MPI_Comm_size(c->comm, &c->size);
    MPI_Comm_rank(c->comm, &c->me);
    size_t esize = value_elem_size(c->type->elem);
    c->recvcounts = calloc((size_t)c->size, sizeof *c->recvcounts);
    if (c->recvcounts == NULL)
        return -1;
    c->block_count = (int)((c->count + (size_t)c->size - 1) / (size_t)c->size);
    reduce_scatter_counts(c->count, c->size, c->recvcounts);

    size_t result_elems;
    switch (c->kind) {
    case CASE_ALLREDUCE:       result_elems = c->count; break;
    case CASE_ALLGATHER:       result_elems = (size_t)c->size * c->count; break;
    case CASE_REDUCE_SCATTER:  result_elems = (size_t)c->recvcounts[c->me]; break;
    default:                   result_elems = (size_t)c->block_count; break;
    }
    uint64_t first;
    size_t inputs = input_elems(c, &first);
    c->result_bytes = result_elems * esize;
    c->send_bytes = inputs * esize;
    c->send = malloc(c->send_bytes + 1);
    c->recv = malloc(c->result_bytes + GUARD_BYTES);
    c->expected = malloc(c->result_bytes + 1);
    if (c->send == NULL || c->recv == NULL || c->expected == NULL)
        return -1;
    if (c->memory == TEST_MEMORY_HOST) {
        c->send_buffer = c->send;
        c->recv_buffer = c->recv;
    } else {
        c->send_buffer = test_memory_alloc(c->memory, c->send_bytes + 1);
        c->recv_buffer = test_memory_alloc(c->memory, c->result_bytes + GUARD_BYTES);
        if (c->send_buffer == NULL || c->recv_buffer == NULL)
            return -1;
    }

    c->result_elems = result_elems;
    coll_case_reseed(c, c->seed);
    return 0;
}

void coll_case_reseed(coll_case_t *c, uint32_t seed)
{
    size_t esize = value_elem_size(c->type->elem);
    uint64_t first;

    c->seed = seed;
    input_elems(c, &first);
    value_spec_t spec = spec_of(c);
    if (c->kind == CASE_ALLGATHER) {
        for (int r = 0; r < c->size; r++)
            values_fill(c->expected + (size_t)r * c->count * esize, c->count, 0, r, &spec);
    } else {
        values_expect_reduction(c->expected, c->result_elems, first, &spec);
    }
    coll_case_reset(c);
}

void coll_case_reset(coll_case_t *c)
{
    uint64_t first;
    size_t inputs = input_elems(c, &first);
    value_spec_t spec = spec_of(c);
    values_fill(c->send, inputs, 0, c->me, &spec);
    /* Every result byte starts as the complement of its expected value, so
     * a call that leaves a byte unwritten fails. */
    for (size_t i = 0; i < c->result_bytes; i++)
        c->recv[i] = (unsigned char)~c->expected[i];
    memset(c->recv + c->result_bytes, GUARD_BYTE, GUARD_BYTES);
    /* Device mode: the poison and guard bytes go along with the input. */
    test_memory_to_buffer(c->memory, c->send_buffer, c->send, c->send_bytes);
    test_memory_to_buffer(c->memory, c->recv_buffer, c->recv, c->result_bytes + GUARD_BYTES);
}

int coll_case_start(coll_case_t *c, MPI_Request *request)
{
    MPI_Datatype type = c->type->mpi;
    MPI_Op op = test_mpi_op(c->type->op);
    void *send = c->send_buffer, *recv = c->recv_buffer;
    switch (c->kind) {
    case CASE_ALLREDUCE:
        return MPI_Iallreduce(send, recv, (int)c->count, type, op, c->comm, request);
    case CASE_ALLGATHER:
        return MPI_Iallgather(send, (int)c->count, type, recv, (int)c->count, type,
                              c->comm, request);
    case CASE_REDUCE_SCATTER:
        return MPI_Ireduce_scatter(send, recv, c->recvcounts, type, op, c->comm, request);
    default:
        return MPI_Ireduce_scatter_block(send, recv, c->block_count, type, op, c->comm,
                                         request);
    }
}

int coll_case_init(coll_case_t *c, MPI_Request *request)
{
    MPI_Datatype type = c->type->mpi;
    MPI_Op op = test_mpi_op(c->type->op);
    void *send = c->send_buffer, *recv = c->recv_buffer;
    switch (c->kind) {
    case CASE_ALLREDUCE:
        return MPIX_Allreduce_init(send, recv, (int)c->count, type, op, c->comm, MPI_INFO_NULL,
                                   request);
    case CASE_ALLGATHER:
        return MPIX_Allgather_init(send, (int)c->count, type, recv, (int)c->count, type,
                                   c->comm, MPI_INFO_NULL, request);
    case CASE_REDUCE_SCATTER:
        return MPIX_Reduce_scatter_init(send, recv, c->recvcounts, type, op, c->comm,
                                        MPI_INFO_NULL, request);
    default:
        return MPIX_Reduce_scatter_block_init(send, recv, c->block_count, type, op, c->comm,
                                              MPI_INFO_NULL, request);
    }
}

int coll_case_run_blocking(coll_case_t *c)
{
    MPI_Datatype type = c->type->mpi;
    MPI_Op op = test_mpi_op(c->type->op);
    void *send = c->send_buffer, *recv = c->recv_buffer;
    switch (c->kind) {
    case CASE_ALLREDUCE:
        return MPI_Allreduce(send, recv, (int)c->count, type, op, c->comm);
    case CASE_ALLGATHER:
        return MPI_Allgather(send, (int)c->count, type, recv, (int)c->count, type, c->comm);
    case CASE_REDUCE_SCATTER:
        return MPI_Reduce_scatter(send, recv, c->recvcounts, type, op, c->comm);
    default:
        return MPI_Reduce_scatter_block(send, recv, c->block_count, type, op, c->comm);
    }
}

int coll_case_verify(const coll_case_t *c, char *why, size_t why_len)
{
    size_t esize = value_elem_size(c->type->elem);
    test_memory_from_buffer(c->memory, c->recv, c->recv_buffer, c->result_bytes + GUARD_BYTES);
    if (memcmp(c->recv, c->expected, c->result_bytes) != 0) {
        size_t index = 0;
        while (memcmp(c->recv + index * esize, c->expected + index * esize, esize) == 0)
            index++;
        char got[64], want[64];
        values_format(got, sizeof got, c->recv + index * esize, c->type->elem);
        values_format(want, sizeof want, c->expected + index * esize, c->type->elem);
        snprintf(why, why_len, "index %zu: got %s, expected %s", index, got, want);
        return 0;
    }
    for (size_t i = 0; i < GUARD_BYTES; i++) {
        if (c->recv[c->result_bytes + i] != GUARD_BYTE) {
            snprintf(why, why_len, "wrote past the end of recvbuf (byte %zu)",
                     c->result_bytes + i);
            return 0;
        }
    }
    return 1;
}

void coll_case_free(coll_case_t *c)
{
    if (c->memory != TEST_MEMORY_HOST) {
        test_memory_free(c->memory, c->send_buffer);
        test_memory_free(c->memory, c->recv_buffer);
    }
    c->send_buffer = c->recv_buffer = NULL;
    free(c->send);
    free(c->recv);
    free(c->expected);
    free(c->recvcounts);
    c->send = c->recv = c->expected = NULL;
    c->recvcounts = NULL;
}

void coll_case_error_text(int rc, char *out, size_t out_len)
{
    char message[MPI_MAX_ERROR_STRING];
    int length = 0;
    message[0] = '\0';
    MPI_Error_string(rc, message, &length);
    snprintf(out, out_len, "error %d: %s", rc, message);
}

bool coll_case_moves_data(const coll_case_t *c)
{
    switch (c->kind) {
    case CASE_REDUCE_SCATTER:
        for (int r = 0; r < c->size; r++)
            if (c->recvcounts[r] > 0) return true;
        return false;
    case CASE_REDUCE_SCATTER_BLOCK:
        return c->block_count > 0;
    default:
        return c->count > 0;
    }
}
