/*
 * test_gpu_stream.c - stream-ordered collectives (dfccl_coll_post_stream),
 * ranks as forked processes sharing the GPU(s) (several per GPU need MPS):
 *
 *   ordering    the input is copied in by the stream's earlier work and the
 *               result copied out by its later work, with no host wait in
 *               between: every element must be right, on a created stream
 *               and on the legacy default stream, for 40 calls in a row;
 *   disorder    two communicators on two streams, enqueued in a different
 *               order on odd and even ranks: both complete;
 *   bench       (argument "bench") an 8 B allreduce enqueued on a stream
 *               1,000 times then synchronised, against a host-synchronised
 *               post (stream synchronised, post, completion polled) each
 *               time: µs per call.
 *
 *   test_gpu_stream [MAX_RANKS (default 4)] [bench] [direct=BYTES] [created]
 *                   [verbose=N] [from=N]
 * direct: the engine's gpu_direct_bytes; created: no call on the legacy
 * stream; from: the first rank count (doubling up to MAX_RANKS). The
 * checks run twice: as CUDA sets the process up, then with
 * CUDA_DEVICE_MAX_CONNECTIONS=1 (unless the caller set it), where every
 * stream shares one hardware queue: the case the engine's hold is for
 * (stream.c), the ordering part only. With one queue CUDA runs the work of
 * all streams in the order it was issued, so the disorder part cannot end
 * there, whatever a library does: a rank's second stream waits behind its
 * first stream's collective, which waits for the peer's first stream's
 * work, queued behind that peer's other collective (docs/api.md).
 * Exits 77 (skipped) where no CUDA device is usable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "include/dfccl.h"
#include "sim_ranks.h"

#define CUDA_OK(call) CHECK((call) == cudaSuccess, "%s failed", #call)
#define COUNT 65536

static int bench_mode;
static size_t direct_bytes = (size_t)-1;   /* (size_t)-1: the engine's default */
static int created_only;                  /* no call on the legacy stream */
static int verbose;
static int from_ranks = 2;
static int one_queue;                     /* every stream on one hardware queue: ordering only */

static double now_sec(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* The stream's work is done, within 30 s (a hang is a failure that says
 * where it stopped, not a test that never ends). */
static int stream_wait(dfccl_context_t *ctx, cudaStream_t st, int rank, const char *what,
                       int call, int *taken)
{
    double start = now_sec();
    cudaError_t e;
    while ((e = cudaStreamQuery(st)) == cudaErrorNotReady && now_sec() - start < 30)
        usleep(100);
    if (e == cudaSuccess) return 1;
    {
        dfccl_completion_t c[64];
        int n;
        while ((n = dfccl_context_poll(ctx, c, 64)) > 0) *taken += n;
    }
    fprintf(stderr, "rank %d: %s call %d: the stream %s; %d collectives completed\n", rank,
            what, call, e == cudaErrorNotReady ? "did not finish within 30 s"
                                               : cudaGetErrorString(e), *taken);
    return 0;
}

/* Takes n completions off the queue (each stream-ordered call also
 * completes there), within 60 s; the number that succeeded, or -1. */
static int drain(dfccl_context_t *ctx, int n)
{
    int got = 0, ok = 0;
    double start = now_sec();
    while (got < n && now_sec() - start < 60) {
        dfccl_completion_t c;
        if (dfccl_context_poll(ctx, &c, 1) == 1) {
            got++;
            ok += c.status == DFCCL_OK;
        } else {
            dfccl_context_wait(ctx, 1000000);
        }
    }
    return got == n ? ok : -1;
}

