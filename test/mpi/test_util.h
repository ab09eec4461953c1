/*
 * test_util.h - helpers shared by the MPI test programs: which path a run
 * expects, snapshots of the engine's counters, and the verdict tally that
 * ends every program with "<program>: N passed, N failed".
 */
#ifndef DFCCL_TEST_UTIL_H
#define DFCCL_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <mpi.h>

#include "include/dfccl.h"

/* Which path the collectives under test are expected to take. */
typedef enum {
    EXPECT_ENGINE,  /* coll_dfccl_host_buffers=engine: carried calls count */
    EXPECT_STOCK    /* default or dfccl absent: nothing reaches the engine */
} expect_mode_t;

/* Parses "engine" or "stock"; returns 0 on success, -1 otherwise. */
int expect_mode_parse(const char *text, expect_mode_t *mode);
const char *expect_mode_name(expect_mode_t mode);

/* The engine's per-process "posted" counters at one moment. */
typedef struct {
    uint64_t posted[DFCCL_COLL_TYPE_COUNT];
} engine_snapshot_t;

void engine_snapshot_take(engine_snapshot_t *snapshot);

/*
 * Checks that since `before` the counter of `kind` rose by exactly
 * `expected_rise` and every other counter stayed put. Returns 1 when so;
 * otherwise 0 with a description in `why`.
 */
int engine_rise_ok(const engine_snapshot_t *before, dfccl_coll_type_t kind,
                   uint64_t expected_rise, char *why, size_t why_len);

/* Checks that no counter moved since `before`. */
int engine_unchanged(const engine_snapshot_t *before, char *why, size_t why_len);

/*
 * One entry per checked call, in the same order on every rank, so that the
 * final tally can say whether a call passed on all ranks.
 */
typedef struct {
    unsigned char *failed;
    size_t         count;
    size_t         capacity;
} verdict_log_t;

void verdict_log_init(verdict_log_t *log);
void verdict_log_record(verdict_log_t *log, int passed);
void verdict_log_free(verdict_log_t *log);

/*
 * Collective over `comm` (should span every rank that recorded verdicts):
 * a call passed when it passed on every rank. Rank 0 prints
 * "<program>: N passed, N failed in S s". Returns the number failed
 * (the same on every rank).
 */
size_t verdict_log_report(const verdict_log_t *log, const char *program,
                          double elapsed_s, MPI_Comm comm);

/* DFCCL_TEST_EXPECT_NET set: checks that the engine carried collectives to
 * other nodes (its counters, summed over comm); adds one to *count and
 * returns 1 when it did not, else 0. */
size_t net_carried_check(const char *program, MPI_Comm comm, long *count);

/* DFCCL_TEST_EXPECT_PLAN set (tests with coll_dfccl_plan_dir): checks, the
 * same way, that the engine ran collectives from plan files. */
size_t plan_file_ran_check(const char *program, MPI_Comm comm, long *count);

/* The predefined MPI op for an engine op (MPI_OP_NULL for none). */
MPI_Op test_mpi_op(dfccl_op_t op);

#endif /* DFCCL_TEST_UTIL_H */
