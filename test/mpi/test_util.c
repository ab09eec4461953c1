/*
 * test_util.c - shared helpers of the MPI test programs (see test_util.h).
 */
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int expect_mode_parse(const char *text, expect_mode_t *mode)
{
    if (text == NULL)
        return -1;
    if (strcmp(text, "engine") == 0) {
        *mode = EXPECT_ENGINE;
        return 0;
    }
    if (strcmp(text, "stock") == 0) {
        *mode = EXPECT_STOCK;
        return 0;
    }
    return -1;
}

const char *expect_mode_name(expect_mode_t mode)
{
    return mode == EXPECT_ENGINE ? "engine" : "stock";
}

void engine_snapshot_take(engine_snapshot_t *snapshot)
{
    dfccl_stats_t stats;
    memset(&stats, 0, sizeof stats);
    dfccl_stats_get(&stats);
    memcpy(snapshot->posted, stats.posted, sizeof snapshot->posted);
}

static const char *coll_kind_name(int kind)
{
    static const char *const names[DFCCL_COLL_TYPE_COUNT] = {
        "allreduce", "allgather", "reduce_scatter"
    };
    return kind >= 0 && kind < DFCCL_COLL_TYPE_COUNT ? names[kind] : "?";
}

int engine_rise_ok(const engine_snapshot_t *before, dfccl_coll_type_t kind,
                   uint64_t expected_rise, char *why, size_t why_len)
{
    engine_snapshot_t now;
    engine_snapshot_take(&now);
    for (int k = 0; k < DFCCL_COLL_TYPE_COUNT; k++) {
        uint64_t rise = now.posted[k] - before->posted[k];
        uint64_t want = (k == (int)kind) ? expected_rise : 0;
        if (rise != want) {
            snprintf(why, why_len,
                     "engine posted[%s] rose by %" PRIu64 ", expected %" PRIu64,
                     coll_kind_name(k), rise, want);
            return 0;
        }
    }
    return 1;
}

int engine_unchanged(const engine_snapshot_t *before, char *why, size_t why_len)
{
    /* Rising by 0 for one kind and 0 for the others is "nothing moved". */
    return engine_rise_ok(before, DFCCL_COLL_ALLREDUCE, 0, why, why_len);
}

void verdict_log_init(verdict_log_t *log)
{
    memset(log, 0, sizeof *log);
}

void verdict_log_record(verdict_log_t *log, int passed)
{
    if (log->count == log->capacity) {
        size_t capacity = log->capacity ? 2 * log->capacity : 4096;
        unsigned char *grown = realloc(log->failed, capacity);
        if (grown == NULL) {
            fprintf(stderr, "verdict log: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        log->failed = grown;
        log->capacity = capacity;
    }
    log->failed[log->count++] = passed ? 0 : 1;
}

void verdict_log_free(verdict_log_t *log)
{
    free(log->failed);
    memset(log, 0, sizeof *log);
}

/*
 * With DFCCL_TEST_EXPECT_NET set (the tests across nodes set it), one more
 * check: the engine carried collectives over its links to other nodes and
 * sent bytes there, counted by the engine itself. Returns 1 when it did not.
 */
size_t net_carried_check(const char *program, MPI_Comm comm, long *count)
{
    const char *expect = getenv("DFCCL_TEST_EXPECT_NET");
    dfccl_stats_t st;
    unsigned long long mine[2], all[2];
    int rank, bad;

    if (expect == NULL || expect[0] == '\0') return 0;
    dfccl_stats_get(&st);
    mine[0] = st.net_collectives;
    mine[1] = st.net_bytes_sent;
    MPI_Allreduce(mine, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
    MPI_Comm_rank(comm, &rank);
    bad = all[0] == 0 || all[1] == 0;
    if (rank == 0)
        printf("%s: the engine carried %llu collectives across nodes, %llu bytes sent over"
               " the network (all ranks)%s\n", program, all[0], all[1],
               bad ? ": FAILED, none" : "");
    (*count)++;
    return (size_t)bad;
}

size_t plan_file_ran_check(const char *program, MPI_Comm comm, long *count)
{
    const char *expect = getenv("DFCCL_TEST_EXPECT_PLAN");
    dfccl_stats_t st;
    unsigned long long mine, all;
    int rank;

    if (expect == NULL || expect[0] == '\0') return 0;
    dfccl_stats_get(&st);
    mine = st.by_algorithm[DFCCL_STATS_PLAN_FILE];
    MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
    MPI_Comm_rank(comm, &rank);
    if (rank == 0)
        printf("%s: %llu collectives ran plan files (all ranks)%s\n", program, all,
               all == 0 ? ": FAILED, none" : "");
    (*count)++;
    return all == 0;
}

size_t verdict_log_report(const verdict_log_t *log, const char *program,
                          double elapsed_s, MPI_Comm comm)
{
    /* Ranks should agree on the number of calls; take the longest log so a
     * rank that stopped early shows up as failures rather than a hang. */
    long local_count = (long)log->count, global_count = 0;
    MPI_Allreduce(&local_count, &global_count, 1, MPI_LONG, MPI_MAX, comm);

    enum { CHUNK = 65536 };
    int *flags = malloc(CHUNK * sizeof *flags);
    int *merged = malloc(CHUNK * sizeof *merged);
    if (flags == NULL || merged == NULL) {
        fprintf(stderr, "verdict report: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    size_t failed = 0;
    for (long start = 0; start < global_count; start += CHUNK) {
        int n = (int)(global_count - start < CHUNK ? global_count - start : CHUNK);
        for (int k = 0; k < n; k++) {
            size_t index = (size_t)start + (size_t)k;
            flags[k] = index < log->count ? log->failed[index] : 1;
        }
        MPI_Allreduce(flags, merged, n, MPI_INT, MPI_MAX, comm);
        for (int k = 0; k < n; k++)
            failed += merged[k] != 0;
    }
    free(flags);
    free(merged);

    int rank;
    MPI_Comm_rank(comm, &rank);
    failed += net_carried_check(program, comm, &global_count);
    failed += plan_file_ran_check(program, comm, &global_count);
    if (rank == 0) {
        printf("%s: %zu passed, %zu failed in %.2f s\n", program,
               (size_t)global_count - failed, failed, elapsed_s);
        fflush(stdout);
    }
    return failed;
}

/* The predefined MPI op for an engine op (MPI_OP_NULL for none). */
MPI_Op test_mpi_op(dfccl_op_t op)
{
    switch (op) {
    case DFCCL_OP_SUM:  return MPI_SUM;
    case DFCCL_OP_PROD: return MPI_PROD;
    case DFCCL_OP_MIN:  return MPI_MIN;
    case DFCCL_OP_MAX:  return MPI_MAX;
    case DFCCL_OP_LAND: return MPI_LAND;
    case DFCCL_OP_LOR:  return MPI_LOR;
    case DFCCL_OP_LXOR: return MPI_LXOR;
    case DFCCL_OP_BAND: return MPI_BAND;
    case DFCCL_OP_BOR:  return MPI_BOR;
    case DFCCL_OP_BXOR: return MPI_BXOR;
    default:            return MPI_OP_NULL;
    }
}
