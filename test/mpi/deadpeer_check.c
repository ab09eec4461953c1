/*
 * deadpeer_check.c - a rank dies while the others are blocked in a
 * collective the engine carries; the survivors' call must fail with an MPI
 * error within seconds (the engine's liveness check of its peers), long
 * before the watchdog (run with --mca coll_dfccl_timeout 60 or more).
 * Driven by deadpeer_check.sh (make check); run by hand:
 *
 *   mpirun -np N --enable-recovery --mca coll_dfccl_host_buffers engine \
 *       --mca coll_dfccl_gpu 0 --mca coll_dfccl_timeout 60 deadpeer_check
 *
 * --memory device puts every buffer of the collectives in device memory
 * (deadpeer_check.sh runs it so with DFCCL_DEADPEER_GPU: the GPU side, each
 * rank a node of its own, its links over UCX).
 *
 * Every rank: MPI_ERRORS_RETURN on MPI_COMM_WORLD and a dup, four warm-up
 * allreduces on the dup (right sums, the engine's "posted" counter rises by
 * four). The victim (the last rank, --victim R) sends its verdict and pid
 * to the lowest surviving rank, sleeps --sleep-ms (300), sends its time of
 * death and raise(SIGKILL)s (--death exit: _exit(0)); with --victim-joins it
 * first starts the same allreduce itself (MPI_Iallreduce) and dies in the
 * middle of the transfer: as soon as its engine has sent a sixteenth of
 * --bytes to other nodes, or after --sleep-ms, whichever comes first (a
 * fixed delay alone outlasts the whole transfer on fast links); it reports
 * whether its own allreduce had finished, which fails the run. The survivors, meanwhile in an allreduce
 * of --bytes (8 MiB) on the dup, check that it returns an error of class
 * MPI_ERR_OTHER within --bound seconds (5), that the engine failed it (in
 * flight: posted +1 and failed +1; or, for a survivor that comes late,
 * refused when posted because a peer had already failed that call: both
 * +0), that a second allreduce on the dup fails within 1 s, that
 * MPI_Comm_free of the dup returns, and (every rank) that the engine's
 * segments it maps have no name left in /dev/shm (/proc/self/maps). They
 * agree over MPI_Send/MPI_Recv to the lowest survivor only (any collective
 * on a communicator holding the dead rank would wait for it), which prints
 * the pids, each survivor's times and "deadpeer_check: N passed, M failed".
 *
 * What Open MPI 4.1.4 (ORTE) needs so that the survivors run on and mpirun
 * ends with their output (measured on Debian 12, np 2-4):
 *   - nothing (default): mpirun aborts the job as soon as it sees the death:
 *     a SIGKILL counts as a non-zero exit ("1 process returned a non-zero
 *     exit code. Per user-direction, the job has been aborted"), an
 *     _exit(0) before MPI_Finalize as "exiting improperly"; the survivors
 *     are killed. The verdict got out only in a run where the survivors
 *     finished before mpirun (starved by spinning ranks on 2 cores) acted;
 *     with --linger-ms 3000 the survivors were killed before it.
 *   - --mca orte_abort_on_non_zero_status 0: survivors run on (SIGKILL
 *     case). Ending with _exit: output intact, but then mpirun aborts on
 *     "exiting improperly" (status 137). Ending with MPI_Finalize (one
 *     run): it returned on every survivor, yet mpirun never exited (killed
 *     by the timeout after 90 s).
 *   - --enable-recovery (same as --mca orte_enable_recovery 1; the default
 *     --max-restarts 0 makes the job "continuously operating"): survivors
 *     run on for either death, and mpirun ends when they have; its status
 *     is 0 even when survivors exit non-zero, so only the verdict line
 *     tells. mpirun prints "PMIX ERROR: BAD-PARAM in file
 *     ../../../src/event/pmix_event_notification.c at line 1033" one to
 *     three times per run (harmless). The survivors then end:
 *       - with fflush and _exit(status) (--end exit): worked in every run;
 *       - with MPI_Finalize (--end finalize, the default): usually returns
 *         in < 0.2 s, but in 3 of 26 runs (and 2 of 15 later) it hung on
 *         every survivor in ompi_mpi_finalize (main thread in
 *         sched_yield/usleep waiting for the PMIx fence that includes the
 *         dead rank; the engine's thread idle in its queue), so mpirun
 *         never ended. With --mca async_mpi_finalize 1 (Open MPI leaves
 *         that fence out), as deadpeer_check.sh runs it, it returned in
 *         every run (30 of 30) in < 0.1 s. Each survivor prints a line
 *         after MPI_Finalize with the status it exits with, which
 *         deadpeer_check.sh checks.
 * Open MPI's shared-memory segments (vader_segment.<host>.<job>.<rank>):
 * the killed rank's disappears from /dev/shm right after its death, the
 * survivors' when mpirun ends (after _exit too); those of a job whose
 * mpirun was killed by a timeout stay behind. The engine's dfccl-* names
 * are never left: they are unlinked once every rank has mapped them.
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

#include "include/dfccl.h"
#include "test_memory.h"
#include "test_util.h"

#define PROGRAM "deadpeer_check"

/* Tags of their own for the survivors' point-to-point agreement. */
enum { TAG_WARMUP = 7401, TAG_DEATH = 7402, TAG_FLAGS = 7403, TAG_TIMES = 7404,
       TAG_RESULT = 7405 };