static int body(int rank, int size, sim_world_t *world, void *arg)
{
    dfccl_config_t cfg;
    dfccl_context_t *ctx;
    dfccl_comm_t *comm[2];
    cudaStream_t s[2];
    float *h_in, *h_out, *d_in[2], *d_out[2];
    int ndev = 0, calls = 0, taken = 0;
    (void)arg;

    CUDA_OK(cudaGetDeviceCount(&ndev));
    CUDA_OK(cudaSetDevice(rank % ndev));
    dfccl_config_init(&cfg);
    cfg.timeout_sec = 10;
    cfg.verbose = verbose;
    if (direct_bytes != (size_t)-1) cfg.gpu_direct_bytes = direct_bytes;
    CHECK(dfccl_context_create(&cfg, &ctx) == DFCCL_OK, "context");
    if (verbose) fprintf(stderr, "rank %d: context made\n", rank);
    for (int c = 0; c < 2; c++) {
        dfccl_comm_params_t p = sim_comm_params(world, rank, 300 + (uint64_t)c, DFCCL_BACKEND_GPU);
        CHECK(dfccl_comm_create(ctx, &p, &comm[c]) == DFCCL_OK, "GPU comm %d", c);
        CUDA_OK(cudaStreamCreateWithFlags(&s[c], cudaStreamNonBlocking));
        CUDA_OK(cudaMalloc((void **)&d_in[c], COUNT * sizeof(float)));
        CUDA_OK(cudaMalloc((void **)&d_out[c], COUNT * sizeof(float)));
    }
    if (verbose) fprintf(stderr, "rank %d: communicators and buffers made\n", rank);
    CUDA_OK(cudaMallocHost((void **)&h_in, COUNT * sizeof(float)));
    CUDA_OK(cudaMallocHost((void **)&h_out, COUNT * sizeof(float)));

    if (bench_mode) {
        dfccl_coll_args_t a = { .type = DFCCL_COLL_ALLREDUCE, .sendbuf = d_in[0],
                                .recvbuf = d_out[0], .count = 2, .dtype = DFCCL_FLOAT,
                                .op = DFCCL_OP_SUM };
        for (int round = 0; round < 3; round++) {
            double t0 = now_sec();
            for (int i = 0; i < 1000; i++)
                CHECK(dfccl_coll_post_stream(comm[0], &a, s[0]) == DFCCL_OK, "post_stream");
            CUDA_OK(cudaStreamSynchronize(s[0]));
            double t1 = now_sec();
            CHECK(drain(ctx, 1000) == 1000, "stream completions");
            double t2 = now_sec();
            for (int i = 0; i < 1000; i++) {
                CUDA_OK(cudaStreamSynchronize(s[0]));
                CHECK(dfccl_coll_post(comm[0], &a) == DFCCL_OK, "post");
                CHECK(drain(ctx, 1) == 1, "completion");
            }
            double t3 = now_sec();
            if (rank == 0)
                printf("np %d round %d: 8 B allreduce, stream-ordered %.2f us per call,"
                       " host-synchronised post %.2f us per call\n", size, round,
                       (t1 - t0) * 1e3, (t3 - t2) * 1e3);
        }
        return 0;
    }

    /* ordering: in by the stream's earlier work, out by its later work */
    for (int i = 0; i < 40; i++) {
        cudaStream_t st = i % 2 || created_only ? s[0] : cudaStreamLegacy;
        dfccl_coll_args_t a = { .type = DFCCL_COLL_ALLREDUCE, .sendbuf = d_in[0],
                                .recvbuf = d_out[0], .count = COUNT, .dtype = DFCCL_FLOAT,
                                .op = DFCCL_OP_SUM };
        for (size_t k = 0; k < COUNT; k++) h_in[k] = (float)((k + (size_t)rank + (size_t)i) % 13);
        CUDA_OK(cudaMemsetAsync(d_out[0], 0xff, COUNT * sizeof(float), st));
        CUDA_OK(cudaMemcpyAsync(d_in[0], h_in, COUNT * sizeof(float), cudaMemcpyHostToDevice, st));
        CHECK(dfccl_coll_post_stream(comm[0], &a, st) == DFCCL_OK, "post_stream %d", i);
        if (verbose) fprintf(stderr, "rank %d: ordering call %d enqueued\n", rank, i);
        CUDA_OK(cudaMemcpyAsync(h_out, d_out[0], COUNT * sizeof(float), cudaMemcpyDeviceToHost, st));
        CHECK(stream_wait(ctx, st, rank, "ordering", i, &taken), "ordering call %d", i);
        calls++;
        for (size_t k = 0; k < COUNT; k++) {
            float want = 0;
            for (int r = 0; r < size; r++) want += (float)((k + (size_t)r + (size_t)i) % 13);
            CHECK(h_out[k] == want, "call %d (%s stream): element %zu is %g, not %g", i,
                  i % 2 ? "created" : "legacy", k, h_out[k], want);
        }
    }
    /* disorder: two communicators, two streams, rank-dependent order */
    for (int i = 0; i < (one_queue ? 0 : 10); i++) {
        for (int j = 0; j < 2; j++) {
            int c = (j + rank + i) % 2;
            dfccl_coll_args_t a = { .type = DFCCL_COLL_ALLREDUCE, .sendbuf = d_in[c],
                                    .recvbuf = d_out[c], .count = COUNT, .dtype = DFCCL_FLOAT,
                                    .op = DFCCL_OP_SUM };
            CUDA_OK(cudaMemsetAsync(d_in[c], 0, COUNT * sizeof(float), s[c]));
            CHECK(dfccl_coll_post_stream(comm[c], &a, s[c]) == DFCCL_OK, "disorder post");
            calls++;
        }
        for (int c = 0; c < 2; c++) {
            const char *what = c ? "disorder (comm 1)" : "disorder (comm 0)";
            CHECK(stream_wait(ctx, s[c], rank, what, i, &taken), "disorder round %d", i);
        }
    }
    CHECK(drain(ctx, calls) == calls, "%d completions, all successful", calls);
    for (int c = 0; c < 2; c++) {
        dfccl_comm_destroy(comm[c]);
        cudaStreamDestroy(s[c]);
    }
    dfccl_context_destroy(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    int max_ranks = argc > 1 ? atoi(argv[1]) : 4, failed = 0;

    if (!sim_gpu_usable()) return 77;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "bench") == 0) bench_mode = 1;
        else if (strncmp(argv[i], "direct=", 7) == 0) direct_bytes = strtoull(argv[i] + 7, NULL, 0);
        else if (strcmp(argv[i], "created") == 0) created_only = 1;
        else if (strncmp(argv[i], "verbose=", 8) == 0) verbose = atoi(argv[i] + 8);
        else if (strncmp(argv[i], "from=", 5) == 0) from_ranks = atoi(argv[i] + 5);
    }
    /* pass 1 as CUDA sets the process up; pass 2 (not for the bench) with
     * every stream on one hardware queue, set before the ranks start CUDA
     * (unless the caller chose a number) */
    for (int pass = 1; pass <= (bench_mode ? 1 : 2); pass++) {
        const char *queues = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
        if (pass == 2) {
            if (queues != NULL) break;
            setenv("CUDA_DEVICE_MAX_CONNECTIONS", "1", 1);
            one_queue = 1;
        }
        for (int n = from_ranks; n <= max_ranks; n *= 2) {
            int f = sim_run(n, 300, body, NULL);
            printf("%s on %d ranks%s: %s\n", bench_mode ? "bench" : "stream-ordered collectives",
                   n, pass == 2 ? ", one hardware queue" : "", f ? "FAIL" : "ok");
            failed += f != 0;
        }
    }
    printf("test_gpu_stream: %s\n", failed ? "FAIL" : "ok");
    return failed ? 1 : 0;
}
