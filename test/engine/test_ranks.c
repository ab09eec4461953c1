/*
 * test_ranks.c - the engine through its public API, ranks as forked
 * processes: shm FIFOs, the daemon, queues, several communicators,
 * nonblocking posting, the timeout diagnosis and set-up agreement, callers
 * that drive the scheduler themselves.
 */
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "include/dfccl.h"
#include "sim_ranks.h"

/* Waits (bounded) for n completions; returns how many had status OK. */
static int wait_completions(dfccl_context_t *ctx, int n, dfccl_status_t *last)
{
    int got = 0, ok = 0;
    for (int spins = 0; got < n && spins < 60000; spins++) {
        dfccl_completion_t c;
        if (dfccl_context_poll(ctx, &c, 1) == 1) {
            got++;
            ok += c.status == DFCCL_OK;
            *last = c.status;
        } else {
            dfccl_context_wait(ctx, 1000000);   /* 1 ms */
        }
    }
    return got == n ? ok : -1;
}

/* Three communicators (the same ranks), every collective, nonblocking. */
static int body_collectives(int rank, int size, sim_world_t *world, void *arg)
{
    static const size_t counts[] = { 0, 1, 5, 1000, 70001 };
    dfccl_context_t *ctx;
    dfccl_comm_t *comm[3];
    dfccl_config_t cfg;
    dfccl_status_t last;

    /* names of a killed earlier process that had our pid may be left */
    int stale_segments = sim_own_segments();

    dfccl_config_init(&cfg);
    cfg.slot_bytes = 4096;   /* small slots: many rounds and slices */
    cfg.timeout_sec = 60;
    CHECK(dfccl_context_create(&cfg, &ctx) == DFCCL_OK, "context");
    for (int c = 0; c < 3; c++) {
        dfccl_comm_params_t p = sim_comm_params(world, rank, 100 + (uint64_t)c, DFCCL_BACKEND_HOST);
        CHECK(dfccl_comm_create(ctx, &p, &comm[c]) == DFCCL_OK, "comm %d", c);
    }
    CHECK(sim_own_segments() == stale_segments, "shm names must be unlinked once mapped");
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        size_t n = counts[k], rs_counts[64], total = 0;
        for (int r = 0; r < size; r++) total += rs_counts[r] = (n + (size_t)r) % (n + 2);
        sim_three_t t;
        CHECK(sim_three_alloc(&t, rank, size, n, rs_counts, total, DFCCL_OP_MAX) == 0, "memory");
        dfccl_coll_args_t *a = t.args;
        /* one collective per communicator, all in flight at once */
        for (int c = 0; c < 3; c++) CHECK(dfccl_coll_post(comm[c], &a[c]) == DFCCL_OK, "post");
        CHECK(wait_completions(ctx, 3, &last) == 3, "completions (last status %s)",
              dfccl_status_string(last));
        CHECK(sim_three_check(&t, rank, size, n, rs_counts) == 0, "results of n=%zu", n);
        sim_three_free(&t);
    }
    dfccl_stats_t st;
    dfccl_stats_get(&st);
    CHECK(st.completed[DFCCL_COLL_ALLREDUCE] == 5 && st.comms_created == 3, "stats");
    for (int c = 0; c < 3; c++) dfccl_comm_destroy(comm[c]);
    dfccl_context_destroy(ctx);
    return 0;
}

/* Rank 1 never posts: rank 0 must get a timeout, not hang, and the comm is
 * then known broken. */
static int body_timeout(int rank, int size, sim_world_t *world, void *arg)
{
    dfccl_context_t *ctx;
    dfccl_comm_t *comm;
    dfccl_config_t cfg;
    dfccl_status_t last = DFCCL_OK;
    float in[64], out[64];

    dfccl_config_init(&cfg);
    cfg.timeout_sec = 0.5;
    CHECK(dfccl_context_create(&cfg, &ctx) == DFCCL_OK, "context");
    dfccl_comm_params_t p = sim_comm_params(world, rank, 7, DFCCL_BACKEND_HOST);
    CHECK(dfccl_comm_create(ctx, &p, &comm) == DFCCL_OK, "comm");
    if (rank == 0) {
        dfccl_coll_args_t a = { DFCCL_COLL_ALLREDUCE, in, out, 64, NULL, DFCCL_FLOAT, DFCCL_OP_SUM, 0, NULL, NULL, DFCCL_BUFFERS_NATIVE };
        memset(in, 0, sizeof(in));
        CHECK(dfccl_coll_post(comm, &a) == DFCCL_OK, "post");
        CHECK(wait_completions(ctx, 1, &last) == 0 && last == DFCCL_ERR_TIMEOUT,
              "expected a timeout, got %s", dfccl_status_string(last));
        /* at once, from the post itself: callers that retry on a failed
         * request (Open MPI's context-id agreement) must see an error */
        CHECK(dfccl_coll_post(comm, &a) == DFCCL_ERR_BROKEN, "a broken comm must fail at once");
    }
    sim_allgather(&last, out, sizeof(last), world);   /* rank 1 waits here meanwhile */
    dfccl_comm_destroy(comm);
    dfccl_context_destroy(ctx);
    return 0;
}

