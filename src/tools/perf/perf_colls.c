/* perf_colls.c - buffer shapes, calls, inputs and result checks per collective. */
#include "tools/perf/perf_colls.h"
#include <mpi-ext.h>   /* after mpi.h (perf_colls.h): MPIX_*_init */

#include <string.h>

static const char *const coll_names[PERF_COLL_COUNT] = {
    "allreduce", "allgather", "reduce_scatter", "reduce_scatter_block"};

const char *perf_coll_name(perf_coll_id_t coll) { return coll_names[coll]; }

int perf_coll_parse(const char *name)
{
    for (int c = 0; c < PERF_COLL_COUNT; c++)
        if (strcmp(name, coll_names[c]) == 0)
            return c;
    return -1;
}

bool perf_coll_reduces(perf_coll_id_t coll) { return coll != PERF_ALLGATHER; }

double perf_coll_busbw_factor(perf_coll_id_t coll, int nranks)
{
    double n = nranks;
    return coll == PERF_ALLREDUCE ? 2.0 * (n - 1.0) / n : (n - 1.0) / n;
}

bool perf_call_shape(perf_call_t *call, size_t bytes)
{
    size_t elements = bytes / call->type->size;
    if (call->coll == PERF_ALLREDUCE) {
        call->count = call->rank_count = elements;
    } else {
        call->rank_count = elements / (size_t)call->nranks;
        call->count = call->rank_count * (size_t)call->nranks;
    }
    for (int r = 0; r < call->nranks; r++)
        call->recv_counts[r] = (int)call->rank_count;
    return call->rank_count > 0;
}

perf_extent_t perf_call_extent(const perf_call_t *call)
{
    size_t element = call->type->size, all = call->count * element,
           mine = call->rank_count * element;
    perf_extent_t e = {.input_in_recv = call->in_place};
    switch (call->coll) {
    case PERF_ALLGATHER:
        /* in place, this rank's block already sits at its offset of the result */
        e.input_offset = call->in_place ? (size_t)call->rank * mine : 0;
        e.input_bytes = mine;
        e.output_bytes = all;
        break;
    case PERF_REDUCE_SCATTER:
    case PERF_REDUCE_SCATTER_BLOCK:
        e.input_bytes = all;
        e.output_bytes = mine;
        break;
    default:  /* allreduce */
        e.input_bytes = e.output_bytes = all;
        break;
    }
    return e;
}

int perf_call_start(const perf_call_t *call, MPI_Request *request, bool init)
{
    const void *send = call->in_place ? MPI_IN_PLACE : call->send;
    MPI_Datatype dt = call->type->mpi;
    MPI_Op op = call->op->mpi;
    MPI_Comm comm = call->comm;
    void *recv = call->recv;
    int n = (int)call->rank_count;
    switch (call->coll) {
    case PERF_ALLREDUCE:
        return init      ? MPIX_Allreduce_init(send, recv, n, dt, op, comm, MPI_INFO_NULL, request)
               : request ? MPI_Iallreduce(send, recv, n, dt, op, comm, request)
                         : MPI_Allreduce(send, recv, n, dt, op, comm);
    case PERF_ALLGATHER:
        return init ? MPIX_Allgather_init(send, n, dt, recv, n, dt, comm, MPI_INFO_NULL, request)
               : request ? MPI_Iallgather(send, n, dt, recv, n, dt, comm, request)
                         : MPI_Allgather(send, n, dt, recv, n, dt, comm);
    case PERF_REDUCE_SCATTER:
        return init ? MPIX_Reduce_scatter_init(send, recv, call->recv_counts, dt, op, comm,
                                               MPI_INFO_NULL, request)
               : request ? MPI_Ireduce_scatter(send, recv, call->recv_counts, dt, op, comm, request)
                         : MPI_Reduce_scatter(send, recv, call->recv_counts, dt, op, comm);
    case PERF_REDUCE_SCATTER_BLOCK:
        return init ? MPIX_Reduce_scatter_block_init(send, recv, n, dt, op, comm, MPI_INFO_NULL,
                                                     request)
               : request ? MPI_Ireduce_scatter_block(send, recv, n, dt, op, comm, request)
                         : MPI_Reduce_scatter_block(send, recv, n, dt, op, comm);
    default:
        return MPI_ERR_ARG;
    }
}

void perf_call_fill(const perf_call_t *call)
{
    const perf_type_t *t = call->type;
    size_t rc = call->rank_count;
    switch (call->coll) {
    case PERF_ALLREDUCE:
    case PERF_REDUCE_SCATTER:
    case PERF_REDUCE_SCATTER_BLOCK: {
        void *in = call->in_place ? call->recv : call->send;
        for (size_t i = 0; i < call->count; i++)
            perf_type_store(t, in, i, perf_input_value(call->op, call->rank, call->nranks, i));
        break;
    }
    case PERF_ALLGATHER: {
        /* in place, this rank's block already sits at its offset of the result */
        size_t offset = call->in_place ? (size_t)call->rank * rc : 0;
        void *in = call->in_place ? call->recv : call->send;
        for (size_t i = 0; i < rc; i++)
            perf_type_store(t, in, offset + i,
                            perf_input_value(call->op, call->rank, call->nranks, i));
        break;
    }
    default:
        break;
    }
}

size_t perf_call_wrong(const perf_call_t *call)
{
    const perf_type_t *t = call->type;
    size_t rc = call->rank_count, wrong = 0;
    switch (call->coll) {
    case PERF_ALLREDUCE:
        for (size_t i = 0; i < call->count; i++)
            wrong += perf_type_load(t, call->recv, i) !=
                     perf_reference_value(call->op, call->nranks, i);
        break;
    case PERF_ALLGATHER:
        for (int r = 0; r < call->nranks; r++)
            for (size_t i = 0; i < rc; i++)
                wrong += perf_type_load(t, call->recv, (size_t)r * rc + i) !=
                         perf_input_value(call->op, r, call->nranks, i);
        break;
    case PERF_REDUCE_SCATTER:
    case PERF_REDUCE_SCATTER_BLOCK:
        for (size_t i = 0; i < rc; i++)
            wrong += perf_type_load(t, call->recv, i) !=
                     perf_reference_value(call->op, call->nranks,
                                          (size_t)call->rank * rc + i);
        break;
    default:
        break;
    }
    return wrong;
}
