/*
 * hostile_check.c - erroneous and mismatched calls, through the engine or
 * the stock path: each must end in an MPI error on every rank, or complete
 * correctly on every rank, within the watchdog's bound; never a crash, a
 * hang, success with wrong data, or a write outside the caller's buffers
 * (every buffer has guard words on both sides). After the case, one more
 * valid allreduce on the same communicator must fail on every rank or give
 * the right result on every rank, and MPI_Comm_dup of it (whose context-id
 * agreement runs on its nonblocking allreduce) must succeed on every rank
 * and give a communicator whose allreduce is right. The program ends with
 * MPI_Finalize, and its exit status is checked.
 *
 * Cases (fault on rank 0 only unless "all"), for allreduce, allgather,
 * reduce_scatter and reduce_scatter_block, blocking and nonblocking:
 *   neg_count_one     count -1 (Open MPI's own check rejects it on rank 0)
 *   null_buf_one      NULL receive buffer with count > 0
 *   null_buf_all      the same on every rank
 *   huge_count_one    a count far beyond the buffers
 *   count_differs     twice the count (buffers large enough for it)
 *   op_differs        MPI_MAX against MPI_SUM (reductions)
 *   type_differs      MPI_FLOAT against MPI_INT (reductions; allgather
 *                     moves the same bytes either way and completes)
 *   user_op_all       a user-defined op everywhere: stock path, correct
 *   user_op_one       a user-defined op on rank 0 only
 *   vector_type_all   a strided vector type everywhere: reductions refused by
 *                     Open MPI; allgather correct (packed into the engine)
 *   vector_type_one   allgather: rank 0 describes its N ints as a strided
 *                     vector, the others as N ints (legal: same signature)
 *   in_place_bad      MPI_IN_PLACE as the receive buffer (Open MPI rejects)
 * With --expect stock only the cases the stock path survives run
 * (--all-cases runs the others too, by hand, under a timeout).
 * Each case runs on a fresh dup of MPI_COMM_WORLD; the verdicts travel by
 * point-to-point messages (p2p_verdict.c). --table prints one line per
 * case, collective and form with every rank's outcome.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

#include "coll_calls.h"
#include "p2p_verdict.h"
#include "test_util.h"

#define N      8          /* elements per rank's block */
#define GUARD  16         /* guard ints on each side of every buffer */
#define POISON 0x5a5a5a5a

typedef enum { ALLREDUCE, ALLGATHER, REDUCE_SCATTER, REDUCE_SCATTER_BLOCK, NCOLLS } coll_t;
static const char *const coll_names[] = { "allreduce", "allgather", "reduce_scatter",
                                          "reduce_scatter_block" };

typedef enum {
    NEG_COUNT_ONE, NULL_BUF_ONE, NULL_BUF_ALL, HUGE_COUNT_ONE, COUNT_DIFFERS, OP_DIFFERS,
    TYPE_DIFFERS, USER_OP_ALL, USER_OP_ONE, VECTOR_TYPE_ALL, VECTOR_TYPE_ONE, IN_PLACE_BAD,
    NCASES
} case_t;
static const char *const case_names[] = {
    "neg_count_one", "null_buf_one", "null_buf_all", "huge_count_one", "count_differs",
    "op_differs", "type_differs", "user_op_all", "user_op_one", "vector_type_all",
    "vector_type_one", "in_place_bad"
};

/* What a case may end in, on every rank alike. */
enum { END_ERROR = 1, END_CORRECT = 2 };

static int rank, size, engine, print_table, all_cases;
static MPI_Op user_sum;

