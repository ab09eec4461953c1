/*
 * test_gpu_ranks.c - the GPU backend through the engine's API, ranks as
 * forked processes sharing the GPU(s) (several ranks per GPU need CUDA MPS):
 * every collective on device buffers across the one-shot/ring boundary, in
 * place and not; collectives on several communicators in a different order
 * on every rank; cudaDeviceSynchronize and cudaFree between collectives
 * whose peers are late; the watchdog's diagnosis for a missing peer; the
 * same collectives with ranks counted as separate nodes (node_split), which
 * run the ring with FIFOs in host memory moved over UCX.
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

static int wait_completions(dfccl_context_t *ctx, int n, double timeout_sec, dfccl_status_t *worst)
{
    int got = 0, ok = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        dfccl_completion_t c;
        while (got < n && dfccl_context_poll(ctx, &c, 1) == 1) {
            got++;
            ok += c.status == DFCCL_OK;
            if (c.status != DFCCL_OK) *worst = c.status;
        }
        if (got == n) break;
        clock_gettime(CLOCK_MONOTONIC, &t);
        double waited = (double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9;
        if (waited > timeout_sec) break;
        if (waited > 0.002) dfccl_context_wait(ctx, 1000000);   /* spin 2 ms, then 1 ms naps */
    }
    return got == n ? ok : -1;
}

/* The direct algorithm's threshold for the next sim_run (SIZE_MAX: the
 * default); set before forking, so every rank sees the same. */
static size_t test_direct_bytes = SIZE_MAX;
/* node_split for the next sim_run (0: one node), set before forking too. */
static unsigned test_node_split = 0;
/* 1: two "nodes" whose ranks interleave (even ranks on one, odd on the
 * other), given as the caller's node labels; the ring then runs node by
 * node (0, 2, 4, .., 1, 3, ..), not in rank order. */
static int test_node_interleave = 0;
static int test_hier = 0;   /* the hierarchical allreduce across nodes (algorithm 1) */
static int test_rd = 0;     /* recursive doubling among the nodes (algorithm 2): two
                               interleaved nodes' last ranks are the ring's crossing ones,
                               so the same ranks send across nodes */

static dfccl_comm_params_t test_params(sim_world_t *world, int rank, uint64_t key)
{
    dfccl_comm_params_t p = sim_comm_params(world, rank, key, DFCCL_BACKEND_GPU);

    if (test_node_interleave) p.node = 1 + (uint64_t)(rank % 2);
    return p;
}

/* Whether rank's next one on the GPU ring across nodes is on another node:
 * only those ranks send bytes over the network. */
static int test_sends_across(int rank, int size)
{
    /* hierarchical (algorithm 1, or auto for the largest allreduces), on
     * nodes of as many ranks, more than one each, and several nodes: every
     * rank sends to its counterpart on the next node */
    if (!test_rd && (test_node_interleave ? size % 2 == 0
                      : test_node_split > 1 && size % (int)test_node_split == 0 &&
                        size > (int)test_node_split))
        return 1;
    if (test_node_interleave) return rank >= size - 2;   /* the last of each node */
    if (test_node_split == 0) return 0;
    return rank / (int)test_node_split != (rank + 1) % size / (int)test_node_split;
}