/* The checks, in the same order on every rank. The victim only takes part
 * in CHECK_WARMUP and CHECK_UNLINKED (its verdict reaches the lowest
 * survivor before it dies). */
enum {
    CHECK_WARMUP,        /* warm-up allreduces right and carried by the engine */
    CHECK_BLOCKED_ERROR, /* the blocked allreduce returned an error ... */
    CHECK_BLOCKED_CLASS, /* ... of class MPI_ERR_OTHER ... */
    CHECK_BLOCKED_TIME,  /* ... within the bound ... */
    CHECK_BLOCKED_ENGINE,/* ... and the engine failed it (in flight or when posted) */
    CHECK_AGAIN_ERROR,   /* a second allreduce on that communicator fails ... */
    CHECK_AGAIN_TIME,    /* ... at once */
    CHECK_FREE,          /* MPI_Comm_free of the broken communicator returns */
    CHECK_UNLINKED,      /* the engine's mapped segments have no name left */
    CHECK_INTERRUPTED,   /* --victim-joins: the victim died with its allreduce unfinished */
    CHECK_COUNT
};
static const char *const check_names[CHECK_COUNT] = {
    "warm-up allreduces carried by the engine",
    "blocked allreduce returns an error",
    "its error class is MPI_ERR_OTHER",
    "it returns within the bound",
    "the engine failed it in flight or refused it when posted",
    "a second allreduce fails",
    "the second allreduce fails at once",
    "MPI_Comm_free of the broken communicator",
    "the engine's segments mapped here are unlinked",
    "the victim died with its own allreduce unfinished",
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
    bool   victim_joins;  /* the victim posts the allreduce too, then dies */
    bool   kill_host;     /* every rank on the victim's node dies with it */
} options_t;

static void usage(void)
{
    fprintf(stderr,
            "usage: " PROGRAM " [--bound S] [--bytes B] [--victim R] [--sleep-ms M]\n"
            "       [--linger-ms M] [--victim-joins] [--kill-host] [--death kill|exit]\n"
            "       [--end exit|finalize]\n");
}

static int parse(int argc, char **argv, options_t *o)
{
    o->bound_s = 5.0;
    o->bytes = 8u << 20;
    o->victim = -1;
    o->sleep_ms = 300;
    o->exit_death = false;
    o->finalize = true;
    o->linger_ms = 0;
    o->victim_joins = false;
    o->kill_host = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--kill-host") == 0) {
            o->kill_host = true;
            continue;
        }
        if (strcmp(a, "--victim-joins") == 0) {
            o->victim_joins = true;
            continue;
        }
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

/* One clock for all processes of the host (the victim's time of death). */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* With --victim-joins, a dying rank's wait after it posted the allreduce:
 * until its engine has sent bytes / 16 of payload to other nodes (the
 * counter rises while the transfer runs; every rank of a node sends across
 * nodes in the ring and hierarchical plans) or sleep_ms passed. A rank
 * cannot finish its part of the allreduce before it has sent that much, so
 * it dies with the collective unfinished however fast the links are. */
