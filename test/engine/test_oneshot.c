/*
 * test_oneshot.c - small host collectives within one node (the one-shot)
 * and callers that run them at once (dfccl_coll_run), ranks as forked
 * processes:
 *
 *   calls       every collective, in place and not, at sizes on both sides
 *               of oneshot_max_bytes, through dfccl_coll_run; every element
 *               checked; the one-shot counted as run
 *   threads     two threads per rank, each running blocking calls on its
 *               own communicator, started in a rank-dependent order: both
 *               finish (a caller that runs a one-shot at once hands it to
 *               the scheduler when its peer is busy with the other)
 *   mismatch    ranks that make different calls, or one whose call fails
 *               locally: every rank gets an error, none hangs
 *   settings    ranks with different one-shot limits: creation fails on all
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "include/dfccl.h"
#include "sim_ranks.h"

#define MAX_BYTES 1024   /* the one-shot's limit here: sizes on both sides */

/* A blocking call: run, and wait for its completion where it was posted.
 * Returns its status. */
static dfccl_status_t run_blocking(dfccl_context_t *ctx, dfccl_comm_t *comm,
                                   const dfccl_coll_args_t *a)
{
    dfccl_completion_t c;
    dfccl_status_t status = dfccl_coll_run(comm, a);

    if (status != DFCCL_INPROGRESS) return status;
    for (int turns = 0; turns < 2000000; turns++) {
        dfccl_context_drive(ctx, 100000);
        /* several threads may run calls: a completion may be another's */
        if (dfccl_context_poll(ctx, &c, 1) == 1) {
            if (c.user == a->user) return c.status;
            dfccl_status_t *other = c.user;
            __atomic_store_n(other, c.status, __ATOMIC_RELEASE);
        }
        if (__atomic_load_n((dfccl_status_t *)a->user, __ATOMIC_ACQUIRE) != DFCCL_INPROGRESS)
            return *(dfccl_status_t *)a->user;
    }
    return DFCCL_ERR_TIMEOUT;
}

static dfccl_context_t *context_new(double timeout_sec)
{
    dfccl_context_t *ctx = NULL;
    dfccl_config_t cfg;

    dfccl_config_init(&cfg);
    cfg.oneshot_max_bytes = MAX_BYTES;
    cfg.timeout_sec = timeout_sec;
    return dfccl_context_create(&cfg, &ctx) == DFCCL_OK ? ctx : NULL;
}

static int body_calls(int rank, int size, sim_world_t *world, void *arg)
{
    static const size_t counts[] = { 0, 1, 3, 64, 127, 128, 129, 1000 };
    dfccl_context_t *ctx = context_new(60);
    dfccl_comm_t *comm;
    dfccl_stats_t st;
    dfccl_status_t where;

    (void)arg;
    CHECK(ctx != NULL, "context");
    dfccl_comm_params_t p = sim_comm_params(world, rank, 300, DFCCL_BACKEND_HOST);
    CHECK(dfccl_comm_create(ctx, &p, &comm) == DFCCL_OK, "comm");
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
        for (int in_place = 0; in_place < 2; in_place++) {
            size_t n = counts[k], rs_counts[16], total = 0;
            for (int r = 0; r < size; r++) total += rs_counts[r] = (n + (size_t)r) % (n / 4 + 2);
            sim_three_t t;
            CHECK(sim_three_alloc(&t, rank, size, n, rs_counts, total, DFCCL_OP_MIN) == 0,
                  "memory");
            dfccl_coll_args_t *a = t.args;
            for (int c = 0; c < 3; c++) {
                a[c].user = &where;
                if (!in_place) continue;
                /* the input where the result goes (allgather: our block) */
                size_t bytes = c == 0 ? n * 8 : c == 1 ? n * 4 : total * 8;
                char *dst = (char *)a[c].recvbuf + (c == 1 ? (size_t)rank * n * 4 : 0);
                memcpy(dst, a[c].sendbuf, bytes);
                a[c].sendbuf = DFCCL_IN_PLACE;
            }
            for (int c = 0; c < 3; c++) {
                where = DFCCL_INPROGRESS;
                dfccl_status_t s = run_blocking(ctx, comm, &a[c]);
                CHECK(s == DFCCL_OK, "call %d, n=%zu%s: %s", c, n, in_place ? " in place" : "",
                      dfccl_status_string(s));
            }
            CHECK(sim_three_check(&t, rank, size, n, rs_counts) == 0, "results of n=%zu%s", n,
                  in_place ? " in place" : "");
            sim_three_free(&t);
        }
    dfccl_stats_get(&st);
    /* 8 B doubles up to 128 elements, int32 blocks up to 256 */
    CHECK(size == 1 || st.by_algorithm[DFCCL_STATS_ONESHOT] > 0, "no call took the one-shot");
    CHECK(size > 1 || st.by_algorithm[DFCCL_STATS_ONESHOT] == 0, "one rank has no one-shot");
    CHECK(st.completed[DFCCL_COLL_ALLREDUCE] == 2 * sizeof(counts) / sizeof(counts[0]),
          "every allreduce counted once (%llu)",
          (unsigned long long)st.completed[DFCCL_COLL_ALLREDUCE]);
    dfccl_comm_destroy(comm);
    dfccl_context_destroy(ctx);
    return 0;
}

