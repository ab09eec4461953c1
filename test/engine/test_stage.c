/*
 * test_stage.c - staged calls (dfccl_coll_args_t.buffers): buffers that
 * are not of the memory kind the communicator's backend carries are copied
 * to and from a block of that kind by the engine. A device backend is
 * stood in for by one whose "device memory" is host memory and whose copy
 * counts its calls, so the engine's staging runs without a GPU: posted,
 * run, prepared and in-place calls, callbacks (called by the polling
 * thread), posts during the set-up, and the refusals.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "engine/internal.h"
#include "sim_ranks.h"

static int copies;   /* the copier's calls in this rank */

static dfccl_status_t copier_context_open(dfccl_context_t *ctx, void **state)
{
    (void)ctx;
    *state = NULL;
    return DFCCL_OK;
}

static dfccl_status_t copier_copy(dfccl_context_t *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    memcpy(dst, src, bytes);
    copies++;
    return DFCCL_OK;
}

/* Offers the copy only; never carries a communicator here. */
static const dfccl_backend_ops_t copier_backend = {
    .name = "copier", .memory = DFCCL_BUFFERS_DEVICE,
    .context_open = copier_context_open, .copy = copier_copy,
};
static const dfccl_backend_ops_t no_copy_backend = {
    .name = "no copy", .memory = DFCCL_BUFFERS_DEVICE, .context_open = copier_context_open,
};

static dfccl_context_t *open_context(const dfccl_backend_ops_t *second)
{
    const dfccl_backend_ops_t *backends[DFCCL_BACKEND_COUNT] = { &dfccl_host_backend, second };
    dfccl_context_t *ctx = NULL;
    dfccl_config_t cfg;

    dfccl_config_init(&cfg);
    cfg.slot_bytes = 4096;
    cfg.timeout_sec = 60;
    return dfccl_context_open(&cfg, backends, &ctx) == DFCCL_OK ? ctx : NULL;
}

/* Waits (bounded) for n completions; their cookies go to users[]. */
static int wait_completions(dfccl_context_t *ctx, int n, void **users)
{
    int got = 0, ok = 0;
    for (int spins = 0; got < n && spins < 60000; spins++) {
        dfccl_completion_t c;
        if (dfccl_context_poll(ctx, &c, 1) == 1) {
            if (users != NULL) users[got] = c.user;
            got++;
            ok += c.status == DFCCL_OK;
        } else {
            dfccl_context_wait(ctx, 1000000);
        }
    }
    return got == n ? ok : -1;
}

static pthread_t callback_thread;
static int callbacks;
static void on_done(void *user, dfccl_status_t status)
{
    callback_thread = pthread_self();
    callbacks += status == DFCCL_OK && user == &callbacks;
}

/* The three collectives posted staged (and one run), results and copies
 * checked, then in place. */