static void user_sum_fn(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

static bool is_reduction(coll_t c) { return c != ALLGATHER; }

/* Which endings a case allows for a collective, and whether it runs here. */
static int case_allows(case_t k, coll_t c, bool *runs)
{
    /* Through the stock path only the cases it survives run: on the others
     * it hangs (a rank missing), faults, or returns success with wrong data
     * (README, hostile-input table). */
    *runs = engine || all_cases || k == USER_OP_ALL || k == VECTOR_TYPE_ALL || k == IN_PLACE_BAD ||
            ((k == TYPE_DIFFERS || k == VECTOR_TYPE_ONE) && c == ALLGATHER);
    if (!*runs) return 0;
    switch (k) {
    case NULL_BUF_ALL:
    case HUGE_COUNT_ONE:
        return END_ERROR;
    case OP_DIFFERS:
    case USER_OP_ONE:
        *runs = *runs && is_reduction(c);
        return END_ERROR;
    case TYPE_DIFFERS:
        return is_reduction(c) ? END_ERROR : END_CORRECT;
    case USER_OP_ALL:
        *runs = *runs && is_reduction(c);
        return END_CORRECT;
    case VECTOR_TYPE_ALL:
        /* Open MPI refuses predefined ops on derived types (MPI_ERR_OP) */
        return is_reduction(c) ? END_ERROR : END_CORRECT;
    case VECTOR_TYPE_ONE:
        *runs = *runs && c == ALLGATHER;
        return END_CORRECT;
    case NULL_BUF_ONE:
        return END_ERROR;
    default:
        return END_ERROR;
    }
}

static int value(int r, int i) { return (r * 7 + i * 3) % 11 + 1; }

/* One call of the case on comm; *correct: the result is right (when rc is
 * MPI_SUCCESS); *guards: nothing was written outside the buffers. */
static int run_case(case_t k, coll_t c, bool blocking, MPI_Comm comm, bool *correct, bool *guards)
{
    int count = N, rc = MPI_SUCCESS, bad = rank == 0;
    int cap = 4 * N * size;   /* room for count_differs' doubled count */
    int *sbase = malloc(sizeof(int) * (size_t)(cap + 2 * GUARD));
    int *rbase = malloc(sizeof(int) * (size_t)(cap + 2 * GUARD));
    int *send = sbase + GUARD, *recv = rbase + GUARD, *recvcounts = malloc(sizeof(int) * size);
    MPI_Datatype type = MPI_INT, vector = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_SUM;
    void *sptr = send, *rptr = recv;

    for (int i = 0; i < cap + 2 * GUARD; i++) sbase[i] = rbase[i] = POISON;
    for (int i = 0; i < cap; i++) send[i] = value(rank, i);
    for (int i = 0; i < size; i++) recvcounts[i] = N;
    switch (k) {
    case NEG_COUNT_ONE: if (bad) count = -1; break;
    case NULL_BUF_ONE:  if (bad) rptr = NULL; break;
    case NULL_BUF_ALL:  rptr = NULL; break;
    case HUGE_COUNT_ONE: if (bad) count = INT_MAX / 64; break;
    case COUNT_DIFFERS: if (bad) count = 2 * N; break;
    case OP_DIFFERS:    if (bad) op = MPI_MAX; break;
    case TYPE_DIFFERS:  if (bad) type = MPI_FLOAT; break;
    case USER_OP_ALL:   op = user_sum; break;
    case USER_OP_ONE:   if (bad) op = user_sum; break;
    case VECTOR_TYPE_ONE:
        if (!bad) break;
        /* fall through */
    case VECTOR_TYPE_ALL:
        /* every other int, holes untouched */
        {
            MPI_Datatype strided;
            MPI_Type_vector(N, 1, 2, MPI_INT, &strided);
            MPI_Type_create_resized(strided, 0, (MPI_Aint)(2 * N * sizeof(int)), &vector);
            MPI_Type_free(&strided);
            MPI_Type_commit(&vector);
            type = vector;
        }
        break;
    case IN_PLACE_BAD:  rptr = MPI_IN_PLACE; break;
    default: break;
    }
    if (vector != MPI_DATATYPE_NULL) count = 1;   /* one vector of N ints per block */
    for (int i = 0; i < size; i++) recvcounts[i] = count < 0 ? count : (c == REDUCE_SCATTER &&
                                                   k == COUNT_DIFFERS && bad ? 2 * N : count);
    if (k == NEG_COUNT_ONE && bad) recvcounts[size - 1] = -1;
    switch (c) {
    case ALLREDUCE:
        rc = allreduce_call(blocking, sptr, rptr, count, type, op, comm);
        break;
    case ALLGATHER:
        rc = allgather_call(blocking, sptr, count, type, rptr, count, type, comm);
        break;
    case REDUCE_SCATTER:
        rc = reduce_scatter_call(blocking, sptr, rptr, recvcounts, type, op, comm);
        break;
    default:
        rc = reduce_scatter_block_call(blocking, sptr, rptr, count, type, op, comm);
        break;
    }
    /* the expected result of the valid forms (user_op_all, vector,
     * allgather with type_differs) */
    *correct = true;
    if (rc == MPI_SUCCESS) {
        int stride = vector != MPI_DATATYPE_NULL ? 2 : 1, blocks = c == ALLGATHER ? size : 1;
        for (int b = 0; b < blocks && *correct; b++) {
            for (int i = 0; i < N; i++) {
                int got = recv[(b * N + i) * stride], want = 0;
                if (c == ALLGATHER) {   /* strided on the senders that used the vector */
                    int from = k == VECTOR_TYPE_ALL || (k == VECTOR_TYPE_ONE && b == 0) ? 2 : 1;
                    want = value(b, i * from);
                } else {
                    int at = (c == ALLREDUCE ? i : rank * N + i) * stride;
                    for (int r = 0; r < size; r++) want += value(r, at);
                }
                if (got != want) *correct = false;
                if (stride == 2 && recv[(b * N + i) * 2 + 1] != POISON) *correct = false;
            }
        }
    }
    *guards = true;
    for (int i = 0; i < GUARD; i++)
        if (rbase[i] != POISON || rbase[GUARD + cap + i] != POISON || sbase[i] != POISON ||
            sbase[GUARD + cap + i] != POISON)
            *guards = false;
    if (vector != MPI_DATATYPE_NULL) MPI_Type_free(&vector);
    free(sbase);
    free(rbase);
    free(recvcounts);
    return rc;
}

/* The follow-up: a valid allreduce on the same communicator. */
static int follow_up(MPI_Comm comm, bool *correct)
{
    int in = rank + 1, out = -1, rc = MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, comm);
    *correct = rc == MPI_SUCCESS && out == size * (size + 1) / 2;
    return rc;
}

