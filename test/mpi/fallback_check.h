/* fallback_check.h - what the parts of fallback_check share: the run's
 * context, the communicator a case runs on, and the recording helpers. */
#ifndef FALLBACK_CHECK_H
#define FALLBACK_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <mpi.h>

#include "coll_calls.h"
#include "include/dfccl.h"
#include "test_util.h"

#define MAX_ELEMS 4096
#define POISON_INT (-7777777)

typedef struct {
    expect_mode_t expect;
    int           world_rank, world_size;
    verdict_log_t log;
} context_t;

/* Everything one case needs to know about the comm it runs on. */
typedef struct {
    MPI_Comm comm;
    bool     is_inter;
    int      rank, size;       /* local group */
    int      remote_size;      /* inter-communicators only */
    int      remote_first;     /* world rank of remote rank 0 / stride 2 */
} case_comm_t;

int input_of(int rank, int index);
void report(context_t *ctx, const char *name, bool blocking, const char *why);
void record_rise(context_t *ctx, const char *name, bool blocking, int rc,
                 const engine_snapshot_t *before, bool results_ok,
                 const char *result_why, bool gather_rise);
void record(context_t *ctx, const char *name, bool blocking, int rc,
            const engine_snapshot_t *before, bool results_ok, const char *result_why);
void record_gather_bytes(context_t *ctx, const char *name, bool blocking, int rc,
                         const engine_snapshot_t *before, bool results_ok,
                         const char *result_why);
void record_refusal(context_t *ctx, const char *name, bool blocking, int rc,
                    int expected_class, const engine_snapshot_t *before);
bool ints_match(const int *got, const int *expected, int n, char *why, size_t why_len);
void fill_poison(int *buf, int n);

/* The cases on datatypes (fallback_types.c). */
void check_contiguous_derived(context_t *ctx, const case_comm_t *cc, bool blocking);
void check_vector(context_t *ctx, const case_comm_t *cc, bool blocking);
void check_maxloc_minloc(context_t *ctx, const case_comm_t *cc, bool blocking);
void check_uncarried_types(context_t *ctx, const case_comm_t *cc, bool blocking);
void check_allgather_mixed_types(context_t *ctx, const case_comm_t *cc, bool blocking);

#endif