enum { THREAD_CALLS = 3000 };

typedef struct {
    dfccl_context_t *ctx;
    dfccl_comm_t    *comm;
    int              rank, size, failed;
    dfccl_status_t   where;
} caller_t;

static void *caller_main(void *arg)
{
    caller_t *t = arg;
    int64_t in = t->rank + 1, out;

    for (int i = 0; i < THREAD_CALLS && !t->failed; i++) {
        dfccl_coll_args_t a = { DFCCL_COLL_ALLREDUCE, &in, &out, 1, NULL, DFCCL_INT64,
                                DFCCL_OP_SUM, 0, &t->where, NULL, DFCCL_BUFFERS_NATIVE };
        __atomic_store_n(&t->where, DFCCL_INPROGRESS, __ATOMIC_RELEASE);
        t->failed = run_blocking(t->ctx, t->comm, &a) != DFCCL_OK ||
                    out != (int64_t)t->size * (t->size + 1) / 2;
    }
    return NULL;
}

static int body_threads(int rank, int size, sim_world_t *world, void *arg)
{
    dfccl_context_t *ctx = context_new(60);
    caller_t t[2];
    pthread_t th[2];

    (void)arg;
    CHECK(ctx != NULL, "context");
    for (int c = 0; c < 2; c++) {
        dfccl_comm_params_t p = sim_comm_params(world, rank, 310 + (uint64_t)c, DFCCL_BACKEND_HOST);
        t[c] = (caller_t){ ctx, NULL, rank, size, 0, DFCCL_INPROGRESS };
        CHECK(dfccl_comm_create(ctx, &p, &t[c].comm) == DFCCL_OK, "comm %d", c);
    }
    /* odd ranks start the second communicator's caller first */
    for (int k = 0; k < 2; k++) {
        int c = (k + rank) % 2;
        pthread_create(&th[c], NULL, caller_main, &t[c]);
    }
    for (int c = 0; c < 2; c++) pthread_join(th[c], NULL);
    for (int c = 0; c < 2; c++) {
        CHECK(!t[c].failed, "caller of comm %d failed", c);
        dfccl_comm_destroy(t[c].comm);
    }
    dfccl_context_destroy(ctx);
    return 0;
}

/* Rank 0 makes another call than the others (a larger count, then an op
 * the engine does not carry for the type, which fails locally): every rank
 * gets an error within the timeout, never a hang or a wrong pairing. */