/* Drivers of the disorder test's callers (dfccl_context_drive): they share
 * the completions they find. */
enum { DISORDER_COMMS = 4, DISORDER_COUNT = 300000, DRIVE_THREADS = 2 };

typedef struct {
    dfccl_context_t *ctx;
    int              done, ok;   /* completions seen, of them OK (atomic) */
} drive_wait_t;

static void *drive_until_done(void *arg)
{
    drive_wait_t *w = arg;
    for (int turns = 0; __atomic_load_n(&w->done, __ATOMIC_ACQUIRE) < DISORDER_COMMS &&
                        turns < 600000; turns++) {
        dfccl_completion_t c;
        if (dfccl_context_drive(w->ctx, 100000) < 0) return (void *)1;   /* driving is on */
        while (dfccl_context_poll(w->ctx, &c, 1) == 1) {
            __atomic_add_fetch(&w->ok, c.status == DFCCL_OK, __ATOMIC_ACQ_REL);
            __atomic_add_fetch(&w->done, 1, __ATOMIC_ACQ_REL);
        }
    }
    return NULL;
}

/* How the disorder test's ranks wait for their collectives. */
typedef enum {
    DISORDER_DAEMON,   /* preemptive; the daemon thread runs them, the caller sleeps */
    DISORDER_SERIAL,   /* serial engine: the watchdog must fail what deadlocks */
    DISORDER_DRIVE,    /* DRIVE_THREADS threads per rank drive the scheduler at once (one
                          runs it at a time; completions may come out in either) */
    DISORDER_ABSENT    /* as DISORDER_DRIVE, but the last rank never drives: it sleeps,
                          then waits without driving; its daemon thread must take over
                          so that its peers, which drive, finish */
} disorder_mode_t;

/*
 * Disorder: every rank posts one allreduce on each of 4 communicators, in its
 * own order (rotated by rank), larger than a FIFO so that each needs its
 * peers throughout, then waits as *arg (disorder_mode_t) says. All complete
 * with the right sums, except in the serial engine, which deadlocks and
 * whose watchdog fails what it cannot finish.
 */
