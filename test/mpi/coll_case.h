/*
 * coll_case.h - one collective call with buffers of its own, so that many
 * can be in flight at once: deterministic input (coll_values.c), the exact
 * expected result, poisoned output, start (blocking or not) and a
 * bit-exact check afterwards.
 *
 * count means what it means in coll_check: allreduce, elements per buffer;
 * allgather, elements each rank contributes; reduce_scatter, elements of the
 * reduced vector, split unevenly; reduce_scatter_block, the reduced vector's
 * length rounded up to a multiple of the communicator size.
 */
#ifndef DFCCL_TEST_COLL_CASE_H
#define DFCCL_TEST_COLL_CASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <mpi.h>
#include <mpi-ext.h>   /* MPIX_*_init: Open MPI's persistent collectives */

#include "coll_values.h"
#include "include/dfccl.h"
#include "test_memory.h"

typedef enum {
    CASE_ALLREDUCE, CASE_ALLGATHER, CASE_REDUCE_SCATTER,
    CASE_REDUCE_SCATTER_BLOCK, CASE_KIND_COUNT
} case_kind_t;

/* A carried (MPI type, op) pair; op is DFCCL_OP_NONE for allgather. */
typedef struct {
    MPI_Datatype  mpi;
    const char   *name;
    dfccl_dtype_t elem;
    dfccl_op_t    op;
} case_type_t;

/* The (type, op) pairs the tests draw from: every element size, integer
 * and float, several ops. */
extern const case_type_t case_reduce_types[];
extern const size_t case_reduce_type_count;
extern const case_type_t case_gather_types[];
extern const size_t case_gather_type_count;

typedef struct {
    case_kind_t       kind;
    const case_type_t *type;
    size_t            count;
    uint32_t          seed;
    MPI_Comm          comm;
    test_memory_kind_t memory;   /* where the buffers MPI sees live */
    /* filled by coll_case_prepare */
    int               size, me;
    size_t            result_bytes, send_bytes;
    /* send, recv: host images, built and checked on the host; send_buffer,
     * recv_buffer: what MPI gets (the same pointers in host memory). */
    unsigned char    *send, *recv, *expected;
    void             *send_buffer, *recv_buffer;
    int              *recvcounts;
    int               block_count;
    size_t            result_elems;
} coll_case_t;

const char *coll_case_kind_name(case_kind_t kind);
/* False when every rank's part is empty: Open MPI's MPI layer may then
 * return before any component sees the call (so no engine counter rises). */
bool coll_case_moves_data(const coll_case_t *c);
dfccl_coll_type_t coll_case_engine_kind(case_kind_t kind);

/* Picks a type for kind: reduce pairs, or allgather types. */
const case_type_t *coll_case_pick_type(case_kind_t kind, uint64_t draw);

/* Element count giving about `bytes` of data per call (at least 1). */
size_t coll_case_count_for_bytes(case_kind_t kind, const case_type_t *type,
                                 size_t bytes, int comm_size);

/* Allocates and fills the buffers; returns 0, or -1 when out of memory. */
int coll_case_prepare(coll_case_t *c);
/* Refills input and poisons output (on the device too), so the case can
 * run again. */
void coll_case_reset(coll_case_t *c);
int coll_case_start(coll_case_t *c, MPI_Request *request);
/* The persistent form (Open MPI's MPIX_*_init): an inactive request that
 * MPI_Start runs, on the case's buffers as they are at each start. */
int coll_case_init(coll_case_t *c, MPI_Request *request);
/* New input values (and the expected result), refilled and poisoned as by
 * coll_case_reset: a run that reads stale input fails the check. */
void coll_case_reseed(coll_case_t *c, uint32_t seed);
int coll_case_run_blocking(coll_case_t *c);
/* 1 when the output is exactly right; else 0 with the first wrong element
 * described in why. Device output is fetched into the host image first. */
int coll_case_verify(const coll_case_t *c, char *why, size_t why_len);
void coll_case_free(coll_case_t *c);

/* "error N: text" of an MPI error code. */
void coll_case_error_text(int rc, char *out, size_t out_len);

#endif /* DFCCL_TEST_COLL_CASE_H */