static void wait_mid_transfer(size_t bytes, int sleep_ms_bound)
{
    dfccl_stats_t stats;
    dfccl_stats_get(&stats);
    uint64_t start = stats.net_bytes_sent;
    double deadline = now_s() + sleep_ms_bound / 1000.0;
    while (now_s() < deadline) {
        dfccl_stats_get(&stats);
        if (stats.net_bytes_sent - start >= bytes / 16) return;
        struct timespec ts = { 0, 200000L };
        nanosleep(&ts, NULL);
    }
}

/* Waits up to timeout_s for a message already sent by a rank that has died
 * since; returns whether it came. */
static bool recv_from_dead(void *buf, int count, MPI_Datatype type, int source, int tag,
                           double timeout_s)
{
    MPI_Request req;
    int done = 0;
    double deadline = now_s() + timeout_s;
    MPI_Irecv(buf, count, type, source, tag, MPI_COMM_WORLD, &req);
    while (!done && now_s() < deadline) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (!done) sleep_ms(1);
    }
    if (!done) {
        MPI_Cancel(&req);
        MPI_Request_free(&req);
    }
    return done;
}

/*
 * This process's view of /dev/shm through /proc/self/maps: how many
 * mappings of the engine's segments (dfccl-*) it holds and how many of them
 * still have a name (no " (deleted)"), and the prefix of Open MPI's own
 * shared-memory segments (vader_segment.<host>.<job>.), so that the driver
 * script can look for them after the job. Returns -1 without /proc.
 */
static int scan_maps(int *dfccl_mapped, int *dfccl_named, char *vader_prefix, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024], seen[256] = "";
    *dfccl_mapped = *dfccl_named = 0;
    vader_prefix[0] = '\0';
    if (f == NULL) return -1;
    while (fgets(line, sizeof line, f) != NULL) {
        char *path = strstr(line, "/dev/shm/");
        if (path == NULL) continue;
        path += strlen("/dev/shm/");
        path[strcspn(path, "\n")] = '\0';
        if (strncmp(path, "dfccl-", 6) == 0) {
            /* one segment can be mapped more than once in a row */
            char name[256];
            snprintf(name, sizeof name, "%s", path);
            name[strcspn(name, " ")] = '\0';
            if (strcmp(name, seen) == 0) continue;
            snprintf(seen, sizeof seen, "%s", name);
            (*dfccl_mapped)++;
            if (strstr(path, " (deleted)") == NULL) {
                fprintf(stderr, PROGRAM ": /dev/shm/%s is mapped and still has its name\n", path);
                (*dfccl_named)++;
            }
        } else if (strncmp(path, "vader_segment.", 14) == 0 && vader_prefix[0] == '\0') {
            char *dot = strrchr(path, '.');
            if (dot != NULL && (size_t)(dot - path + 1) < len) {
                memcpy(vader_prefix, path, (size_t)(dot - path + 1));
                vader_prefix[dot - path + 1] = '\0';
            }
        }
    }
    fclose(f);
    return 0;
}

/* Warm-up allreduces on comm: right sums, each carried by the engine. */
/* Where the collectives' buffers are (--memory). */
static test_memory_kind_t memory;