static int body_disorder(int rank, int size, sim_world_t *world, void *arg)
{
    disorder_mode_t mode = *(const disorder_mode_t *)arg;
    int serial = mode == DISORDER_SERIAL;
    int drives = mode == DISORDER_DRIVE || (mode == DISORDER_ABSENT && rank != size - 1);
    dfccl_context_t *ctx;
    dfccl_comm_t *comm[DISORDER_COMMS];
    dfccl_config_t cfg;
    dfccl_status_t last = DFCCL_OK;
    float *in = malloc(sizeof(float) * DISORDER_COUNT), *out[DISORDER_COMMS];

    dfccl_config_init(&cfg);
    CHECK(cfg.caller_drives, "callers drive by default");
    cfg.preempt = !serial;
    cfg.timeout_sec = serial ? 1.0 : 60.0;
    CHECK(dfccl_context_create(&cfg, &ctx) == DFCCL_OK, "context");
    for (int c = 0; c < DISORDER_COMMS; c++) {
        dfccl_comm_params_t p = sim_comm_params(world, rank, 200 + (uint64_t)c, DFCCL_BACKEND_HOST);
        CHECK(dfccl_comm_create(ctx, &p, &comm[c]) == DFCCL_OK, "comm %d", c);
        out[c] = malloc(sizeof(float) * DISORDER_COUNT);
    }
    sim_fill_input(in, DISORDER_COUNT, DFCCL_FLOAT, DFCCL_OP_SUM, rank, 0);
    for (int k = 0; k < DISORDER_COMMS; k++) {
        int c = (k + rank) % DISORDER_COMMS;   /* each rank its own order */
        dfccl_coll_args_t a = { DFCCL_COLL_ALLREDUCE, in, out[c], DISORDER_COUNT, NULL,
                                DFCCL_FLOAT, DFCCL_OP_SUM, 0, NULL, NULL, DFCCL_BUFFERS_NATIVE };
        CHECK(dfccl_coll_post(comm[c], &a) == DFCCL_OK, "post");
    }
    if (drives) {
        drive_wait_t w = { ctx, 0, 0 };
        pthread_t t[DRIVE_THREADS];
        void *refused = NULL;
        for (int i = 0; i < DRIVE_THREADS; i++) pthread_create(&t[i], NULL, drive_until_done, &w);
        for (int i = 0; i < DRIVE_THREADS; i++) {
            void *r;
            pthread_join(t[i], &r);
            if (r != NULL) refused = r;
        }
        CHECK(refused == NULL, "dfccl_context_drive refused although caller_drives is on");
        CHECK(w.done == DISORDER_COMMS && w.ok == DISORDER_COMMS, "driving callers: %d of %d"
              " completed, %d ok", w.done, DISORDER_COMMS, w.ok);
    } else {
        if (mode == DISORDER_ABSENT) {
            /* busy elsewhere: only the daemon thread moves this rank's part */
            struct timespec away = { 0, 300000000L };
            nanosleep(&away, NULL);
        }
        int ok = wait_completions(ctx, DISORDER_COMMS, &last);
        if (serial) {
            /* every completion arrives; the deadlocked ones as watchdog failures
             * (the only error this test can produce) */
            CHECK(ok >= 0 && ok < DISORDER_COMMS,
                  "serial engine: expected the watchdog to fail a deadlocked collective (%d ok)",
                  ok);
        } else {
            CHECK(ok == DISORDER_COMMS, "%d of %d completed without driving (last %s)", ok,
                  DISORDER_COMMS, dfccl_status_string(last));
        }
    }
    for (int c = 0; c < DISORDER_COMMS && !serial; c++)
        for (size_t i = 0; i < DISORDER_COUNT; i += 997) {
            float e;
            sim_expected(&e, DFCCL_FLOAT, DFCCL_OP_SUM, size, i);
            CHECK(out[c][i] == e, "comm %d [%zu] %g != %g", c, i, out[c][i], e);
        }
    sim_allgather(&last, in, sizeof(last), world);
    for (int c = 0; c < DISORDER_COMMS; c++) {
        dfccl_comm_destroy(comm[c]);
        free(out[c]);
    }
    free(in);
    dfccl_context_destroy(ctx);
    return 0;
}

/* Ranks with different FIFO settings: creation fails on every rank alike. */
static int body_mismatch(int rank, int size, sim_world_t *world, void *arg)
{
    dfccl_context_t *ctx;
    dfccl_comm_t *comm = NULL;
    dfccl_config_t cfg;

    dfccl_config_init(&cfg);
    cfg.slot_bytes = rank == 0 ? 4096 : 8192;
    CHECK(dfccl_context_create(&cfg, &ctx) == DFCCL_OK, "context");
    dfccl_comm_params_t p = sim_comm_params(world, rank, 9, DFCCL_BACKEND_HOST);
    CHECK(dfccl_comm_create(ctx, &p, &comm) == DFCCL_ERR_INVALID_PARAM, "mismatch must fail");
    CHECK(sim_own_segments() == 0, "failed creation must not leave segments");
    dfccl_context_destroy(ctx);
    return 0;
}

/* Collectives posted while the set-up runs: queued by the engine, run in
 * order once it ends (arg NULL); with mismatched settings (arg set) the
 * set-up fails and each queued post completes with that failure. */
