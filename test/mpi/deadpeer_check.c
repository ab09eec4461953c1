/*
 * deadpeer_check.c - a rank dies while the others are blocked in a
 * collective the engine carries; the survivors' call must fail with an MPI
 * error within seconds (the engine's liveness check of its peers), long
 * before the watchdog (run with --mca coll_dfccl_timeout 60 or more).
 *
 * FINDINGS_PLACEHOLDER
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <mpi.h>

#include "dfccl.h"
#include "test_util.h"

#define PROGRAM "deadpeer_check"

/* Tags of their own for the survivors' point-to-point agreement. */
enum { TAG_WARMUP = 7401, TAG_FLAGS = 7402, TAG_TIMES = 7403, TAG_RESULT = 7404 };

/* The checks, in the same order on every rank. The victim only takes part
 * in the first (its verdict reaches the lowest survivor before it dies). */
enum {
    CHECK_WARMUP,        /* warm-up allreduces right and carried by the engine */
    CHECK_BLOCKED_ERROR, /* the blocked allreduce returned an error ... */
    CHECK_BLOCKED_CLASS, /* ... of class MPI_ERR_OTHER ... */
    CHECK_BLOCKED_TIME,  /* ... within the bound ... */
    CHECK_BLOCKED_ENGINE,/* ... and the engine carried it and counted it failed */
    CHECK_AGAIN_ERROR,   /* a second allreduce on that communicator fails ... */
    CHECK_AGAIN_TIME,    /* ... at once */
    CHECK_FREE,          /* MPI_Comm_free of the broken communicator returns */
    CHECK_COUNT
};
static const char *const check_names[CHECK_COUNT] = {
    "warm-up allreduces carried by the engine",
    "blocked allreduce returns an error",
    "its error class is MPI_ERR_OTHER",
    "it returns within the bound",
    "the engine carried it and counted it failed",
    "a second allreduce fails",
    "the second allreduce fails at once",
    "MPI_Comm_free of the broken communicator",
};

#define WARMUPS 4
#define AGAIN_BOUND_S 1.0

typedef struct {
    double bound_s;       /* the blocked call must return within this */
    size_t bytes;         /* size of the blocked allreduce */
    int    victim;        /* rank that dies; -1: the last one */
    int    sleep_ms;      /* the victim's delay before it dies */
    bool   exit_death;    /* _exit(0) instead of raise(SIGKILL) */
    bool   finalize;      /* survivors end with MPI_Finalize, not _exit */
    int    linger_ms;     /* survivors wait this long before agreeing */
} options_t;

static void usage(void)
{
    fprintf(stderr,
            "usage: " PROGRAM " [--bound S] [--bytes B] [--victim R] [--sleep-ms M]\n"
            "       [--linger-ms M] [--death kill|exit] [--end exit|finalize]\n");
}

