/*
 * threads_check.c - one thread per communicator, each looping blocking
 * MPI_Allreduce on its own communicator (MPI_THREAD_MULTIPLE).
 *
 * Legal MPI: each communicator sees its calls in the same order on every
 * rank; only the interleaving across communicators differs. Thread start
 * order and pacing depend on the rank, so different ranks enter different
 * communicators first. An engine that runs collectives strictly in
 * submission order deadlocks on this; a preemptive one does not.
 *
 * Sizes rotate through 1 element to --max-count ints; every result is
 * checked bit-exactly and the engine's allreduce counter must rise by
 * threads x iterations (x RUNS with --persistent RUNS, where each call is
 * a persistent request started RUNS times with new input). Verdicts travel
 * point-to-point (p2p_verdict.c).
 * --memory device hands MPI device buffers (coll_case.c).
 * Without MPI_THREAD_MULTIPLE the program says why and passes one check.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <mpi.h>

#include "coll_case.h"
#include "p2p_verdict.h"
#include "test_rng.h"
#include "test_util.h"

#define MIN_THREADS 4
#define MAX_THREADS 16
#define MAX_PRINTED 20

typedef struct {
    int           threads;
    int           iterations;
    int           persistent;   /* > 0: each call a persistent request started this often */
    size_t        max_count;
    uint64_t      seed;
    expect_mode_t expect;
    test_memory_kind_t memory;
} options_t;

typedef struct {
    const options_t *opts;
    int              index;
    MPI_Comm         comm;
    int              world_rank;
    int              failures;   /* failed calls of this thread */
    int              printed;
} worker_t;

static void usage(void)
{
    fprintf(stderr, "usage: threads_check [--threads T (>= %d)] [--iterations N]\n"
                    "                     [--max-count N] [--seed S] [--expect engine|stock]\n"
                    "                     [--persistent RUNS]\n"
                    "                     [--memory host|device|mixed]\n",
            MIN_THREADS);
}

static int parse_options(int argc, char **argv, options_t *o)
{
    *o = (options_t){ .threads = 4, .iterations = 50, .max_count = 1 << 18, .seed = 1 };
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (value == NULL)
            return -1;
        i++;
        if (strcmp(arg, "--expect") == 0) {
            if (expect_mode_parse(value, &o->expect) != 0)
                return -1;
            continue;
        }
        char *end;
        unsigned long long n = strtoull(value, &end, 0);
        if (end == value || *end != '\0')
            return -1;
        if (strcmp(arg, "--threads") == 0 && n >= MIN_THREADS && n <= MAX_THREADS)
            o->threads = (int)n;
        else if (strcmp(arg, "--iterations") == 0 && n > 0 && n < 1000000)
            o->iterations = (int)n;
        else if (strcmp(arg, "--persistent") == 0 && n > 0 && n <= 100)
            o->persistent = (int)n;
        else if (strcmp(arg, "--max-count") == 0 && n > 0 && n < (1u << 26))
            o->max_count = (size_t)n;
        else if (strcmp(arg, "--seed") == 0)
            o->seed = n;
        else
            return -1;
    }
    return 0;
}