static int body_post_during_setup(int rank, int size, sim_world_t *world, void *arg)
{
    enum { POSTS = 3, N = 1000 };
    int fail = arg != NULL;
    dfccl_context_t *ctx;
    dfccl_comm_t *comm = NULL;
    dfccl_config_t cfg;
    dfccl_status_t status, last = DFCCL_OK;
    float in[POSTS][N], out[POSTS][N];

    dfccl_config_init(&cfg);
    cfg.timeout_sec = 30;
    if (fail) cfg.slot_bytes = rank == 0 ? 4096 : 8192;
    CHECK(dfccl_context_create(&cfg, &ctx) == DFCCL_OK, "context");
    dfccl_comm_params_t p = sim_comm_params(world, rank, 11, DFCCL_BACKEND_HOST);
    CHECK(dfccl_comm_create_start(ctx, &p, &comm) == DFCCL_OK, "create_start");
    for (int k = 0; k < POSTS; k++) {
        for (int i = 0; i < N; i++) in[k][i] = (float)(rank + 1) * (float)(k + 1);
        dfccl_coll_args_t a = { DFCCL_COLL_ALLREDUCE, in[k], out[k], N, NULL, DFCCL_FLOAT,
                                DFCCL_OP_SUM, 0, NULL, NULL, DFCCL_BUFFERS_NATIVE };
        CHECK(dfccl_coll_post(comm, &a) == DFCCL_OK, "post %d during the set-up", k);
    }
    for (int spins = 0; (status = dfccl_comm_create_test(comm)) == DFCCL_INPROGRESS &&
                        spins < 60000; spins++)
        usleep(500);
    if (fail) {
        CHECK(status == DFCCL_ERR_INVALID_PARAM, "set-up must fail, got %s",
              dfccl_status_string(status));
        CHECK(wait_completions(ctx, POSTS, &last) == 0 && last == DFCCL_ERR_INVALID_PARAM,
              "queued posts must fail with the set-up's failure, last %s",
              dfccl_status_string(last));
    } else {
        CHECK(status == DFCCL_OK, "set-up: %s", dfccl_status_string(status));
        CHECK(wait_completions(ctx, POSTS, &last) == POSTS, "completions (last status %s)",
              dfccl_status_string(last));
        float want = 0;
        for (int r = 0; r < size; r++) want += (float)(r + 1);
        for (int k = 0; k < POSTS; k++)
            for (int i = 0; i < N; i++)
                CHECK(out[k][i] == want * (float)(k + 1), "post %d element %d: %g", k, i,
                      (double)out[k][i]);
    }
    dfccl_comm_destroy(comm);
    dfccl_context_destroy(ctx);
    return 0;
}

int main(void)
{
    int failed = 0, passed = 0;
    static const int sizes[] = { 1, 2, 3, 4, 7 };

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        int f = sim_run(sizes[i], 120, body_collectives, NULL);
        printf("collectives on %d ranks: %s\n", sizes[i], f ? "FAIL" : "ok");
        f ? failed++ : passed++;
    }
    static const disorder_mode_t daemon = DISORDER_DAEMON, serial = DISORDER_SERIAL,
                                 drive = DISORDER_DRIVE, absent = DISORDER_ABSENT;
    for (int n = 2; n <= 3; n++) {
        int f = sim_run(n, 120, body_disorder, (void *)&daemon);
        printf("disorder on %d ranks, preemptive: %s\n", n, f ? "FAIL" : "ok");
        f ? failed++ : passed++;
        f = sim_run(n, 120, body_disorder, (void *)&serial);
        printf("disorder on %d ranks, serial, watchdog: %s\n", n, f ? "FAIL" : "ok");
        f ? failed++ : passed++;
    }
    for (int n = 2; n <= 4; n += 2) {
        int f = sim_run(n, 120, body_disorder, (void *)&drive);
        printf("disorder on %d ranks, callers drive, %d threads each: %s\n", n, DRIVE_THREADS,
               f ? "FAIL" : "ok");
        f ? failed++ : passed++;
        f = sim_run(n, 120, body_disorder, (void *)&absent);
        printf("disorder on %d ranks, callers drive, one rank never does: %s\n", n,
               f ? "FAIL" : "ok");
        f ? failed++ : passed++;
    }
    int f = sim_run(2, 60, body_timeout, NULL);
    printf("timeout diagnosis: %s\n", f ? "FAIL" : "ok");
    f ? failed++ : passed++;
    f = sim_run(3, 60, body_mismatch, NULL);
    printf("mismatched settings: %s\n", f ? "FAIL" : "ok");
    f ? failed++ : passed++;
    for (int n = 1; n <= 3; n += 2) {
        f = sim_run(n, 60, body_post_during_setup, NULL);
        printf("posts during the set-up on %d ranks: %s\n", n, f ? "FAIL" : "ok");
        f ? failed++ : passed++;
    }
    static const int set_up_fails = 1;
    f = sim_run(3, 60, body_post_during_setup, (void *)&set_up_fails);
    printf("posts during a set-up that fails: %s\n", f ? "FAIL" : "ok");
    f ? failed++ : passed++;
    printf("test_ranks: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