static int gpu_setup(int rank, dfccl_context_t **ctx, double timeout_sec)
{
    dfccl_config_t cfg;
    int ndev = 0;

    CUDA_OK(cudaGetDeviceCount(&ndev));
    CUDA_OK(cudaSetDevice(rank % ndev));
    dfccl_config_init(&cfg);
    cfg.timeout_sec = timeout_sec;
    /* tuning experiments: the GPU engine settings from the environment */
    if (getenv("DFCCL_TEST_GPU_CHANNELS")) cfg.gpu_channels = (unsigned)atoi(getenv("DFCCL_TEST_GPU_CHANNELS"));
    if (getenv("DFCCL_TEST_GPU_SLOT_BYTES")) cfg.gpu_slot_bytes = (size_t)atol(getenv("DFCCL_TEST_GPU_SLOT_BYTES"));
    if (getenv("DFCCL_TEST_GPU_SLOTS")) cfg.gpu_fifo_slots = (unsigned)atoi(getenv("DFCCL_TEST_GPU_SLOTS"));
    if (getenv("DFCCL_TEST_GPU_SYNC_LEGACY")) cfg.gpu_sync_legacy_stream = atoi(getenv("DFCCL_TEST_GPU_SYNC_LEGACY"));
    if (test_direct_bytes != SIZE_MAX) cfg.gpu_direct_bytes = test_direct_bytes;
    cfg.node_split = test_node_split;
    if (test_hier) cfg.algorithm = 1;   /* hierarchical */
    if (test_rd) cfg.algorithm = 2;     /* recursive doubling among the nodes */
    if (getenv("DFCCL_TEST_GPU_DIRECT_BYTES")) cfg.gpu_direct_bytes = (size_t)atol(getenv("DFCCL_TEST_GPU_DIRECT_BYTES"));
    if (getenv("DFCCL_TEST_GPU_POLL_MAX_NS")) cfg.gpu_poll_max_ns = (uint32_t)atol(getenv("DFCCL_TEST_GPU_POLL_MAX_NS"));
    if (getenv("DFCCL_TEST_GPU_TRACE")) cfg.gpu_trace = atoi(getenv("DFCCL_TEST_GPU_TRACE"));
    CHECK(dfccl_context_create(&cfg, ctx) == DFCCL_OK, "context");
    return 0;
}

/* One collective on device buffers, checked element by element. */
static int run_one(int rank, int size, dfccl_context_t *ctx, dfccl_comm_t *comm,
                   dfccl_coll_type_t type, dfccl_dtype_t dtype, dfccl_op_t op, size_t count,
                   int in_place)
{
    size_t esize = dfccl_dtype_size(dtype), in_n, out_n, displ = 0, *counts = NULL;
    char *h_in, *h_out, *d_in = NULL, *d_out = NULL, e[8];
    dfccl_status_t worst = DFCCL_OK;

    counts = calloc((size_t)size, sizeof(size_t));
    for (int r = 0; r < size; r++) counts[r] = count + (size_t)r * 3;   /* uneven */
    for (int r = 0; r < rank; r++) displ += counts[r];
    switch (type) {
    case DFCCL_COLL_ALLREDUCE: in_n = out_n = count; break;
    case DFCCL_COLL_ALLGATHER: in_n = count; out_n = count * (size_t)size; break;
    default:
        in_n = 0;
        for (int r = 0; r < size; r++) in_n += counts[r];
        out_n = in_place ? in_n : counts[rank];
        break;
    }
    h_in = malloc(in_n * esize + 1);
    h_out = malloc((out_n > in_n ? out_n : in_n) * esize + 1);
    sim_fill_input(h_in, in_n, dtype, op, rank, type == DFCCL_COLL_ALLGATHER ? (size_t)rank * count : 0);
    CUDA_OK(cudaMalloc((void **)&d_out, (out_n > in_n ? out_n : in_n) * esize + 16));
    CUDA_OK(cudaMemset(d_out, 0xa5, (out_n > in_n ? out_n : in_n) * esize + 16));
    if (in_place) {
        size_t at = type == DFCCL_COLL_ALLGATHER ? (size_t)rank * count * esize : 0;
        CUDA_OK(cudaMemcpy(d_out + at, h_in, in_n * esize, cudaMemcpyHostToDevice));
    } else {
        CUDA_OK(cudaMalloc((void **)&d_in, in_n * esize + 16));
        CUDA_OK(cudaMemcpy(d_in, h_in, in_n * esize, cudaMemcpyHostToDevice));
    }
    dfccl_coll_args_t a = { type, in_place ? DFCCL_IN_PLACE : d_in, d_out, count, counts, dtype,
                            type == DFCCL_COLL_ALLGATHER ? DFCCL_OP_NONE : op, 0, NULL, NULL, DFCCL_BUFFERS_NATIVE };
    CHECK(dfccl_coll_post(comm, &a) == DFCCL_OK, "post");
    CHECK(wait_completions(ctx, 1, 60, &worst) == 1, "%s of %zu %s failed: %s",
          dfccl_coll_type_name(type), count, dfccl_dtype_name(dtype), dfccl_status_string(worst));
    size_t check_n = type == DFCCL_COLL_REDUCE_SCATTER ? counts[rank] : out_n;
    CUDA_OK(cudaMemcpy(h_out, d_out, check_n * esize, cudaMemcpyDeviceToHost));
    size_t wrong = 0, first_wrong = 0, last_wrong = 0;
    for (size_t i = 0; i < check_n; i++) {
        if (type == DFCCL_COLL_ALLGATHER) {
            int r = (int)(i / count);
            sim_fill_input(e, 1, dtype, op, r, i);
        } else {
            sim_expected(e, dtype, op, size, type == DFCCL_COLL_REDUCE_SCATTER ? displ + i : i);
        }
        if (memcmp(e, h_out + i * esize, esize) != 0) {
            if (wrong++ == 0) first_wrong = i;
            last_wrong = i;
        }
    }
    CHECK(wrong == 0, "%s %s %s count %zu%s: %zu elements wrong, first %zu, last %zu",
          dfccl_coll_type_name(type), dfccl_dtype_name(dtype), dfccl_op_name(op), count,
          in_place ? " in place" : "", wrong, first_wrong, last_wrong);
    cudaFree(d_in);
    cudaFree(d_out);
    free(h_in);
    free(h_out);
    free(counts);
    return 0;
}

