/*
 * failed_comm_check.c - what a program can do after a collective failed on
 * MPI_COMM_WORLD itself (docs/design.md, "After a failure").
 *
 * Every rank makes a duplicate of MPI_COMM_WORLD ("before"), then runs one
 * erroneous allreduce on MPI_COMM_WORLD (--case, fault on rank 1):
 *   neg_count_one   count -1 on rank 1: Open MPI's own check rejects it
 *                   there, so rank 1 skips the call its peers are in (they
 *                   end at the watchdog: run with a short coll_dfccl_timeout)
 *   count_differs   twice the count on rank 1
 *   op_differs      MPI_MAX on rank 1, MPI_SUM elsewhere
 *   null_buf_one    a NULL receive buffer on rank 1
 *   user_op_one     a user-defined op on rank 1 (its call takes the stock path)
 * blocking or (--nonblocking) nonblocking. Then, on every rank:
 *   - the call returned an error on every rank (or was right everywhere);
 *   - MPI_Comm_dup(MPI_COMM_WORLD) succeeds, and an allreduce and an
 *     MPI_Comm_split on the duplicate work;
 *   - another allreduce on MPI_COMM_WORLD fails on every rank, or is right
 *     on every rank (the documented state: it stays failed);
 *   - the communicator made before the failure still works;
 *   - the communicators are freed, and the program ends with MPI_Finalize,
 *     whose return and the exit status the runner checks.
 * Verdicts travel by point-to-point messages (p2p_verdict.c).
 * Prints "failed_comm_check: N passed, M failed".
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

#include "p2p_verdict.h"
#include "test_util.h"

#define PROGRAM "failed_comm_check"
#define N 8
#define FAULTY 1

typedef enum { NEG_COUNT_ONE, COUNT_DIFFERS, OP_DIFFERS, NULL_BUF_ONE, USER_OP_ONE, NCASES } case_t;
static const char *const case_names[NCASES] = { "neg_count_one", "count_differs", "op_differs",
                                                "null_buf_one", "user_op_one" };
static int rank, size;

static void user_sum_fn(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

/* An allreduce of N ints (rank + i) on comm: MPI_SUCCESS and *right, or
 * the error. */
static int checked_allreduce(MPI_Comm comm, bool *right)
{
    int in[N], out[N], n = 0, rc;

    MPI_Comm_size(comm, &n);
    for (int i = 0; i < N; i++) in[i] = rank + i;
    rc = MPI_Allreduce(in, out, N, MPI_INT, MPI_SUM, comm);
    *right = rc == MPI_SUCCESS;
    for (int i = 0; i < N && rc == MPI_SUCCESS; i++) {
        /* the ranks of comm: every world rank, or those of one split colour */
        long want = 0;
        for (int r = 0; r < size; r++)
            if (n == size || r % 2 == rank % 2) want += r + i;
        *right = *right && out[i] == want;
    }
    return rc;
}

static int faulty_call(case_t c, bool nonblocking, MPI_Op user_sum)
{
    int in[2 * N], out[2 * N], count = N;
    void *recv = out;
    MPI_Op op = MPI_SUM;
    MPI_Request req;

    for (int i = 0; i < 2 * N; i++) in[i] = rank + i;
    if (rank == FAULTY) {
        if (c == NEG_COUNT_ONE) count = -1;
        if (c == COUNT_DIFFERS) count = 2 * N;
        if (c == OP_DIFFERS) op = MPI_MAX;
        if (c == NULL_BUF_ONE) recv = NULL;
        if (c == USER_OP_ONE) op = user_sum;
    }
    if (!nonblocking) return MPI_Allreduce(in, recv, count, MPI_INT, op, MPI_COMM_WORLD);
    int rc = MPI_Iallreduce(in, recv, count, MPI_INT, op, MPI_COMM_WORLD, &req);
    if (rc != MPI_SUCCESS) return rc;
    return MPI_Wait(&req, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv)
{
    case_t which = NCASES;
    bool nonblocking = false, right;
    verdict_log_t log;
    MPI_Comm before, dup = MPI_COMM_NULL, half = MPI_COMM_NULL;
    MPI_Op user_sum;
    double start;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nonblocking")) nonblocking = true;
        else if (!strcmp(argv[i], "--case") && i + 1 < argc) {
            i++;
            for (int k = 0; k < NCASES; k++)
                if (!strcmp(argv[i], case_names[k])) which = (case_t)k;
        }
    }
    if (which == NCASES || size < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: " PROGRAM " --case NAME [--nonblocking] (2 or more ranks)\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Op_create(user_sum_fn, 1, &user_sum);
    verdict_log_init(&log);
    start = MPI_Wtime();
    MPI_Comm_dup(MPI_COMM_WORLD, &before);
    MPI_Comm_set_errhandler(before, MPI_ERRORS_RETURN);
    (void)checked_allreduce(MPI_COMM_WORLD, &right);   /* the engine carries world's calls */
    verdict_log_record(&log, p2p_reduce_long(!right, P2P_SUM) == 0);

    double t0 = MPI_Wtime();
    int rc = faulty_call(which, nonblocking, user_sum);
    double took = MPI_Wtime() - t0;
    long errs = p2p_reduce_long(rc != MPI_SUCCESS, P2P_SUM);
    verdict_log_record(&log, errs == size);   /* an error on every rank */

    /* a duplicate of the failed communicator works */
    int drc = MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    verdict_log_record(&log, p2p_reduce_long(drc != MPI_SUCCESS, P2P_SUM) == 0);
    right = false;
    if (drc == MPI_SUCCESS) {
        MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
        (void)checked_allreduce(dup, &right);
    }
    verdict_log_record(&log, p2p_reduce_long(!right, P2P_SUM) == 0);
    right = false;
    if (drc == MPI_SUCCESS && MPI_Comm_split(dup, rank % 2, rank, &half) == MPI_SUCCESS) {
        MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
        (void)checked_allreduce(half, &right);
    }
    verdict_log_record(&log, p2p_reduce_long(!right, P2P_SUM) == 0);

    /* the failed communicator: alike on every rank */
    int again = checked_allreduce(MPI_COMM_WORLD, &right);
    long again_errs = p2p_reduce_long(again != MPI_SUCCESS, P2P_SUM);
    long again_wrong = p2p_reduce_long(again == MPI_SUCCESS && !right, P2P_SUM);
    verdict_log_record(&log, (again_errs == 0 || again_errs == size) && again_wrong == 0);

    /* the communicator made before the failure */
    (void)checked_allreduce(before, &right);
    verdict_log_record(&log, p2p_reduce_long(!right, P2P_SUM) == 0);

    long slowest = p2p_reduce_long((long)(took * 1000), P2P_MAX);
    if (rank == 0)
        printf(PROGRAM ": %s, %s, %d ranks: the call failed on %ld ranks (slowest after %ld ms);"
               " later calls on MPI_COMM_WORLD %s\n", case_names[which],
               nonblocking ? "nonblocking" : "blocking", size, errs, slowest,
               again_errs == size ? "fail on every rank" : again_errs == 0 ? "work" : "DIFFER");
    size_t failed = p2p_verdict_report(&log, PROGRAM, MPI_Wtime() - start);
    if (half != MPI_COMM_NULL) MPI_Comm_free(&half);
    if (dup != MPI_COMM_NULL) MPI_Comm_free(&dup);
    MPI_Comm_free(&before);
    MPI_Op_free(&user_sum);
    verdict_log_free(&log);
    MPI_Finalize();
    return failed ? 1 : 0;
}
