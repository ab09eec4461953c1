/*
 * errors_check.c - erroneous arguments are reported with the error classes
 * stock Open MPI 4.1.4 returns, never reach the engine, and leave the
 * communicator usable.
 *
 * MPI_ERRORS_RETURN is set on MPI_COMM_WORLD (MPI_COMM_NULL errors are
 * raised there) and inherited by the dup and split communicators. Every
 * row of the table runs on world, dup and a split, in blocking and
 * nonblocking form. After the rows, a valid allreduce on each communicator
 * must still give the right result (and, with --expect engine, be carried).
 *
 * Left out, because stock Open MPI 4.1.4 does not report them and crashes
 * instead (so no class can be asserted):
 *   - NULL send or recv buffer with count > 0: no collective checks it;
 *     the call proceeds and faults.
 *   - MPI_Allgather / MPI_Iallgather on MPI_COMM_NULL: faults inside
 *     the parameter check.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

#include "coll_calls.h"
#include "include/dfccl.h"
#include "test_util.h"

typedef enum {
    COLL_ALLREDUCE, COLL_ALLGATHER, COLL_REDUCE_SCATTER, COLL_REDUCE_SCATTER_BLOCK
} coll_t;

static const char *const coll_names[] = {
    "allreduce", "allgather", "reduce_scatter", "reduce_scatter_block"
};

typedef enum {
    BAD_DATATYPE,        /* MPI_DATATYPE_NULL (allgather: both sides) */
    BAD_SENDTYPE,        /* allgather: sendtype MPI_DATATYPE_NULL only */
    BAD_RECVTYPE,        /* allgather: recvtype MPI_DATATYPE_NULL only */
    BAD_OP,              /* MPI_OP_NULL */
    BAD_COUNT,           /* negative count (reduce_scatter: one recvcounts entry) */
    BAD_SENDCOUNT,       /* allgather: negative sendcount only */
    BAD_RECVCOUNT,       /* allgather: negative recvcount only */
    BAD_COMM             /* MPI_COMM_NULL */
} fault_t;

static const char *const fault_names[] = {
    "MPI_DATATYPE_NULL", "sendtype MPI_DATATYPE_NULL", "recvtype MPI_DATATYPE_NULL",
    "MPI_OP_NULL", "negative count", "negative sendcount", "negative recvcount",
    "MPI_COMM_NULL"
};

/* The classes stock Open MPI 4.1.4 returns (probed with np = 1, 2, 3; the
 * blocking and nonblocking forms agree). A reduction checks the op against
 * the datatype first, so MPI_DATATYPE_NULL there reads as MPI_ERR_OP. */
static const struct {
    coll_t  coll;
    fault_t fault;
    int     error_class;
} expected_errors[] = {
    { COLL_ALLREDUCE,            BAD_DATATYPE,  MPI_ERR_OP },
    { COLL_ALLREDUCE,            BAD_OP,        MPI_ERR_OP },
    { COLL_ALLREDUCE,            BAD_COUNT,     MPI_ERR_COUNT },
    { COLL_ALLREDUCE,            BAD_COMM,      MPI_ERR_COMM },
    { COLL_ALLGATHER,            BAD_DATATYPE,  MPI_ERR_TYPE },
    { COLL_ALLGATHER,            BAD_SENDTYPE,  MPI_ERR_TYPE },
    { COLL_ALLGATHER,            BAD_RECVTYPE,  MPI_ERR_TYPE },
    { COLL_ALLGATHER,            BAD_COUNT,     MPI_ERR_COUNT },
    { COLL_ALLGATHER,            BAD_SENDCOUNT, MPI_ERR_COUNT },
    { COLL_ALLGATHER,            BAD_RECVCOUNT, MPI_ERR_COUNT },
    { COLL_REDUCE_SCATTER,       BAD_DATATYPE,  MPI_ERR_OP },
    { COLL_REDUCE_SCATTER,       BAD_OP,        MPI_ERR_OP },
    { COLL_REDUCE_SCATTER,       BAD_COUNT,     MPI_ERR_COUNT },
    { COLL_REDUCE_SCATTER,       BAD_COMM,      MPI_ERR_COMM },
    { COLL_REDUCE_SCATTER_BLOCK, BAD_DATATYPE,  MPI_ERR_OP },
    { COLL_REDUCE_SCATTER_BLOCK, BAD_OP,        MPI_ERR_OP },
    { COLL_REDUCE_SCATTER_BLOCK, BAD_COUNT,     MPI_ERR_COUNT },
    { COLL_REDUCE_SCATTER_BLOCK, BAD_COMM,      MPI_ERR_COMM },
};
#define ERROR_ROWS (sizeof expected_errors / sizeof expected_errors[0])

#define ELEMS 64