static int body_mismatch(int rank, int size, sim_world_t *world, void *arg)
{
    int local_failure = *(const int *)arg;
    dfccl_context_t *ctx = context_new(20);
    dfccl_comm_t *comm;
    dfccl_status_t where = DFCCL_INPROGRESS, s;
    float in[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, out[8];

    CHECK(ctx != NULL, "context");
    dfccl_comm_params_t p = sim_comm_params(world, rank, 320, DFCCL_BACKEND_HOST);
    CHECK(dfccl_comm_create(ctx, &p, &comm) == DFCCL_OK, "comm");
    dfccl_coll_args_t a = { DFCCL_COLL_ALLREDUCE, in, out, rank == 0 && !local_failure ? 8 : 4,
                            NULL, DFCCL_FLOAT, rank == 0 && local_failure ? DFCCL_OP_BAND
                                                                           : DFCCL_OP_SUM,
                            0, &where, NULL, DFCCL_BUFFERS_NATIVE };
    s = run_blocking(ctx, comm, &a);
    if (rank == 0 && local_failure)
        CHECK(s == DFCCL_ERR_UNSUPPORTED, "the local failure: %s", dfccl_status_string(s));
    else
        /* found here, or first by a peer, whose board then says so */
        CHECK(s == DFCCL_ERR_MISMATCH || s == DFCCL_ERR_PEER_FAILED || s == DFCCL_ERR_BROKEN,
              "expected a mismatch, got %s", dfccl_status_string(s));
    /* the communicator is broken everywhere: the next call fails at once */
    where = DFCCL_INPROGRESS;
    a.op = DFCCL_OP_SUM;
    a.count = 4;
    s = run_blocking(ctx, comm, &a);
    CHECK(s != DFCCL_OK, "a call after the mismatch succeeded");
    sim_allgather(&s, out, sizeof(s), world);
    dfccl_comm_destroy(comm);
    dfccl_context_destroy(ctx);
    return 0;
}

/* Ranks with different one-shot limits lay their segments out differently:
 * creation fails on every rank alike. */
static int body_settings(int rank, int size, sim_world_t *world, void *arg)
{
    dfccl_context_t *ctx = NULL;
    dfccl_comm_t *comm = NULL;
    dfccl_config_t cfg;

    (void)size;
    (void)arg;
    dfccl_config_init(&cfg);
    cfg.oneshot_max_bytes = rank == 1 ? 0 : MAX_BYTES;
    CHECK(dfccl_context_create(&cfg, &ctx) == DFCCL_OK, "context");
    dfccl_comm_params_t p = sim_comm_params(world, rank, 330, DFCCL_BACKEND_HOST);
    CHECK(dfccl_comm_create(ctx, &p, &comm) == DFCCL_ERR_INVALID_PARAM,
          "different one-shot limits must fail the creation");
    dfccl_context_destroy(ctx);
    return 0;
}

int main(void)
{
    static const int sizes[] = { 1, 2, 3, 4 };
    static const int other_call = 0, local_failure = 1;
    int failed = 0, f;

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        f = sim_run(sizes[i], 120, body_calls, NULL);
        printf("calls on %d ranks: %s\n", sizes[i], f ? "FAIL" : "ok");
        failed += f != 0;
    }
    for (int n = 2; n <= 4; n += 2) {
        f = sim_run(n, 120, body_threads, NULL);
        printf("two calling threads per rank on %d ranks: %s\n", n, f ? "FAIL" : "ok");
        failed += f != 0;
    }
    f = sim_run(3, 60, body_mismatch, (void *)&other_call);
    printf("another call on one rank: %s\n", f ? "FAIL" : "ok");
    failed += f != 0;
    f = sim_run(3, 60, body_mismatch, (void *)&local_failure);
    printf("a call that fails on one rank: %s\n", f ? "FAIL" : "ok");
    failed += f != 0;
    f = sim_run(3, 60, body_settings, NULL);
    printf("different one-shot limits: %s\n", f ? "FAIL" : "ok");
    failed += f != 0;
    printf("test_oneshot: %s\n", failed ? "FAIL" : "ok");
    return failed ? 1 : 0;
}