static const char *outcome(int rc, bool correct, char *text, size_t len)
{
    int cls = 0;
    if (rc == MPI_SUCCESS) return correct ? "ok" : "WRONG";
    MPI_Error_class(rc, &cls);
    snprintf(text, len, "err%d", cls);
    return text;
}

int main(int argc, char **argv)
{
    verdict_log_t log;
    engine_snapshot_t before;
    double start;
    int only = -1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--expect") == 0 && i + 1 < argc) engine = !strcmp(argv[++i], "engine");
        else if (strcmp(argv[i], "--table") == 0) print_table = 1;
        else if (strcmp(argv[i], "--all-cases") == 0) all_cases = 1;   /* by hand: stock hangs */
        else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc) {
            const char *name = argv[++i];
            for (int k = 0; k < NCASES; k++) if (!strcmp(name, case_names[k])) only = k;
        }
    }
    MPI_Op_create(user_sum_fn, 1, &user_sum);
    verdict_log_init(&log);
    engine_snapshot_take(&before);
    start = MPI_Wtime();
    for (int k = 0; k < NCASES; k++) {
        if (only >= 0 && k != only) continue;
        for (int c = 0; c < NCOLLS; c++) {
            for (int form = 0; form < 2; form++) {
                bool runs, correct, guards, fcorrect;
                int allows = case_allows((case_t)k, (coll_t)c, &runs), rc, frc;
                MPI_Comm comm;
                double t0;
                if (!runs) continue;
                MPI_Comm_dup(MPI_COMM_WORLD, &comm);
                MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
                t0 = MPI_Wtime();
                rc = run_case((case_t)k, (coll_t)c, form == 0, comm, &correct, &guards);
                double took = MPI_Wtime() - t0;
                /* every rank's ending, by point-to-point messages */
                long errs = p2p_reduce_long(rc != MPI_SUCCESS, P2P_SUM);
                long wrong = p2p_reduce_long(rc == MPI_SUCCESS && !correct, P2P_SUM);
                long bad_guards = p2p_reduce_long(!guards, P2P_SUM);
                frc = follow_up(comm, &fcorrect);
                long ferrs = p2p_reduce_long(frc != MPI_SUCCESS, P2P_SUM);
                long fwrong = p2p_reduce_long(frc == MPI_SUCCESS && !fcorrect, P2P_SUM);
                /* Open MPI's own agreement inside MPI_Comm_dup runs on the
                 * communicator's allreduce: it must return, alike everywhere */
                MPI_Comm dup = MPI_COMM_NULL;
                int drc = MPI_Comm_dup(comm, &dup);
                long derrs = p2p_reduce_long(drc != MPI_SUCCESS, P2P_SUM);
                bool dcorrect = false;
                if (drc == MPI_SUCCESS) {
                    /* the duplicate is a working communicator, whatever
                     * became of the one it was made from */
                    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
                    (void)follow_up(dup, &dcorrect);
                    MPI_Comm_free(&dup);
                }
                long dwrong = p2p_reduce_long(!dcorrect, P2P_SUM);
                long slowest = p2p_reduce_long((long)(took * 1000), P2P_MAX);
                bool ended_ok = (errs == size && (allows & END_ERROR)) ||
                                (errs == 0 && wrong == 0 && (allows & END_CORRECT));
                bool follow_ok = fwrong == 0 && (ferrs == 0 || ferrs == size) && derrs == 0 &&
                                 dwrong == 0;
                bool passed = ended_ok && bad_guards == 0 && follow_ok;
                if (print_table || !passed) {
                    /* rank 0 prints every rank's outcome, gathered in turn */
                    char mine[160];
                    char call_s[16], follow_s[16];
                    snprintf(mine, sizeof(mine), "%s/%s",
                             outcome(rc, correct, call_s, sizeof(call_s)),
                             outcome(frc, fcorrect, follow_s, sizeof(follow_s)));
                    if (rank == 0) {
                        printf("%s %-16s %-20s %-11s %5ld ms  r0 %s", passed ? "ok  " : "FAIL",
                               case_names[k], coll_names[c], form ? "nonblocking" : "blocking",
                               slowest, mine);
                        for (int r = 1; r < size; r++) {
                            char theirs[160];
                            MPI_Recv(theirs, sizeof(theirs), MPI_CHAR, r, 77, MPI_COMM_WORLD,
                                     MPI_STATUS_IGNORE);
                            printf("  r%d %s", r, theirs);
                        }
                        printf("%s\n", bad_guards ? "  (guard words overwritten)" : "");
                        fflush(stdout);
                    } else {
                        MPI_Send(mine, sizeof(mine), MPI_CHAR, 0, 77, MPI_COMM_WORLD);
                    }
                }
                verdict_log_record(&log, passed);
                MPI_Comm_free(&comm);
            }
        }
    }
    if (engine) {   /* the valid cases did reach the engine */
        engine_snapshot_t after;
        engine_snapshot_take(&after);
        verdict_log_record(&log, after.posted[DFCCL_COLL_ALLREDUCE] >
                                     before.posted[DFCCL_COLL_ALLREDUCE]);
    }
    size_t failed = p2p_verdict_report(&log, "hostile_check", MPI_Wtime() - start);
    MPI_Op_free(&user_sum);
    verdict_log_free(&log);
    MPI_Finalize();
    return failed ? 1 : 0;
}