static int body_posted(int rank, int size, sim_world_t *world, void *arg)
{
    static const size_t counts[] = { 0, 1, 5, 1000, 70001 };
    dfccl_context_t *ctx = open_context(&copier_backend);
    dfccl_comm_t *comm;

    (void)arg;
    CHECK(ctx != NULL, "context");
    dfccl_comm_params_t p = sim_comm_params(world, rank, 21, DFCCL_BACKEND_HOST);
    CHECK(dfccl_comm_create(ctx, &p, &comm) == DFCCL_OK, "comm");
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        size_t n = counts[k], rs_counts[64], total = 0;
        void *users[3];
        for (int r = 0; r < size; r++) total += rs_counts[r] = (n + (size_t)r) % (n + 2);
        sim_three_t t;
        CHECK(sim_three_alloc(&t, rank, size, n, rs_counts, total, DFCCL_OP_SUM) == 0, "memory");
        copies = 0;
        for (int c = 0; c < 3; c++) {
            t.args[c].buffers = c == 1 ? DFCCL_BUFFERS_MIXED : DFCCL_BUFFERS_DEVICE;
            t.args[c].user = &t.args[c];
            if (c == 0) {
                dfccl_status_t s = dfccl_coll_run(comm, &t.args[c]);
                CHECK(s == DFCCL_INPROGRESS, "a staged run is a post, got %s",
                      dfccl_status_string(s));
            } else {
                CHECK(dfccl_coll_post(comm, &t.args[c]) == DFCCL_OK, "post %d", c);
            }
        }
        CHECK(wait_completions(ctx, 3, users) == 3, "completions");
        for (int c = 0; c < 3; c++)
            CHECK(users[c] == &t.args[0] || users[c] == &t.args[1] || users[c] == &t.args[2],
                  "the caller's cookie must come back");
        /* each staged call copies its input in and its result out (what is not empty) */
        int want = 4 * (n > 0) + (total > 0) + (rs_counts[rank] > 0);
        CHECK(copies == want, "%d copies, not %d, for n=%zu", copies, want, n);
        CHECK(sim_three_check(&t, rank, size, n, rs_counts) == 0, "results of n=%zu", n);
        sim_three_free(&t);
    }

    /* in place: allreduce, allgather (our block), reduce-scatter (ours first) */
    enum { N = 300 };
    int32_t ar[N], ag[N * 16], rs[N * 16];
    for (int i = 0; i < N; i++) ar[i] = rank + i;
    for (int r = 0; r < size; r++)
        for (int i = 0; i < N; i++) ag[r * N + i] = r == rank ? rank * 1000 + i : -1;
    size_t rsc[16];
    for (int r = 0; r < size; r++) rsc[r] = N;
    for (int i = 0; i < size * N; i++) rs[i] = rank + i;
    dfccl_coll_args_t a[3] = {
        { .type = DFCCL_COLL_ALLREDUCE, .sendbuf = DFCCL_IN_PLACE, .recvbuf = ar, .count = N,
          .dtype = DFCCL_INT32, .op = DFCCL_OP_SUM, .buffers = DFCCL_BUFFERS_DEVICE },
        { .type = DFCCL_COLL_ALLGATHER, .sendbuf = DFCCL_IN_PLACE, .recvbuf = ag, .count = N,
          .dtype = DFCCL_INT32, .op = DFCCL_OP_NONE, .buffers = DFCCL_BUFFERS_DEVICE },
        { .type = DFCCL_COLL_REDUCE_SCATTER, .sendbuf = DFCCL_IN_PLACE, .recvbuf = rs,
          .counts = rsc, .dtype = DFCCL_INT32, .op = DFCCL_OP_MAX,
          .buffers = DFCCL_BUFFERS_DEVICE },
    };
    for (int c = 0; c < 3; c++) CHECK(dfccl_coll_post(comm, &a[c]) == DFCCL_OK, "in place %d", c);
    CHECK(wait_completions(ctx, 3, NULL) == 3, "in-place completions");
    int sum_ranks = size * (size - 1) / 2;
    for (int i = 0; i < N; i++) {
        CHECK(ar[i] == sum_ranks + size * i, "in-place allreduce [%d] = %d", i, ar[i]);
        CHECK(rs[i] == size - 1 + rank * N + i, "in-place reduce-scatter [%d] = %d", i, rs[i]);
    }
    for (int r = 0; r < size; r++)
        for (int i = 0; i < N; i++)
            CHECK(ag[r * N + i] == r * 1000 + i, "in-place allgather [%d][%d]", r, i);

    /* a callback is called by the polling thread, after the copy out */
    int32_t cb_in[N], cb_out[N];
    for (int i = 0; i < N; i++) cb_in[i] = 1, cb_out[i] = 0;
    dfccl_coll_args_t cb = { .type = DFCCL_COLL_ALLREDUCE, .sendbuf = cb_in, .recvbuf = cb_out,
                             .count = N, .dtype = DFCCL_INT32, .op = DFCCL_OP_SUM,
                             .user = &callbacks, .callback = on_done,
                             .buffers = DFCCL_BUFFERS_DEVICE };
    callbacks = 0;
    CHECK(dfccl_coll_post(comm, &cb) == DFCCL_OK, "post with a callback");
    for (int spins = 0; callbacks == 0 && spins < 60000; spins++) {
        dfccl_completion_t c;
        CHECK(dfccl_context_poll(ctx, &c, 1) == 0, "a callback's completion is not queued");
        if (callbacks == 0) usleep(200);
    }
    CHECK(callbacks == 1 && pthread_equal(callback_thread, pthread_self()),
          "the callback must be called once, by the polling thread");
    for (int i = 0; i < N; i++) CHECK(cb_out[i] == size, "callback's result [%d]", i);

    dfccl_comm_destroy(comm);
    dfccl_context_destroy(ctx);
    return 0;
}

/* Prepared once, started three times with new input; a second start while
 * a run is pending is refused. */
static int body_prepared(int rank, int size, sim_world_t *world, void *arg)
{
    enum { N = 5000 };
    dfccl_context_t *ctx = open_context(&copier_backend);
    dfccl_prepared_t *prep;
    dfccl_comm_t *comm;
    static double in[N], out[N];
    void *user;

    (void)arg;
    CHECK(ctx != NULL, "context");
    dfccl_comm_params_t p = sim_comm_params(world, rank, 22, DFCCL_BACKEND_HOST);
    CHECK(dfccl_comm_create(ctx, &p, &comm) == DFCCL_OK, "comm");
    dfccl_coll_args_t a = { .type = DFCCL_COLL_ALLREDUCE, .sendbuf = in, .recvbuf = out,
                            .count = N, .dtype = DFCCL_DOUBLE, .op = DFCCL_OP_SUM,
                            .buffers = DFCCL_BUFFERS_DEVICE };
    CHECK(dfccl_coll_prepare(comm, &a, &prep) == DFCCL_OK, "prepare");
    for (int run = 1; run <= 3; run++) {
        for (int i = 0; i < N; i++) in[i] = run * (rank + 1), out[i] = -1;
        copies = 0;
        CHECK(dfccl_coll_start(prep, &a) == DFCCL_OK, "start %d", run);
        /* the run completes to the caller only through a poll: still pending */
        CHECK(dfccl_coll_start(prep, &a) == DFCCL_ERR_INVALID_PARAM,
              "a start while the run is pending must be refused");
        CHECK(wait_completions(ctx, 1, &user) == 1 && user == &a, "run %d's completion", run);
        CHECK(copies == 2, "run %d: %d copies", run, copies);
        for (int i = 0; i < N; i++)
            CHECK(out[i] == run * size * (size + 1) / 2.0, "run %d [%d] = %g", run, i, out[i]);
    }
    dfccl_coll_prepared_free(prep);
    dfccl_comm_destroy(comm);
    dfccl_context_destroy(ctx);
    return 0;
}