static void sleep_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    nanosleep(&ts, NULL);
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    const options_t *o = w->opts;
    /* Pacing from (seed, rank, thread): ranks reach their communicators at
     * different moments and in different orders. */
    test_rng_t pace;
    test_rng_init(&pace, test_rng_mix(test_rng_mix(o->seed, (uint64_t)w->world_rank),
                                      (uint64_t)w->index));
    sleep_us((long)test_rng_below(&pace, 20000));
    for (int it = 0; it < o->iterations; it++) {
        /* The size must agree across ranks: it depends on (thread, it) only. */
        test_rng_t shared;
        test_rng_init(&shared, test_rng_mix(test_rng_mix(o->seed, 0x7000 + (uint64_t)w->index),
                                            (uint64_t)it));
        coll_case_t c = {
            .kind = CASE_ALLREDUCE,
            .type = coll_case_pick_type(CASE_ALLREDUCE, test_rng_next(&shared)),
            .count = (size_t)test_rng_log_uniform(&shared, 1, o->max_count),
            .seed = (uint32_t)test_rng_next(&shared),
            .comm = w->comm,
            .memory = o->memory,
        };
        if (coll_case_prepare(&c) != 0) {
            fprintf(stderr, "rank %d: out of memory\n", w->world_rank);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        char why[MPI_MAX_ERROR_STRING + 64];
        /* --persistent: one request, started and waited for RUNS times with
         * new input each time; otherwise one blocking call */
        MPI_Request request = MPI_REQUEST_NULL;
        int rc = o->persistent > 0 ? coll_case_init(&c, &request) : MPI_SUCCESS;
        bool ok = rc == MPI_SUCCESS;
        for (int run = 0; run < (o->persistent > 0 ? o->persistent : 1) && ok; run++) {
            if (run > 0)
                coll_case_reseed(&c, c.seed * 2654435761u + (uint32_t)run);
            if (o->persistent == 0) {
                rc = coll_case_run_blocking(&c);
            } else {
                rc = MPI_Start(&request);
                if (rc == MPI_SUCCESS)
                    rc = MPI_Wait(&request, MPI_STATUS_IGNORE);
            }
            ok = rc == MPI_SUCCESS;
            if (ok)
                ok = coll_case_verify(&c, why, sizeof why);
        }
        if (rc != MPI_SUCCESS)
            coll_case_error_text(rc, why, sizeof why);
        if (request != MPI_REQUEST_NULL)
            MPI_Request_free(&request);
        if (!ok) {
            w->failures++;
            if (w->printed++ < MAX_PRINTED)
                fprintf(stderr, "FAIL rank %d thread %d iteration %d %s count=%zu: %s\n",
                        w->world_rank, w->index, it, c.type->name, c.count, why);
        }
        coll_case_free(&c);
        if (rc != MPI_SUCCESS)
            break;  /* the engine failed this communicator: more would only wait */
        if (test_rng_below(&pace, 4) == 0)
            sleep_us((long)test_rng_below(&pace, 2000));
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, world_rank, world_size;
    /* Device selection must precede MPI_Init. */
    test_memory_kind_t memory = test_memory_setup(&argc, argv, "threads_check");
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    options_t o;
    if (parse_options(argc, argv, &o) != 0) {
        if (world_rank == 0)
            usage();
        MPI_Finalize();
        return 2;
    }
    o.memory = memory;
    if (provided < MPI_THREAD_MULTIPLE) {
        if (world_rank == 0) {
            printf("threads_check: skipped: this MPI provides thread level %d, not "
                   "MPI_THREAD_MULTIPLE\n", provided);
            printf("threads_check: 1 passed, 0 failed in 0.00 s\n");
        }
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (world_rank == 0)
        printf("threads_check: np=%d threads=%d iterations=%d persistent=%d max_count=%zu "
               "expect=%s memory=%s\n", world_size, o.threads, o.iterations, o.persistent,
               o.max_count,
               expect_mode_name(o.expect), test_memory_name(o.memory));

    /* Communicators are created in one order on every rank, before any
     * thread runs, and each gets one warm-up call in that order: the
     * engine's set-up of a communicator is a blocking stock collective. */
    worker_t workers[MAX_THREADS];
    pthread_t threads[MAX_THREADS];
    for (int t = 0; t < o.threads; t++) {
        workers[t] = (worker_t){ .opts = &o, .index = t, .world_rank = world_rank };
        MPI_Comm_dup(MPI_COMM_WORLD, &workers[t].comm);
        int one = 1, sum = 0;
        if (MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, workers[t].comm) != MPI_SUCCESS ||
            sum != world_size) {
            fprintf(stderr, "FAIL rank %d: warm-up on communicator %d\n", world_rank, t);
            workers[t].failures++;
        }
    }
    engine_snapshot_t before;
    engine_snapshot_take(&before);
    double started = MPI_Wtime();

    /* Start order differs per rank: rotated by the rank. */
    for (int i = 0; i < o.threads; i++) {
        int t = (i + world_rank) % o.threads;
        if (pthread_create(&threads[t], NULL, worker_main, &workers[t]) != 0) {
            fprintf(stderr, "rank %d: cannot create thread %d\n", world_rank, t);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    for (int t = 0; t < o.threads; t++)
        pthread_join(threads[t], NULL);
    double elapsed = MPI_Wtime() - started;

    verdict_log_t log;
    verdict_log_init(&log);
    int failures = 0;
    for (int t = 0; t < o.threads; t++) {
        verdict_log_record(&log, workers[t].failures == 0);
        failures += workers[t].failures;
    }
    char why[160];
    uint64_t rise = o.expect == EXPECT_ENGINE ? (uint64_t)o.threads * (uint64_t)o.iterations *
                                                    (uint64_t)(o.persistent > 0 ? o.persistent : 1)
                                              : 0;
    bool counters_ok = failures > 0 ||  /* stopped threads posted fewer: already failed */
                       engine_rise_ok(&before, DFCCL_COLL_ALLREDUCE, rise, why, sizeof why);
    if (!counters_ok)
        fprintf(stderr, "FAIL rank %d counters: %s\n", world_rank, why);
    verdict_log_record(&log, counters_ok);
    size_t failed = p2p_verdict_report(&log, "threads_check", elapsed);

    for (int t = 0; t < o.threads; t++)
        MPI_Comm_free(&workers[t].comm);
    verdict_log_free(&log);
    MPI_Finalize();
    test_memory_teardown();
    return failed == 0 ? 0 : 1;
}
