/*
 * perf_colls.h - the collectives dfccl_perf measures: how a sweep size maps
 * to buffers (nccl-tests' convention), how to start one call, how to
 * prepare inputs and check a result, and the bus-bandwidth factor.
 */
#ifndef DFCCL_PERF_COLLS_H
#define DFCCL_PERF_COLLS_H

#include <stdbool.h>
#include <stddef.h>
#include <mpi.h>

#include "tools/perf/perf_types.h"

typedef enum {
    PERF_ALLREDUCE, PERF_ALLGATHER, PERF_REDUCE_SCATTER, PERF_REDUCE_SCATTER_BLOCK,
    PERF_COLL_COUNT
} perf_coll_id_t;

/* One measurement's buffers and parameters. */
typedef struct {
    perf_coll_id_t coll;
    const perf_type_t *type;
    const perf_op_t *op;
    bool in_place;
    int rank, nranks;
    size_t count;        /* elements of the size column: total for allgather/reduce_scatter */
    size_t rank_count;   /* elements each rank contributes (allgather) or receives (reduce_scatter) */
    void *send, *recv;
    int *recv_counts;    /* MPI_Reduce_scatter's array, nranks entries of rank_count */
    MPI_Comm comm;
} perf_call_t;

/*
 * The bytes one call reads and writes on this rank: the input (in the send
 * buffer, or in place at in_offset of the receive buffer) and the output at
 * the start of the receive buffer. Staging copies exactly these, the check
 * downloads the output, and the device floor counts them over all ranks.
 */
typedef struct {
    bool input_in_recv;
    size_t input_offset, input_bytes, output_bytes;
} perf_extent_t;

const char *perf_coll_name(perf_coll_id_t coll);
/* Parses one collective's name; returns -1 when unknown. */
int perf_coll_parse(const char *name);
/* Whether the collective reduces (has an op column other than "none"). */
bool perf_coll_reduces(perf_coll_id_t coll);
/* busbw = algbw x this, as nccl-tests: 2(n-1)/n for allreduce, (n-1)/n for the others. */
double perf_coll_busbw_factor(perf_coll_id_t coll, int nranks);

/*
 * Sets count and rank_count for a sweep size in bytes; returns false when
 * the size holds no whole element per rank (the row is skipped).
 */
bool perf_call_shape(perf_call_t *call, size_t bytes);
perf_extent_t perf_call_extent(const perf_call_t *call);
/* Starts one call: blocking when request is NULL, the I-form otherwise; with
 * init, makes the persistent form's inactive request instead (Open MPI's
 * MPIX_*_init), which MPI_Start runs. */
int perf_call_start(const perf_call_t *call, MPI_Request *request, bool init);
/* Writes this rank's inputs (where in-place puts them: the receive buffer). */
void perf_call_fill(const perf_call_t *call);
/* Counts the elements of this rank's result that differ from the reference. */
size_t perf_call_wrong(const perf_call_t *call);

#endif