/* Staged posts queued during the set-up; refusals: an unknown buffers
 * value, and no backend that copies. */
static int body_setup_and_refusals(int rank, int size, sim_world_t *world, void *arg)
{
    enum { N = 777 };
    dfccl_context_t *ctx = open_context(&copier_backend), *bare;
    dfccl_comm_t *comm, *comm2;
    float in[N], out[N];

    (void)arg;
    CHECK(ctx != NULL, "context");
    dfccl_comm_params_t p = sim_comm_params(world, rank, 23, DFCCL_BACKEND_HOST);
    CHECK(dfccl_comm_create_start(ctx, &p, &comm) == DFCCL_OK, "create_start");
    for (int i = 0; i < N; i++) in[i] = (float)(rank + 1), out[i] = 0;
    dfccl_coll_args_t a = { .type = DFCCL_COLL_ALLREDUCE, .sendbuf = in, .recvbuf = out,
                            .count = N, .dtype = DFCCL_FLOAT, .op = DFCCL_OP_SUM,
                            .buffers = DFCCL_BUFFERS_MIXED };
    CHECK(dfccl_coll_post(comm, &a) == DFCCL_OK, "a staged post during the set-up");
    for (int i = 0; i < N; i++) in[i] = -100;   /* the input was taken at the post */
    dfccl_status_t status;
    for (int spins = 0; (status = dfccl_comm_create_test(comm)) == DFCCL_INPROGRESS &&
                        spins < 60000; spins++)
        usleep(500);
    CHECK(status == DFCCL_OK, "set-up: %s", dfccl_status_string(status));
    CHECK(wait_completions(ctx, 1, NULL) == 1, "the queued staged call");
    for (int i = 0; i < N; i++)
        CHECK(out[i] == (float)(size * (size + 1) / 2), "queued staged [%d] = %g", i, out[i]);

    a.buffers = (dfccl_buffers_t)7;
    CHECK(dfccl_coll_post(comm, &a) == DFCCL_ERR_INVALID_PARAM, "unknown buffers value");
    a.buffers = DFCCL_BUFFERS_HOST;   /* the host backend's own kind: not staged */
    copies = 0;
    for (int i = 0; i < N; i++) in[i] = 1;
    CHECK(dfccl_coll_post(comm, &a) == DFCCL_OK, "a post of host buffers");
    CHECK(wait_completions(ctx, 1, NULL) == 1 && copies == 0, "host buffers are not staged");
    dfccl_comm_destroy(comm);
    dfccl_context_destroy(ctx);

    CHECK((bare = open_context(&no_copy_backend)) != NULL, "context without a copy");
    p = sim_comm_params(world, rank, 24, DFCCL_BACKEND_HOST);
    CHECK(dfccl_comm_create(bare, &p, &comm2) == DFCCL_OK, "comm");
    a.buffers = DFCCL_BUFFERS_DEVICE;
    CHECK(dfccl_coll_post(comm2, &a) == DFCCL_ERR_UNSUPPORTED, "no backend copies: unsupported");
    dfccl_prepared_t *prep = NULL;
    CHECK(dfccl_coll_prepare(comm2, &a, &prep) == DFCCL_ERR_UNSUPPORTED && prep == NULL,
          "no backend copies: a prepare is unsupported too");
    dfccl_comm_destroy(comm2);
    dfccl_context_destroy(bare);
    return 0;
}

int main(void)
{
    int failed = 0, passed = 0, f;

    for (int n = 1; n <= 3; n++) {
        f = sim_run(n, 120, body_posted, NULL);
        printf("staged posts on %d ranks: %s\n", n, f ? "FAIL" : "ok");
        f ? failed++ : passed++;
    }
    f = sim_run(3, 120, body_prepared, NULL);
    printf("staged prepared calls: %s\n", f ? "FAIL" : "ok");
    f ? failed++ : passed++;
    f = sim_run(2, 120, body_setup_and_refusals, NULL);
    printf("staged posts during the set-up, refusals: %s\n", f ? "FAIL" : "ok");
    f ? failed++ : passed++;
    printf("test_stage: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
