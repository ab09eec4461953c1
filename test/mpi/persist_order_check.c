/*
 * persist_order_check.c - persistent collectives started in a different
 * order on every rank (MPI-4.0 6.13 matches them at initialisation, so
 * their starts may come in any order; MPICH's test/mpi/coll has the same
 * program since its PR 5352).
 *
 * Three persistent requests per communicator (allreduce, allgather,
 * reduce_scatter_block) on --comms communicators (dups of
 * MPI_COMM_WORLD), inited in the same order everywhere; each iteration
 * fills the inputs, MPI_Starts all requests in an order of this rank's own
 * (a seeded shuffle per rank), runs a blocking allreduce on the first
 * communicator before or after them (per rank too: legal, since a start
 * is local and matched at init), waits for the requests in another order
 * of its own and checks every result. Then it checks that the engine
 * carried the runs (its posted counters rose by one per start) unless
 * --expect stock.
 *
 * --strict: the requests are inited with the info key
 *   mpi_assert_strict_persistent_collective_ordering=true (its stand-in
 *   dfccl_strict_persistent_order where MPI_MAX_INFO_KEY is too short for
 *   it, as in Open MPI 4.1) and started in
 *   the same order on every rank (the promise that key makes), with the
 *   blocking allreduce after them everywhere.
 * --mismatch: the middle request of the first communicator is an allgather
 *   on rank 0 and an allreduce elsewhere (different init calls, a real
 *   mismatch), started in the first iteration only (Open MPI frees a
 *   request whose wait fails); every rank's wait for it must return an
 *   error, the other requests must complete correctly, and the job must
 *   end cleanly.
 * --memory host|device (test_memory.h) chooses the buffers.
 *
 * Prints "persist_order_check: N passed, M failed"; ends with MPI_Finalize.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <mpi-ext.h>

#include "test_memory.h"
#include "test_rng.h"
#include "p2p_verdict.h"
#include "test_util.h"

#define PROGRAM "persist_order_check"
#define KINDS 3   /* allreduce, allgather, reduce_scatter_block */

typedef struct {
    int         comms, iterations, count;
    uint64_t    seed;
    bool        strict, mismatch, expect_engine;
    test_memory_kind_t memory;
} options_t;

static int rank, size;

static void usage(void)
{
    if (rank == 0)
        fprintf(stderr, "usage: " PROGRAM " [--comms N] [--iterations N] [--count N] [--seed S]"
                        " [--strict] [--mismatch] [--expect engine|stock]"
                        " [--memory host|device]\n");
}

static int parse(int argc, char **argv, options_t *o)
{
    *o = (options_t){ 4, 10, 64, 1, false, false, true, TEST_MEMORY_HOST };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--strict")) o->strict = true;
        else if (!strcmp(a, "--mismatch")) o->mismatch = true;
        else if (!strcmp(a, "--comms") && v && (o->comms = atoi(v)) > 0) i++;
        else if (!strcmp(a, "--iterations") && v && (o->iterations = atoi(v)) > 0) i++;
        else if (!strcmp(a, "--count") && v && (o->count = atoi(v)) > 0) i++;
        else if (!strcmp(a, "--seed") && v) o->seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--expect") && v) o->expect_engine = !strcmp(argv[++i], "engine");
        else return -1;
    }
    return 0;
}

/* The value rank r contributes at element e of request j in iteration it:
 * small integers, exact in double whatever the order of the sums. */
static double input_of(int r, int it, int j, int e)
{
    return (double)((r * 7 + it * 3 + j * 5 + e) % 1000);
}

static void shuffle(int *order, int n, test_rng_t *rng)
{
    for (int i = 0; i < n; i++) order[i] = i;
    test_rng_shuffle(rng, order, (size_t)n);
}

/* What request j (kind j % KINDS; an allgather where the mismatch puts
 * one) must hold after iteration it; returns the number of wrong values. */
static long check_result(const options_t *o, int it, int j, int kind, const double *got)
{
    long wrong = 0;
    int n = o->count;

    if (kind == 0) {
        for (int e = 0; e < n; e++) {
            double want = 0;
            for (int r = 0; r < size; r++) want += input_of(r, it, j, e);
            wrong += got[e] != want;
        }
    } else if (kind == 1) {
        for (int r = 0; r < size; r++)
            for (int e = 0; e < n; e++) wrong += got[r * n + e] != input_of(r, it, j, e);
    } else {
        for (int e = 0; e < n; e++) {
            double want = 0;
            for (int r = 0; r < size; r++) want += input_of(r, it, j, rank * n + e);
            wrong += got[e] != want;
        }
    }
    return wrong;
}

