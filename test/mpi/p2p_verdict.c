/*
 * p2p_verdict.c - rank agreement by MPI_Send / MPI_Recv (see p2p_verdict.h).
 */
#include "p2p_verdict.h"
#include "include/dfccl.h"

#include <stdio.h>
#include <stdlib.h>
#include <mpi.h>

/* Tags of their own, so the messages never match anything of a test. */
enum { TAG_VALUE = 7301, TAG_RESULT = 7302, TAG_FLAGS = 7303 };

static long combine(long a, long b, p2p_op_t op)
{
    switch (op) {
    case P2P_MIN: return a < b ? a : b;
    case P2P_MAX: return a > b ? a : b;
    default:      return a + b;
    }
}

long p2p_reduce_long(long value, p2p_op_t op)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank != 0) {
        MPI_Send(&value, 1, MPI_LONG, 0, TAG_VALUE, MPI_COMM_WORLD);
        MPI_Recv(&value, 1, MPI_LONG, 0, TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return value;
    }
    for (int r = 1; r < size; r++) {
        long other;
        MPI_Recv(&other, 1, MPI_LONG, r, TAG_VALUE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        value = combine(value, other, op);
    }
    for (int r = 1; r < size; r++)
        MPI_Send(&value, 1, MPI_LONG, r, TAG_RESULT, MPI_COMM_WORLD);
    return value;
}

size_t p2p_verdict_report(const verdict_log_t *log, const char *program,
                          double elapsed_s)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* A rank that stopped early has a shorter log: its missing entries
     * count as failures rather than hanging the exchange. */
    long count = p2p_reduce_long((long)log->count, P2P_MAX);
    long failed = 0;
    unsigned char *flags = calloc((size_t)count + 1, 1);
    if (flags == NULL) {
        fprintf(stderr, "verdict report: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (long i = 0; i < count; i++)
        flags[i] = (size_t)i < log->count ? log->failed[i] : 1;
    if (rank != 0) {
        MPI_Send(flags, (int)count, MPI_UNSIGNED_CHAR, 0, TAG_FLAGS, MPI_COMM_WORLD);
    } else {
        unsigned char *other = malloc((size_t)count + 1);
        if (other == NULL) {
            fprintf(stderr, "verdict report: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        for (int r = 1; r < size; r++) {
            MPI_Recv(other, (int)count, MPI_UNSIGNED_CHAR, r, TAG_FLAGS, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            for (long i = 0; i < count; i++)
                flags[i] |= other[i];
        }
        free(other);
        for (long i = 0; i < count; i++)
            failed += flags[i] != 0;
    }
    free(flags);
    failed = p2p_reduce_long(failed, P2P_MAX);
    if (getenv("DFCCL_TEST_EXPECT_NET") != NULL && getenv("DFCCL_TEST_EXPECT_NET")[0] != '\0') {
        /* as net_carried_check, without collectives */
        dfccl_stats_t st;
        long colls, bytes;
        dfccl_stats_get(&st);
        colls = p2p_reduce_long((long)st.net_collectives, P2P_SUM);
        bytes = p2p_reduce_long((long)st.net_bytes_sent, P2P_SUM);
        count++;
        if (colls == 0 || bytes == 0) failed++;
        if (rank == 0)
            printf("%s: the engine carried %ld collectives across nodes, %ld bytes sent over the"
                   " network (all ranks)%s\n", program, colls, bytes,
                   colls == 0 || bytes == 0 ? ": FAILED, none" : "");
    }
    if (getenv("DFCCL_TEST_EXPECT_PLAN") != NULL && getenv("DFCCL_TEST_EXPECT_PLAN")[0] != '\0') {
        /* as plan_file_ran_check, without collectives */
        dfccl_stats_t st;
        long ran;
        dfccl_stats_get(&st);
        ran = p2p_reduce_long((long)st.by_algorithm[DFCCL_STATS_PLAN_FILE], P2P_SUM);
        count++;
        if (ran == 0) failed++;
        if (rank == 0)
            printf("%s: %ld collectives ran plan files (all ranks)%s\n", program, ran,
                   ran == 0 ? ": FAILED, none" : "");
    }
    if (rank == 0) {
        printf("%s: %ld passed, %ld failed in %.2f s\n", program, count - failed,
               failed, elapsed_s);
        fflush(stdout);
    }
    return (size_t)failed;
}