static int body_collectives(int rank, int size, sim_world_t *world, void *arg)
{
    static const size_t counts[] = { 1, 7, 4096, 16384, 16385, 100003, 1 << 20, 9 << 20 };
    static const struct { dfccl_dtype_t t; dfccl_op_t op; } reds[] = {
        { DFCCL_FLOAT, DFCCL_OP_SUM }, { DFCCL_INT32, DFCCL_OP_MAX }, { DFCCL_DOUBLE, DFCCL_OP_PROD },
        { DFCCL_INT8, DFCCL_OP_BXOR }, { DFCCL_UINT16, DFCCL_OP_MIN }, { DFCCL_INT64, DFCCL_OP_SUM },
        { DFCCL_BOOL, DFCCL_OP_LOR },
    };
    dfccl_context_t *ctx;
    dfccl_comm_t *comm;
    int n = 0;
    (void)arg;

    if (gpu_setup(rank, &ctx, 60)) return 1;
    dfccl_comm_params_t p = test_params(world, rank, 42);
    CHECK(dfccl_comm_create(ctx, &p, &comm) == DFCCL_OK, "GPU comm");
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        for (int ip = 0; ip < 2; ip++) {
            size_t r = (c + (size_t)ip) % (sizeof(reds) / sizeof(reds[0]));
            if (run_one(rank, size, ctx, comm, DFCCL_COLL_ALLREDUCE, reds[r].t, reds[r].op,
                        counts[c], ip) ||
                run_one(rank, size, ctx, comm, DFCCL_COLL_ALLGATHER, DFCCL_BYTE, DFCCL_OP_NONE,
                        counts[c], ip) ||
                run_one(rank, size, ctx, comm, DFCCL_COLL_REDUCE_SCATTER, reds[r].t, reds[r].op,
                        counts[c] / (size_t)size + 1, ip))
                return 1;
            n += 3;
        }
    }
    if (test_node_split > 0 || test_node_interleave) {
        /* every rank's collectives went across nodes; only a rank whose
         * ring successor is on another node sends bytes over the network
         * (the others receive them) */
        dfccl_stats_t st;
        int sends = test_sends_across(rank, size);
        dfccl_stats_get(&st);
        CHECK(st.net_collectives > 0 && (st.net_bytes_sent > 0) == sends,
              "split %u, interleaved %d: %llu collectives across nodes, %llu bytes sent over"
              " the network (sends to another node: %d)", test_node_split, test_node_interleave,
              (unsigned long long)st.net_collectives, (unsigned long long)st.net_bytes_sent,
              sends);
    }
    dfccl_comm_destroy(comm);
    dfccl_context_destroy(ctx);
    if (rank == 0) printf("  %d ranks: %d collectives checked\n", size, n);
    fflush(stdout);
    return 0;
}

/*
 * Four communicators; every rank posts an allreduce on each in its own
 * order, with a cudaDeviceSynchronize and a cudaFree/cudaMalloc between its
 * posts, while its peers have not yet posted theirs: both calls must return
 * (the daemon leaves while nobody can move) and everything completes.
 */