static bool warm_up(MPI_Comm comm, int world_rank)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    enum { N = 1024 };
    static double send[N], recv[N];
    void *dsend = test_memory_alloc(memory, sizeof(send)), *drecv = test_memory_alloc(memory, sizeof(recv));
    if (dsend == NULL || drecv == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
    engine_snapshot_t before;
    engine_snapshot_take(&before);
    bool ok = true;
    for (int w = 0; w < WARMUPS && ok; w++) {
        for (int k = 0; k < N; k++) {
            send[k] = (double)(rank + 1) * (k + w + 1);
            recv[k] = -1;
        }
        test_memory_to_buffer(memory, dsend, send, sizeof(send));
        test_memory_to_buffer(memory, drecv, recv, sizeof(recv));
        int rc = MPI_Allreduce(dsend, drecv, N, MPI_DOUBLE, MPI_SUM, comm);
        test_memory_from_buffer(memory, recv, drecv, sizeof(recv));
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
    test_memory_free(memory, dsend);
    test_memory_free(memory, drecv);
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
    memory = test_memory_setup(&argc, argv, PROGRAM);
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
    /* dead[r]: rank r dies (the victim, and with --kill-host every rank
     * that shares its node: a host lost with all its processes) */
    int *dead = calloc((size_t)world_size, sizeof(int)), mine_dead = world_rank == victim;
    if (dead == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
    if (opt.kill_host) {
        MPI_Comm node;
        MPI_Group node_group, world_group;
        int in_node = MPI_UNDEFINED;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &node);
        MPI_Comm_group(node, &node_group);
        MPI_Comm_group(MPI_COMM_WORLD, &world_group);
        MPI_Group_translate_ranks(world_group, 1, &victim, node_group, &in_node);
        mine_dead = in_node != MPI_UNDEFINED;
        MPI_Group_free(&node_group);
        MPI_Group_free(&world_group);
        MPI_Comm_free(&node);
    }
    if (opt.kill_host) MPI_Allgather(&mine_dead, 1, MPI_INT, dead, 1, MPI_INT, MPI_COMM_WORLD);
    else dead[victim] = 1;
    int lowest = 0;   /* the lowest surviving rank */
    while (lowest < world_size && dead[lowest]) lowest++;
    if (lowest == world_size) {
        if (world_rank == 0) fprintf(stderr, PROGRAM ": no rank would survive\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);

    /* The blocked call's buffers, touched before the warm-ups so that every
     * rank enters it (or, with --victim-joins, starts it) at once. */
    size_t count = opt.bytes / sizeof(double);
    double *send = test_memory_alloc(memory, count * sizeof(double));
    double *recv = test_memory_alloc(memory, count * sizeof(double));
    double *host = malloc(count * sizeof(double) + 1);
    if (send == NULL || recv == NULL || host == NULL) {
        fprintf(stderr, "rank %d: out of memory\n", world_rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (size_t k = 0; k < count; k++) host[k] = (double)k;
    test_memory_to_buffer(memory, send, host, count * sizeof(double));
    test_memory_set(memory, recv, 0, count * sizeof(double));
    free(host);

    unsigned char flags[CHECK_COUNT];
    memset(flags, 0, sizeof flags);   /* 1: failed */
    flags[CHECK_WARMUP] = !warm_up(dup, world_rank);
    int dfccl_mapped = 0, dfccl_named = 0;
    char vader_prefix[128];
    int maps_ok = scan_maps(&dfccl_mapped, &dfccl_named, vader_prefix, sizeof vader_prefix);
    flags[CHECK_UNLINKED] = maps_ok == 0 && dfccl_named > 0;

    if (world_rank == victim) {
        /* Small and eager: in the receiver's queue before MPI_Send returns. */
        int hello[3] = { flags[CHECK_WARMUP], (int)getpid(), flags[CHECK_UNLINKED] };
        MPI_Send(hello, 3, MPI_INT, lowest, TAG_WARMUP, MPI_COMM_WORLD);
        /* death[1]: 1 when its own allreduce had finished (nothing interrupted) */
        double death[2] = { 0, 0 };
        if (opt.victim_joins) {
            MPI_Request req;
            int done = 0;
            MPI_Iallreduce(send, recv, (int)count, MPI_DOUBLE, MPI_SUM, dup, &req);
            fflush(stdout);
            fflush(stderr);
            wait_mid_transfer(opt.bytes, opt.sleep_ms);
            MPI_Test(&req, &done, MPI_STATUS_IGNORE);
            death[1] = done;
        } else {
            fflush(stdout);
            fflush(stderr);
            sleep_ms(opt.sleep_ms);   /* the others are blocked by now */
        }
        death[0] = now_s();
        MPI_Send(death, 2, MPI_DOUBLE, lowest, TAG_DEATH, MPI_COMM_WORLD);
        if (opt.exit_death) _exit(0);
        raise(SIGKILL);
        _exit(9);   /* not reached */
    }
    if (dead[world_rank]) {   /* the victim's node goes with it */
        fflush(stdout);
        fflush(stderr);
        if (opt.victim_joins) {
            MPI_Request req;
            MPI_Iallreduce(send, recv, (int)count, MPI_DOUBLE, MPI_SUM, dup, &req);
            wait_mid_transfer(opt.bytes, opt.sleep_ms);
        } else {
            sleep_ms(opt.sleep_ms);
        }
        if (opt.exit_death) _exit(0);
        raise(SIGKILL);
        _exit(9);
    }

    /* Survivors: the allreduce the victim never joins (or never finishes). */
    dfccl_stats_t stats_before, stats_after;
    dfccl_stats_get(&stats_before);
    double t0 = now_s();
    int rc = MPI_Allreduce(send, recv, (int)count, MPI_DOUBLE, MPI_SUM, dup);
    double returned = now_s(), blocked_s = returned - t0;
    dfccl_stats_get(&stats_after);
    int error_class = MPI_SUCCESS;
    char error_text[MPI_MAX_ERROR_STRING] = "MPI_SUCCESS";
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
    /* In flight when the peer's death was seen (posted, then failed), or
     * refused when posted because a peer had already failed that call (a
     * survivor that comes late: "collective #N fails at once"). */
    int how = posted == 1 && failed == 1 ? 1 : posted == 0 && failed == 0 ? 2 : 0;
    flags[CHECK_BLOCKED_ENGINE] = how == 0 || (how == 2 && rc == MPI_SUCCESS);
    if (flags[CHECK_BLOCKED_ERROR] || flags[CHECK_BLOCKED_CLASS] || flags[CHECK_BLOCKED_TIME] ||
        flags[CHECK_BLOCKED_ENGINE])
        fprintf(stderr, "FAIL rank %d: blocked allreduce of %zu bytes: rc %d (class %d, \"%s\")"
                " after %.3f s (bound %.1f s); engine posted +%llu, failed +%llu\n",
                world_rank, count * sizeof(double), rc, error_class, error_text, blocked_s,
                opt.bound_s, (unsigned long long)posted, (unsigned long long)failed);

    int one = 1;
    int *one_buf = test_memory_alloc(memory, sizeof(int)), *sum_buf = test_memory_alloc(memory, sizeof(int));
    if (one_buf == NULL || sum_buf == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
    test_memory_to_buffer(memory, one_buf, &one, sizeof(int));
    t0 = now_s();
    int rc2 = MPI_Allreduce(one_buf, sum_buf, 1, MPI_INT, MPI_SUM, dup);
    double again_s = now_s() - t0;
    flags[CHECK_AGAIN_ERROR] = rc2 == MPI_SUCCESS;
    flags[CHECK_AGAIN_TIME] = !(again_s < AGAIN_BOUND_S);
    if (flags[CHECK_AGAIN_ERROR] || flags[CHECK_AGAIN_TIME])
        fprintf(stderr, "FAIL rank %d: second allreduce: rc %d after %.3f s (bound %.1f s)\n",
                world_rank, rc2, again_s, AGAIN_BOUND_S);

    t0 = now_s();
    int rc3 = MPI_Comm_free(&dup);
    double free_s = now_s() - t0;
    flags[CHECK_FREE] = rc3 != MPI_SUCCESS || !(free_s < opt.bound_s);
    if (flags[CHECK_FREE])
        fprintf(stderr, "FAIL rank %d: MPI_Comm_free: rc %d after %.3f s\n", world_rank, rc3,
                free_s);
    test_memory_free(memory, send);
    test_memory_free(memory, recv);
    test_memory_free(memory, one_buf);
    test_memory_free(memory, sum_buf);
    if (opt.linger_ms > 0) sleep_ms(opt.linger_ms);

    /* Agreement over point-to-point between survivors only: a collective
     * on any communicator holding the dead rank would wait for it. */
    int mine[CHECK_COUNT + 1];
    for (int c = 0; c < CHECK_COUNT; c++) mine[c] = flags[c];
    mine[CHECK_COUNT] = (int)getpid();
    double times[5] = { blocked_s, again_s, free_s, returned, how };
    long total_failed = 0;
    if (world_rank != lowest) {
        MPI_Send(mine, CHECK_COUNT + 1, MPI_INT, lowest, TAG_FLAGS, MPI_COMM_WORLD);
        MPI_Send(times, 5, MPI_DOUBLE, lowest, TAG_TIMES, MPI_COMM_WORLD);
        MPI_Recv(&total_failed, 1, MPI_LONG, lowest, TAG_RESULT, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    } else {
        int merged[CHECK_COUNT], *pids = calloc((size_t)world_size, sizeof(int));
        double *all_times = calloc((size_t)world_size * 5, sizeof(double));
        if (pids == NULL || all_times == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
        memcpy(merged, mine, sizeof merged);
        pids[lowest] = mine[CHECK_COUNT];
        memcpy(&all_times[lowest * 5], times, sizeof times);
        /* The victim's warm-up verdict and time of death were sent before
         * it died; a missing verdict counts as a failure, not a hang. */
        int hello[3] = { 1, 0, 1 };
        if (!recv_from_dead(hello, 3, MPI_INT, victim, TAG_WARMUP, 5.0)) {
            fprintf(stderr, "FAIL: the victim's warm-up verdict never arrived\n");
            hello[0] = hello[2] = 1;
        }
        merged[CHECK_WARMUP] |= hello[0];
        merged[CHECK_UNLINKED] |= hello[2];
        pids[victim] = hello[1];
        double death_msg[2] = { 0, 0 }, death = 0;
        bool death_known = recv_from_dead(death_msg, 2, MPI_DOUBLE, victim, TAG_DEATH, 1.0);
        death = death_msg[0];
        if (death_known && death_msg[1] != 0) {
            merged[CHECK_INTERRUPTED] = 1;
            fprintf(stderr, "FAIL: the victim's own allreduce had finished before it died:"
                    " no transfer was interrupted (a larger --bytes helps)\n");
        }
        for (int r = 0; r < world_size; r++) {
            if (r == lowest || dead[r]) continue;
            int theirs[CHECK_COUNT + 1];
            MPI_Recv(theirs, CHECK_COUNT + 1, MPI_INT, r, TAG_FLAGS, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            MPI_Recv(&all_times[r * 5], 5, MPI_DOUBLE, r, TAG_TIMES, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            for (int c = 0; c < CHECK_COUNT; c++) merged[c] |= theirs[c];
            pids[r] = theirs[CHECK_COUNT];
        }
        printf(PROGRAM ": %d ranks, rank %d%s died (%s) %s %d ms while the others"
               " were in an allreduce of %zu bytes%s; bound %.1f s\n", world_size, victim,
               opt.kill_host ? " and every rank of its node" : "",
               opt.exit_death ? "_exit" : "SIGKILL",
               opt.victim_joins ? "a sixteenth into the transfer or after at most" : "after",
               opt.sleep_ms, count * sizeof(double),
               opt.victim_joins ? " it had posted too" : "", opt.bound_s);
        printf(PROGRAM ": pids:");
        for (int r = 0; r < world_size; r++) printf(" %d", pids[r]);
        printf("\n");
        printf(PROGRAM ": rank %d's error: %s\n", lowest, error_text);
        if (maps_ok == 0)
            printf(PROGRAM ": rank %d maps %d engine segments, %d of them still named;"
                   " Open MPI's segments: %s*\n", lowest, dfccl_mapped, dfccl_named,
                   vader_prefix[0] ? vader_prefix : "(none seen) ");
        for (int r = 0; r < world_size; r++) {
            if (dead[r]) continue;
            const double *t = &all_times[r * 5];
            char after_death[48] = "";
            if (death_known)
                snprintf(after_death, sizeof after_death, ", %.3f s after the death",
                         t[3] - death);
            printf(PROGRAM ": rank %d: blocked call returned after %.3f s (%s%s), second call"
                   " after %.3f s, comm_free %.3f s\n", r, t[0],
                   t[4] == 1 ? "failed in flight" : t[4] == 2 ? "refused when posted"
                                                             : "engine counters unexpected",
                   after_death, t[1], t[2]);
        }
        for (int c = 0; c < CHECK_COUNT; c++) {
            total_failed += merged[c] != 0;
            if (merged[c]) printf(PROGRAM ": failed: %s\n", check_names[c]);
        }
        printf(PROGRAM ": %ld passed, %ld failed\n", (long)CHECK_COUNT - total_failed,
               total_failed);
        for (int r = 0; r < world_size; r++)
            if (r != lowest && !dead[r])
                MPI_Send(&total_failed, 1, MPI_LONG, r, TAG_RESULT, MPI_COMM_WORLD);
        free(pids);
        free(all_times);
    }
    fflush(stdout);
    fflush(stderr);
    int status = total_failed == 0 ? 0 : 1;
    if (opt.finalize) {
        double f0 = now_s();
        int frc = MPI_Finalize();
        /* deadpeer_check.sh counts these lines: one per survivor, each with
         * status 0 (mpirun --enable-recovery exits 0 whatever they return) */
        printf(PROGRAM ": rank %d ended through MPI_Finalize (returned %d after %.3f s), exit"
               " status %d\n", world_rank, frc, now_s() - f0, frc == MPI_SUCCESS ? status : 1);
        fflush(stdout);
        return frc == MPI_SUCCESS ? status : 1;
    }
    _exit(status);
}