static int parse(int argc, char **argv, options_t *o)
{
    o->bound_s = 5.0;
    o->bytes = 8u << 20;
    o->victim = -1;
    o->sleep_ms = 300;
    o->exit_death = false;
    o->finalize = false;
    o->linger_ms = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL) return -1;
        if (strcmp(a, "--bound") == 0) o->bound_s = atof(v);
        else if (strcmp(a, "--bytes") == 0) o->bytes = strtoull(v, NULL, 0);
        else if (strcmp(a, "--victim") == 0) o->victim = atoi(v);
        else if (strcmp(a, "--sleep-ms") == 0) o->sleep_ms = atoi(v);
        else if (strcmp(a, "--linger-ms") == 0) o->linger_ms = atoi(v);
        else if (strcmp(a, "--death") == 0 && strcmp(v, "kill") == 0) o->exit_death = false;
        else if (strcmp(a, "--death") == 0 && strcmp(v, "exit") == 0) o->exit_death = true;
        else if (strcmp(a, "--end") == 0 && strcmp(v, "exit") == 0) o->finalize = false;
        else if (strcmp(a, "--end") == 0 && strcmp(v, "finalize") == 0) o->finalize = true;
        else return -1;
        i++;
    }
    if (o->bound_s <= 0 || o->bytes < sizeof(double) || o->sleep_ms < 0) return -1;
    return 0;
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Warm-up allreduces on comm: right sums, each carried by the engine. */
static bool warm_up(MPI_Comm comm, int world_rank)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    enum { N = 1024 };
    static double send[N], recv[N];
    engine_snapshot_t before;
    engine_snapshot_take(&before);
    bool ok = true;
    for (int w = 0; w < WARMUPS && ok; w++) {
        for (int k = 0; k < N; k++) {
            send[k] = (double)(rank + 1) * (k + w + 1);
            recv[k] = -1;
        }
        int rc = MPI_Allreduce(send, recv, N, MPI_DOUBLE, MPI_SUM, comm);
        double ranks_sum = (double)size * (size + 1) / 2;
        for (int k = 0; k < N && rc == MPI_SUCCESS; k++) {
            if (recv[k] != ranks_sum * (k + w + 1)) {
                fprintf(stderr, "FAIL rank %d warm-up %d: element %d is %g, expected %g\n",
                        world_rank, w, k, recv[k], ranks_sum * (k + w + 1));
                ok = false;
                break;
            }
        }
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "FAIL rank %d warm-up %d: rc %d\n", world_rank, w, rc);
            ok = false;
        }
    }
    char why[160];
    if (ok && !engine_rise_ok(&before, DFCCL_COLL_ALLREDUCE, WARMUPS, why, sizeof why)) {
        fprintf(stderr, "FAIL rank %d warm-ups not carried by the engine: %s"
                " (run with --mca coll_dfccl_host_buffers engine)\n", world_rank, why);
        ok = false;
    }
    return ok;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int world_rank, world_size;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    options_t opt;
    if (parse(argc, argv, &opt) != 0) {
        if (world_rank == 0) usage();
        MPI_Finalize();
        return 2;
    }
    int victim = opt.victim < 0 ? world_size - 1 : opt.victim;
    if (world_size < 2 || victim >= world_size) {
        if (world_rank == 0)
            fprintf(stderr, PROGRAM ": needs 2 or more ranks and a victim among them\n");
        MPI_Finalize();
        return 2;
    }
    int lowest = victim == 0 ? 1 : 0;   /* the lowest surviving rank */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);

    unsigned char flags[CHECK_COUNT];
    memset(flags, 0, sizeof flags);   /* 1: failed */
    flags[CHECK_WARMUP] = !warm_up(dup, world_rank);

    if (world_rank == victim) {
        /* Small and eager: in the receiver's queue before MPI_Send returns. */
        MPI_Send(&flags[CHECK_WARMUP], 1, MPI_UNSIGNED_CHAR, lowest, TAG_WARMUP,
                 MPI_COMM_WORLD);
        fflush(stdout);
        fflush(stderr);
        sleep_ms(opt.sleep_ms);   /* the others are blocked by now */
        if (opt.exit_death) _exit(0);
        raise(SIGKILL);
        _exit(9);   /* not reached */
    }

    /* Survivors: the blocked allreduce the victim never joins. */
    size_t count = opt.bytes / sizeof(double);
    double *send = malloc(count * sizeof(double)), *recv = malloc(count * sizeof(double));
    if (send == NULL || recv == NULL) {
        fprintf(stderr, "rank %d: out of memory\n", world_rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (size_t k = 0; k < count; k++) send[k] = (double)k;
    dfccl_stats_t stats_before, stats_after;
    dfccl_stats_get(&stats_before);
    double t0 = MPI_Wtime();
    int rc = MPI_Allreduce(send, recv, (int)count, MPI_DOUBLE, MPI_SUM, dup);
    double blocked_s = MPI_Wtime() - t0;
    dfccl_stats_get(&stats_after);
    int error_class = MPI_SUCCESS;
    char error_text[MPI_MAX_ERROR_STRING] = "";
    if (rc != MPI_SUCCESS) {
        int len = 0;
        MPI_Error_class(rc, &error_class);
        MPI_Error_string(rc, error_text, &len);
    }
    flags[CHECK_BLOCKED_ERROR] = rc == MPI_SUCCESS;
    flags[CHECK_BLOCKED_CLASS] = error_class != MPI_ERR_OTHER;
    flags[CHECK_BLOCKED_TIME] = !(blocked_s < opt.bound_s);
    uint64_t posted = stats_after.posted[DFCCL_COLL_ALLREDUCE] -
                      stats_before.posted[DFCCL_COLL_ALLREDUCE];
    uint64_t failed = stats_after.failed - stats_before.failed;
    flags[CHECK_BLOCKED_ENGINE] = !(posted == 1 && failed == 1);
    if (flags[CHECK_BLOCKED_ERROR] || flags[CHECK_BLOCKED_CLASS] || flags[CHECK_BLOCKED_TIME] ||
        flags[CHECK_BLOCKED_ENGINE])
        fprintf(stderr, "FAIL rank %d: blocked allreduce of %zu bytes: rc %d (class %d, \"%s\")"
                " after %.3f s (bound %.1f s); engine posted +%llu, failed +%llu\n",
                world_rank, count * sizeof(double), rc, error_class, error_text, blocked_s,
                opt.bound_s, (unsigned long long)posted, (unsigned long long)failed);

    int one = 1, sum = 0;
    t0 = MPI_Wtime();
    int rc2 = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, dup);
    double again_s = MPI_Wtime() - t0;
    flags[CHECK_AGAIN_ERROR] = rc2 == MPI_SUCCESS;
    flags[CHECK_AGAIN_TIME] = !(again_s < AGAIN_BOUND_S);
    if (flags[CHECK_AGAIN_ERROR] || flags[CHECK_AGAIN_TIME])
        fprintf(stderr, "FAIL rank %d: second allreduce: rc %d after %.3f s (bound %.1f s)\n",
                world_rank, rc2, again_s, AGAIN_BOUND_S);

    t0 = MPI_Wtime();
    int rc3 = MPI_Comm_free(&dup);
    double free_s = MPI_Wtime() - t0;
    flags[CHECK_FREE] = rc3 != MPI_SUCCESS || !(free_s < opt.bound_s);
    if (flags[CHECK_FREE])
        fprintf(stderr, "FAIL rank %d: MPI_Comm_free: rc %d after %.3f s\n", world_rank, rc3,
                free_s);
    free(send);
    free(recv);
    if (opt.linger_ms > 0) sleep_ms(opt.linger_ms);

    /* Agreement over point-to-point between survivors only: a collective
     * on any communicator holding the dead rank would wait for it. */
    double times[3] = { blocked_s, again_s, free_s };
    long total_failed = 0;
    if (world_rank != lowest) {
        MPI_Send(flags, CHECK_COUNT, MPI_UNSIGNED_CHAR, lowest, TAG_FLAGS, MPI_COMM_WORLD);
        MPI_Send(times, 3, MPI_DOUBLE, lowest, TAG_TIMES, MPI_COMM_WORLD);
        MPI_Recv(&total_failed, 1, MPI_LONG, lowest, TAG_RESULT, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    } else {
        unsigned char merged[CHECK_COUNT], theirs[CHECK_COUNT];
        memcpy(merged, flags, sizeof merged);
        printf(PROGRAM ": %d ranks, rank %d died (%s) after %d ms; allreduce of %zu bytes,"
               " bound %.1f s\n", world_size, victim, opt.exit_death ? "_exit" : "SIGKILL",
               opt.sleep_ms, count * sizeof(double), opt.bound_s);
        printf(PROGRAM ": rank %d: blocked call returned after %.3f s (%s), second call after"
               " %.3f s, comm_free %.3f s\n", world_rank, blocked_s,
               rc == MPI_SUCCESS ? "MPI_SUCCESS" : error_text, again_s, free_s);
        /* The victim's warm-up verdict was sent before it died; missing
         * counts as a failure rather than a hang. */
        unsigned char victim_warmup = 1;
        MPI_Request req;
        MPI_Irecv(&victim_warmup, 1, MPI_UNSIGNED_CHAR, victim, TAG_WARMUP, MPI_COMM_WORLD, &req);
        int done = 0;
        double deadline = MPI_Wtime() + 5.0;
        while (!done && MPI_Wtime() < deadline) {
            MPI_Test(&req, &done, MPI_STATUS_IGNORE);
            if (!done) sleep_ms(1);
        }
        if (!done) {
            fprintf(stderr, "FAIL: the victim's warm-up verdict never arrived\n");
            MPI_Cancel(&req);
            victim_warmup = 1;
        }
        merged[CHECK_WARMUP] |= victim_warmup;
        for (int r = 0; r < world_size; r++) {
            if (r == lowest || r == victim) continue;
            double t[3];
            MPI_Recv(theirs, CHECK_COUNT, MPI_UNSIGNED_CHAR, r, TAG_FLAGS, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            MPI_Recv(t, 3, MPI_DOUBLE, r, TAG_TIMES, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int c = 0; c < CHECK_COUNT; c++) merged[c] |= theirs[c];
            printf(PROGRAM ": rank %d: blocked call returned after %.3f s, second call after"
                   " %.3f s, comm_free %.3f s\n", r, t[0], t[1], t[2]);
        }
        for (int c = 0; c < CHECK_COUNT; c++) {
            total_failed += merged[c];
            if (merged[c]) printf(PROGRAM ": failed: %s\n", check_names[c]);
        }
        printf(PROGRAM ": %ld passed, %ld failed\n", (long)CHECK_COUNT - total_failed,
               total_failed);
        for (int r = 0; r < world_size; r++)
            if (r != lowest && r != victim)
                MPI_Send(&total_failed, 1, MPI_LONG, r, TAG_RESULT, MPI_COMM_WORLD);
    }
    fflush(stdout);
    fflush(stderr);
    int status = total_failed == 0 ? 0 : 1;
    if (opt.finalize) {
        double f0 = MPI_Wtime();
        MPI_Finalize();
        fprintf(stderr, PROGRAM ": rank %d: MPI_Finalize returned after %.3f s\n", world_rank,
                MPI_Wtime() - f0);
        return status;
    }
    _exit(status);
}