/* Issues one erroneous call; returns what MPI returned. */
static int issue_faulty(coll_t coll, fault_t fault, bool blocking, MPI_Comm comm,
                        int comm_size)
{
    static int send[ELEMS * 64], recv[ELEMS * 64];
    int recvcounts[64];
    int count = 2, sendcount = 2, recvcount = 2;
    MPI_Datatype type = MPI_INT, sendtype = MPI_INT, recvtype = MPI_INT;
    MPI_Op op = MPI_SUM;
    for (int r = 0; r < comm_size && r < 64; r++)
        recvcounts[r] = 1;

    switch (fault) {
    case BAD_DATATYPE:  type = sendtype = recvtype = MPI_DATATYPE_NULL; break;
    case BAD_SENDTYPE:  sendtype = MPI_DATATYPE_NULL; break;
    case BAD_RECVTYPE:  recvtype = MPI_DATATYPE_NULL; break;
    case BAD_OP:        op = MPI_OP_NULL; break;
    case BAD_COUNT:     count = sendcount = recvcount = -1; recvcounts[0] = -1; break;
    case BAD_SENDCOUNT: sendcount = -1; break;
    case BAD_RECVCOUNT: recvcount = -1; break;
    case BAD_COMM:      comm = MPI_COMM_NULL; break;
    }
    switch (coll) {
    case COLL_ALLREDUCE:
        return allreduce_call(blocking, send, recv, count, type, op, comm);
    case COLL_ALLGATHER:
        return allgather_call(blocking, send, sendcount, sendtype, recv, recvcount,
                              recvtype, comm);
    case COLL_REDUCE_SCATTER:
        return reduce_scatter_call(blocking, send, recv, recvcounts, type, op, comm);
    default:
        return reduce_scatter_block_call(blocking, send, recv, count, type, op, comm);
    }
}

static const char *class_name(int error_class)
{
    switch (error_class) {
    case MPI_SUCCESS:   return "MPI_SUCCESS";
    case MPI_ERR_COUNT: return "MPI_ERR_COUNT";
    case MPI_ERR_TYPE:  return "MPI_ERR_TYPE";
    case MPI_ERR_OP:    return "MPI_ERR_OP";
    case MPI_ERR_COMM:  return "MPI_ERR_COMM";
    case MPI_ERR_ARG:   return "MPI_ERR_ARG";
    case MPI_ERR_BUFFER: return "MPI_ERR_BUFFER";
    default:            return "another class";
    }
}

/* A valid allreduce after the errors: the communicator still works. */
static bool check_still_usable(MPI_Comm comm, expect_mode_t expect, int world_rank,
                               const char *comm_name)
{
    int rank, size, value, sum = -1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    value = rank + 1;
    engine_snapshot_t before;
    engine_snapshot_take(&before);
    int rc = MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, comm);
    char why[160] = "";
    bool passed = true;
    if (rc != MPI_SUCCESS || sum != size * (size + 1) / 2) {
        snprintf(why, sizeof why, "rc %d, sum %d, expected %d", rc, sum,
                 size * (size + 1) / 2);
        passed = false;
    } else if (!engine_rise_ok(&before, DFCCL_COLL_ALLREDUCE,
                               expect == EXPECT_ENGINE ? 1 : 0, why, sizeof why)) {
        passed = false;
    }
    if (!passed)
        fprintf(stderr, "FAIL rank %d comm=%s valid allreduce after errors: %s\n",
                world_rank, comm_name, why);
    return passed;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int world_rank, world_size;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    expect_mode_t expect;
    if (argc != 3 || strcmp(argv[1], "--expect") != 0 ||
        expect_mode_parse(argv[2], &expect) != 0) {
        if (world_rank == 0)
            fprintf(stderr, "usage: errors_check --expect engine|stock\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    struct { const char *name; MPI_Comm comm; } comms[3] = {
        { "world", MPI_COMM_WORLD }, { "dup", MPI_COMM_NULL },
        { "split_parity", MPI_COMM_NULL },
    };
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1].comm);
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &comms[2].comm);
    MPI_Comm verdict_comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &verdict_comm);

    verdict_log_t log;
    verdict_log_init(&log);
    double started = MPI_Wtime();
    for (int c = 0; c < 3; c++) {
        int comm_size;
        MPI_Comm_size(comms[c].comm, &comm_size);
        for (size_t row = 0; row < ERROR_ROWS; row++) {
            for (int blocking = 1; blocking >= 0; blocking--) {
                coll_t coll = expected_errors[row].coll;
                fault_t fault = expected_errors[row].fault;
                engine_snapshot_t before;
                engine_snapshot_take(&before);
                int rc = issue_faulty(coll, fault, blocking, comms[c].comm, comm_size);
                int error_class = MPI_SUCCESS;
                if (rc != MPI_SUCCESS)
                    MPI_Error_class(rc, &error_class);
                char why[160];
                bool passed = true;
                if (error_class != expected_errors[row].error_class) {
                    fprintf(stderr,
                            "FAIL rank %d comm=%s %s%s with %s: got %s (%d), expected %s\n",
                            world_rank, comms[c].name, blocking ? "" : "i",
                            coll_names[coll], fault_names[fault], class_name(error_class),
                            error_class, class_name(expected_errors[row].error_class));
                    passed = false;
                }
                /* An erroneous call must be refused before the engine. */
                if (!engine_unchanged(&before, why, sizeof why)) {
                    fprintf(stderr, "FAIL rank %d comm=%s %s%s with %s: %s\n", world_rank,
                            comms[c].name, blocking ? "" : "i", coll_names[coll],
                            fault_names[fault], why);
                    passed = false;
                }
                verdict_log_record(&log, passed);
            }
        }
    }
    for (int c = 0; c < 3; c++)
        verdict_log_record(&log, check_still_usable(comms[c].comm, expect, world_rank,
                                                    comms[c].name));
    double elapsed = MPI_Wtime() - started;

    size_t failed = verdict_log_report(&log, "errors_check", elapsed, verdict_comm);
    MPI_Comm_free(&comms[1].comm);
    MPI_Comm_free(&comms[2].comm);
    MPI_Comm_free(&verdict_comm);
    verdict_log_free(&log);
    MPI_Finalize();
    return failed == 0 ? 0 : 1;
}