static int body_disorder(int rank, int size, sim_world_t *world, void *arg)
{
    enum { NCOMMS = 4 };
    size_t count = arg ? 300000 : 1000;   /* ring or one-shot */
    dfccl_context_t *ctx;
    dfccl_comm_t *comm[NCOMMS];
    dfccl_status_t worst = DFCCL_OK;
    float *h = malloc(sizeof(float) * count), *in, *out[NCOMMS];

    if (gpu_setup(rank, &ctx, 60)) return 1;
    for (int c = 0; c < NCOMMS; c++) {
        dfccl_comm_params_t p = test_params(world, rank, 200 + (uint64_t)c);
        CHECK(dfccl_comm_create(ctx, &p, &comm[c]) == DFCCL_OK, "comm %d", c);
        CUDA_OK(cudaMalloc((void **)&out[c], sizeof(float) * count));
    }
    sim_fill_input(h, count, DFCCL_FLOAT, DFCCL_OP_SUM, rank, 0);
    CUDA_OK(cudaMalloc((void **)&in, sizeof(float) * count));
    CUDA_OK(cudaMemcpy(in, h, sizeof(float) * count, cudaMemcpyHostToDevice));
    for (int k = 0; k < NCOMMS; k++) {
        int c = (k + rank) % NCOMMS;
        void *scratch;
        dfccl_coll_args_t a = { DFCCL_COLL_ALLREDUCE, in, out[c], count, NULL, DFCCL_FLOAT,
                                DFCCL_OP_SUM, 0, NULL, NULL, DFCCL_BUFFERS_NATIVE };
        CHECK(dfccl_coll_post(comm[c], &a) == DFCCL_OK, "post");
        CUDA_OK(cudaDeviceSynchronize());
        CUDA_OK(cudaMalloc(&scratch, 1 << 20));
        CUDA_OK(cudaFree(scratch));
        usleep(2000 * (unsigned)rank);   /* peers arrive late */
    }
    int ok = wait_completions(ctx, NCOMMS, 60, &worst);
    CHECK(ok == NCOMMS, "%d of %d completed (%s)", ok, NCOMMS, dfccl_status_string(worst));
    for (int c = 0; c < NCOMMS; c++) {
        CUDA_OK(cudaMemcpy(h, out[c], sizeof(float) * count, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < count; i += 97) {
            float e;
            sim_expected(&e, DFCCL_FLOAT, DFCCL_OP_SUM, size, i);
            CHECK(h[i] == e, "comm %d [%zu] %g != %g", c, i, h[i], e);
        }
        dfccl_comm_destroy(comm[c]);
        cudaFree(out[c]);
    }
    cudaFree(in);
    free(h);
    dfccl_context_destroy(ctx);
    return 0;
}

/*
 * Direct collectives whose buffers cannot be mapped: rank 0's input comes
 * from a stream-ordered pool (cudaMallocAsync), which CUDA IPC cannot
 * export, so every rank must agree on the ring for that call; the calls
 * around it (ordinary cudaMalloc buffers) run direct. Every result is
 * checked.
 */
static int body_direct_fallback(int rank, int size, sim_world_t *world, void *arg)
{
    const size_t count = 1 << 20;   /* 4 MiB of floats: direct */
    dfccl_context_t *ctx;
    dfccl_comm_t *comm;
    dfccl_status_t worst = DFCCL_OK;
    float *h = malloc(sizeof(float) * count), *in_pool = NULL, *in, *out;
    cudaStream_t st;
    (void)arg;

    if (gpu_setup(rank, &ctx, 60)) return 1;
    dfccl_comm_params_t p = sim_comm_params(world, rank, 77, DFCCL_BACKEND_GPU);
    CHECK(dfccl_comm_create(ctx, &p, &comm) == DFCCL_OK, "comm");
    CUDA_OK(cudaStreamCreate(&st));
    CUDA_OK(cudaMalloc((void **)&in, sizeof(float) * count));
    CUDA_OK(cudaMalloc((void **)&out, sizeof(float) * count));
    if (rank == 0) CUDA_OK(cudaMallocAsync((void **)&in_pool, sizeof(float) * count, st));
    CUDA_OK(cudaStreamSynchronize(st));
    sim_fill_input(h, count, DFCCL_FLOAT, DFCCL_OP_SUM, rank, 0);
    CUDA_OK(cudaMemcpy(in, h, sizeof(float) * count, cudaMemcpyHostToDevice));
    if (in_pool) CUDA_OK(cudaMemcpy(in_pool, h, sizeof(float) * count, cudaMemcpyHostToDevice));
    for (int call = 0; call < 3; call++) {
        dfccl_coll_args_t a = { DFCCL_COLL_ALLREDUCE, call == 1 && in_pool ? in_pool : in, out,
                                count, NULL, DFCCL_FLOAT, DFCCL_OP_SUM, 0, NULL, NULL, DFCCL_BUFFERS_NATIVE };
        CUDA_OK(cudaMemset(out, 0, sizeof(float) * count));
        CHECK(dfccl_coll_post(comm, &a) == DFCCL_OK, "post");
        CHECK(wait_completions(ctx, 1, 60, &worst) == 1, "call %d failed: %s", call,
              dfccl_status_string(worst));
        CUDA_OK(cudaMemcpy(h, out, sizeof(float) * count, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < count; i += 61) {
            float e;
            sim_expected(&e, DFCCL_FLOAT, DFCCL_OP_SUM, size, i);
            CHECK(h[i] == e, "call %d [%zu] %g != %g", call, i, h[i], e);
        }
    }
    dfccl_comm_destroy(comm);
    if (in_pool) CUDA_OK(cudaFreeAsync(in_pool, st));
    CUDA_OK(cudaStreamSynchronize(st));
    cudaStreamDestroy(st);
    cudaFree(in);
    cudaFree(out);
    free(h);
    dfccl_context_destroy(ctx);
    return 0;
}

/* Rank 1 never posts: rank 0's collective fails by the watchdog (2 s). */
static int body_timeout(int rank, int size, sim_world_t *world, void *arg)
{
    dfccl_context_t *ctx;
    dfccl_comm_t *comm;
    dfccl_status_t worst = DFCCL_OK;
    float *buf;
    int last = 0, all[64];
    (void)arg;

    if (gpu_setup(rank, &ctx, 2.0)) return 1;
    dfccl_comm_params_t p = sim_comm_params(world, rank, 7, DFCCL_BACKEND_GPU);
    CHECK(dfccl_comm_create(ctx, &p, &comm) == DFCCL_OK, "comm");
    CUDA_OK(cudaMalloc((void **)&buf, sizeof(float) * 1000000));
    if (rank == 0) {
        dfccl_coll_args_t a = { DFCCL_COLL_ALLREDUCE, DFCCL_IN_PLACE, buf, 1000000, NULL,
                                DFCCL_FLOAT, DFCCL_OP_SUM, 0, NULL, NULL, DFCCL_BUFFERS_NATIVE };
        CHECK(dfccl_coll_post(comm, &a) == DFCCL_OK, "post");
        int ok = wait_completions(ctx, 1, 30, &worst);
        CHECK(ok == 0 && worst == DFCCL_ERR_TIMEOUT, "expected a watchdog timeout, got %d ok (%s)",
              ok, dfccl_status_string(worst));
        last = 1;
    }
    sim_allgather(&last, all, sizeof(last), world);
    dfccl_comm_destroy(comm);
    cudaFree(buf);
    dfccl_context_destroy(ctx);
    return 0;
}

/* "bench": allreduce times through the engine alone (no MPI), rank 0's
 * median over the iterations, for a quick look while tuning. */
static int body_bench(int rank, int size, sim_world_t *world, void *arg)
{
    static const size_t bytes[] = { 8, 1024, 65536, 1 << 20, 16 << 20, 64 << 20, 256 << 20 };
    dfccl_context_t *ctx;
    dfccl_comm_t *comm;
    dfccl_status_t worst = DFCCL_OK;
    float *buf;
    (void)arg;

    if (gpu_setup(rank, &ctx, 60)) return 1;
    dfccl_comm_params_t p = sim_comm_params(world, rank, 5, DFCCL_BACKEND_GPU);
    CHECK(dfccl_comm_create(ctx, &p, &comm) == DFCCL_OK, "comm");
    CUDA_OK(cudaMalloc((void **)&buf, 256 << 20));
    CUDA_OK(cudaMemset(buf, 0, 256 << 20));
    for (size_t b = 0; b < sizeof(bytes) / sizeof(bytes[0]); b++) {
        enum { ITERS = 40 };
        double t[ITERS];
        for (int it = -5; it < ITERS; it++) {
            struct timespec t0, t1;
            dfccl_coll_args_t a = { DFCCL_COLL_ALLREDUCE, DFCCL_IN_PLACE, buf, bytes[b] / 4, NULL,
                                    DFCCL_FLOAT, DFCCL_OP_SUM, 0, NULL, NULL, DFCCL_BUFFERS_NATIVE };
            clock_gettime(CLOCK_MONOTONIC, &t0);
            CHECK(dfccl_coll_post(comm, &a) == DFCCL_OK, "post");
            CHECK(wait_completions(ctx, 1, 60, &worst) == 1, "allreduce failed");
            clock_gettime(CLOCK_MONOTONIC, &t1);
            if (it >= 0) t[it] = (t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3;
        }
        for (int i = 1; i < ITERS; i++)
            for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
                double x = t[j];
                t[j] = t[j - 1];
                t[j - 1] = x;
            }
        if (rank == 0)
            printf("  np %d allreduce %10zu B: median %10.1f us  min %10.1f us  (%.1f GB/s algbw)\n",
                   size, bytes[b], t[ITERS / 2], t[0], bytes[b] / t[ITERS / 2] / 1e3);
        fflush(stdout);
    }
    dfccl_comm_destroy(comm);
    cudaFree(buf);
    dfccl_context_destroy(ctx);
    return 0;
}

/* Asks a forked child whether a CUDA device is usable: the parent must not
 * touch CUDA before forking the ranks. */
/* A GPU communicator made from a unique id (the rendezvous over UCX):
 * rank 0 makes the id, the world's allgather hands it on; the three
 * collectives on device buffers. */
static int body_by_id(int rank, int size, sim_world_t *world, void *arg)
{
    static const dfccl_coll_type_t types[] = { DFCCL_COLL_ALLREDUCE, DFCCL_COLL_ALLGATHER,
                                               DFCCL_COLL_REDUCE_SCATTER };
    dfccl_unique_id_t id, ids[16];
    dfccl_context_t *ctx;
    dfccl_comm_t *comm;

    (void)arg;
    if (gpu_setup(rank, &ctx, 60) != 0) return 1;
    if (rank == 0) CHECK(dfccl_unique_id_create(&id) == DFCCL_OK, "unique id");
    CHECK(sim_allgather(&id, ids, sizeof(id), world) == 0, "handing the id on");
    CHECK(dfccl_comm_create_by_id(ctx, &ids[0], size, rank, DFCCL_BACKEND_GPU, &comm) == DFCCL_OK,
          "a GPU communicator from the id");
    static const size_t counts[] = { 7, 4099, 1 << 20 };
    for (size_t t = 0; t < 3; t++)
        for (size_t k = 0; k < 3; k++)
            if (run_one(rank, size, ctx, comm, types[t], DFCCL_FLOAT, DFCCL_OP_SUM, counts[k],
                        0) != 0)
                return 1;
    dfccl_comm_destroy(comm);
    dfccl_context_destroy(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    int sizes[] = { 2, 4, 8 }, failed = 0, max_ranks = argc > 1 ? atoi(argv[1]) : 8;

    if (!sim_gpu_usable()) return 77;
    if (argc > 2 && strcmp(argv[2], "bench") == 0) {
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
            if (sizes[i] <= max_ranks) failed += sim_run(sizes[i], 300, body_bench, NULL) != 0;
        return failed ? 1 : 0;
    }
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        int n = sizes[i];
        if (n > max_ranks) continue;
        /* every size past the one-shot: the ring, then the direct algorithm */
        test_direct_bytes = 0;
        int f = sim_run(n, 300, body_collectives, NULL);
        printf("collectives on %d ranks (one-shot, ring): %s\n", n, f ? "FAIL" : "ok");
        failed += f != 0;
        test_direct_bytes = 65537;   /* just past the one-shot (64 KiB) */
        f = sim_run(n, 300, body_collectives, NULL);
        printf("collectives on %d ranks (one-shot, direct): %s\n", n, f ? "FAIL" : "ok");
        failed += f != 0;
        test_direct_bytes = SIZE_MAX;
        f = sim_run(n, 300, body_disorder, NULL);
        printf("disorder + sync/cudaFree on %d ranks (one-shot): %s\n", n, f ? "FAIL" : "ok");
        failed += f != 0;
        test_direct_bytes = 0;
        f = sim_run(n, 300, body_disorder, (void *)1);
        printf("disorder + sync/cudaFree on %d ranks (ring): %s\n", n, f ? "FAIL" : "ok");
        failed += f != 0;
        test_direct_bytes = SIZE_MAX;
        f = sim_run(n, 300, body_disorder, (void *)1);
        printf("disorder + sync/cudaFree on %d ranks (direct): %s\n", n, f ? "FAIL" : "ok");
        failed += f != 0;
        f = sim_run(n, 300, body_direct_fallback, NULL);
        printf("direct with an unmappable buffer on %d ranks (agreed ring): %s\n", n,
               f ? "FAIL" : "ok");
        failed += f != 0;
        /* across "nodes": the ring alone, FIFOs to other nodes in mapped
         * host memory moved by the proxy over UCX (every rank its own node;
         * pairs, where each rank has one neighbour on its node) */
        for (unsigned split = 1; split <= 2; split++) {
            char why[160];
            if (split == 2 && n < 4) continue;
            if (!dfccl_net_available(why, sizeof(why))) {
                printf("collectives on %d ranks across nodes: skipped (%s)\n", n, why);
                break;
            }
            test_node_split = split;
            f = sim_run(n, 300, body_collectives, NULL);
            printf("collectives on %d ranks, nodes of %u (ring over the network): %s\n", n,
                   split, f ? "FAIL" : "ok");
            failed += f != 0;
            f = sim_run(n, 300, body_disorder, (void *)1);
            printf("disorder + sync/cudaFree on %d ranks, nodes of %u: %s\n", n, split,
                   f ? "FAIL" : "ok");
            failed += f != 0;
            test_node_split = 0;
        }
        /* two nodes whose ranks interleave: the ring crosses between them
         * twice, whatever the numbering */
        char net_why[160];
        if (n >= 4 && dfccl_net_available(net_why, sizeof(net_why))) {
            test_node_interleave = 1;
            f = sim_run(n, 300, body_collectives, NULL);
            printf("collectives on %d ranks, 2 nodes interleaved (ring node by node): %s\n", n,
                   f ? "FAIL" : "ok");
            failed += f != 0;
            test_hier = 1;
            f = sim_run(n, 300, body_collectives, NULL);
            printf("collectives on %d ranks, 2 nodes interleaved, allreduce hierarchical: %s\n",
                   n, f ? "FAIL" : "ok");
            failed += f != 0;
            test_hier = 0;
            test_rd = 1;
            f = sim_run(n, 300, body_collectives, NULL);
            printf("collectives on %d ranks, 2 nodes interleaved, allreduce by recursive doubling"
                   " among the nodes: %s\n", n, f ? "FAIL" : "ok");
            failed += f != 0;
            test_rd = 0;
            f = sim_run(n, 300, body_disorder, (void *)1);
            printf("disorder + sync/cudaFree on %d ranks, 2 nodes interleaved: %s\n", n,
                   f ? "FAIL" : "ok");
            failed += f != 0;
            test_node_interleave = 0;
        }
        fflush(stdout);
    }
    char why[160];
    if (dfccl_net_available(why, sizeof(why))) {
        for (unsigned split = 0; split <= 1; split++) {
            int n = max_ranks < 4 ? max_ranks : 4;
            test_node_split = split;
            int f = sim_run(n, 300, body_by_id, NULL);
            printf("collectives on %d ranks from a unique id%s: %s\n", n,
                   split ? ", every rank its own node" : "", f ? "FAIL" : "ok");
            failed += f != 0;
        }
        test_node_split = 0;
    } else {
        printf("communicators from a unique id: skipped (%s)\n", why);
    }
    int f = sim_run(2, 120, body_timeout, NULL);
    printf("watchdog names the missing peer: %s\n", f ? "FAIL" : "ok");
    failed += f != 0;
    printf("test_gpu_ranks: %s\n", failed ? "FAIL" : "PASS");
    return failed ? 1 : 0;
}