int main(int argc, char **argv)
{
    test_memory_kind_t memory = test_memory_setup(&argc, argv, PROGRAM);
    options_t o;
    verdict_log_t log;
    engine_snapshot_t before, after;
    MPI_Info info = MPI_INFO_NULL;
    long wrong = 0, errors = 0, mismatch_errors = 0, blocking_wrong = 0;
    double start, mismatch_wait = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (parse(argc, argv, &o) != 0) {
        usage();
        MPI_Finalize();
        return 2;
    }
    o.memory = memory;
    verdict_log_init(&log);
    start = MPI_Wtime();

    int nreq = o.comms * KINDS, n = o.count;
    size_t in_elems = (size_t)n * (size_t)size, out_elems = (size_t)n * (size_t)size;
    MPI_Comm *comms = calloc((size_t)o.comms, sizeof(MPI_Comm));
    MPI_Request *reqs = calloc((size_t)nreq, sizeof(MPI_Request));
    int *kind = calloc((size_t)nreq, sizeof(int)), *order = calloc((size_t)nreq, sizeof(int));
    void **in = calloc((size_t)nreq, sizeof(void *)), **out = calloc((size_t)nreq, sizeof(void *));
    double *host = malloc(sizeof(double) * in_elems);
    if (!comms || !reqs || !kind || !order || !in || !out || !host) {
        fprintf(stderr, PROGRAM ": out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (o.strict) {
        /* MPI-4.1's key is longer than Open MPI 4.1's MPI_MAX_INFO_KEY
         * (36): there dfccl reads its shorter stand-in */
        MPI_Info_create(&info);
        if (strlen("mpi_assert_strict_persistent_collective_ordering") < MPI_MAX_INFO_KEY)
            MPI_Info_set(info, "mpi_assert_strict_persistent_collective_ordering", "true");
        else
            MPI_Info_set(info, "dfccl_strict_persistent_order", "true");
    }
    for (int c = 0; c < o.comms; c++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[c]);
        MPI_Comm_set_errhandler(comms[c], MPI_ERRORS_RETURN);
    }
    /* the inits: the same order on every rank, as MPI requires */
    for (int j = 0; j < nreq; j++) {
        MPI_Comm comm = comms[j / KINDS];
        kind[j] = j % KINDS;
        if (o.mismatch && j == 1) kind[j] = rank == 0 ? 1 : 0;   /* allgather vs allreduce */
        in[j] = test_memory_alloc(o.memory, sizeof(double) * in_elems);
        out[j] = test_memory_alloc(o.memory, sizeof(double) * out_elems);
        if (kind[j] == 0)
            MPIX_Allreduce_init(in[j], out[j], n, MPI_DOUBLE, MPI_SUM, comm, info, &reqs[j]);
        else if (kind[j] == 1)
            MPIX_Allgather_init(in[j], n, MPI_DOUBLE, out[j], n, MPI_DOUBLE, comm, info, &reqs[j]);
        else
            MPIX_Reduce_scatter_block_init(in[j], out[j], n, MPI_DOUBLE, MPI_SUM, comm, info,
                                           &reqs[j]);
    }
    engine_snapshot_take(&before);

    test_rng_t rng;
    test_rng_init(&rng, test_rng_mix(o.seed, (uint64_t)(o.strict ? 0 : rank)));
    for (int it = 0; it < o.iterations; it++) {
        for (int j = 0; j < nreq; j++) {
            for (size_t e = 0; e < in_elems; e++) host[e] = input_of(rank, it, j, (int)e);
            test_memory_to_buffer(o.memory, in[j], host, sizeof(double) * in_elems);
        }
        /* a blocking allreduce on the first communicator, before the starts
         * on some ranks and after them on others */
        bool blocking_first = !o.strict && (test_rng_next(&rng) & 1);
        int bin = rank + it, bout = -1, want = size * it + size * (size - 1) / 2;
        if (blocking_first) {
            MPI_Allreduce(&bin, &bout, 1, MPI_INT, MPI_SUM, comms[0]);
            blocking_wrong += bout != want;
        }
        if (o.strict) for (int j = 0; j < nreq; j++) order[j] = j;
        else shuffle(order, nreq, &rng);
        for (int j = 0; j < nreq; j++) {
            if (reqs[order[j]] == MPI_REQUEST_NULL) continue;   /* its wait failed */
            int rc = MPI_Start(&reqs[order[j]]);
            if (rc != MPI_SUCCESS) errors++;
        }
        if (!blocking_first) {
            MPI_Allreduce(&bin, &bout, 1, MPI_INT, MPI_SUM, comms[0]);
            blocking_wrong += bout != want;
        }
        if (!o.strict) shuffle(order, nreq, &rng);
        for (int j = 0; j < nreq; j++) {
            int r = order[j];
            if (reqs[r] == MPI_REQUEST_NULL) continue;
            double t0 = MPI_Wtime();
            int rc = MPI_Wait(&reqs[r], MPI_STATUS_IGNORE);
            if (o.mismatch && r == 1) {
                mismatch_errors += rc != MPI_SUCCESS;
                mismatch_wait = MPI_Wtime() - t0 > mismatch_wait ? MPI_Wtime() - t0 : mismatch_wait;
                continue;
            }
            if (rc != MPI_SUCCESS) {
                errors++;
                continue;
            }
            test_memory_from_buffer(o.memory, host, out[r],
                                    sizeof(double) * (kind[r] == 1 ? out_elems : (size_t)n));
            wrong += check_result(&o, it, r, kind[r], host);
        }
    }
    engine_snapshot_take(&after);

    /* every rank's verdicts, by point-to-point messages to rank 0 (a
     * mismatch leaves a communicator failed) */
    long all_wrong = p2p_reduce_long(wrong, P2P_SUM);
    long all_errors = p2p_reduce_long(errors, P2P_SUM);
    long all_blocking = p2p_reduce_long(blocking_wrong, P2P_SUM);
    verdict_log_record(&log, all_wrong == 0);
    verdict_log_record(&log, all_errors == 0);
    verdict_log_record(&log, all_blocking == 0);
    if (o.mismatch) {
        /* the mismatched request fails on every rank, at every start */
        long failed = p2p_reduce_long(mismatch_errors, P2P_MIN);
        verdict_log_record(&log, failed >= 1);
    }
    if (o.expect_engine) {
        /* each start of a carried request is one posted collective */
        uint64_t rose = 0;
        for (int k = 0; k < DFCCL_COLL_TYPE_COUNT; k++) rose += after.posted[k] - before.posted[k];
        long carried = p2p_reduce_long((long)rose >= (long)o.iterations * (nreq - o.mismatch),
                                       P2P_MIN);
        verdict_log_record(&log, carried == 1);
    }
    if (rank == 0)
        printf(PROGRAM ": %d ranks, %d communicators x %d requests, %d iterations, %s starts,"
               " %s memory: %ld wrong values, %ld failed calls%s\n", size, o.comms, KINDS,
               o.iterations, o.strict ? "in-order (strict)" : "per-rank random",
               test_memory_name(o.memory), all_wrong, all_errors,
               o.mismatch ? " (the mismatched request apart)" : "");
    if (o.mismatch) {
        long slowest = p2p_reduce_long((long)(mismatch_wait * 1000), P2P_MAX);
        if (rank == 0)
            printf(PROGRAM ": the mismatched request failed on every rank, slowest wait %ld ms\n",
                   slowest);
    }
    size_t failed = p2p_verdict_report(&log, PROGRAM, MPI_Wtime() - start);

    for (int j = 0; j < nreq; j++) {
        if (reqs[j] != MPI_REQUEST_NULL) MPI_Request_free(&reqs[j]);
        test_memory_free(o.memory, in[j]);
        test_memory_free(o.memory, out[j]);
    }
    for (int c = 0; c < o.comms; c++) MPI_Comm_free(&comms[c]);
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    free(comms);
    free(reqs);
    free(kind);
    free(order);
    free(in);
    free(out);
    free(host);
    verdict_log_free(&log);
    MPI_Finalize();
    test_memory_teardown();
    return failed ? 1 : 0;
}
