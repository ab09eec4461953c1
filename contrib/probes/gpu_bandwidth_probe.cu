/*
 * gpu_bandwidth_probe.cu - what a one-shot allreduce over N ranks' buffers
 * on one GPU can reach, and which choices move it: blocks and threads per
 * rank, loads in flight, in place or not, the cache hints of loads and
 * stores, how a rank's blocks split its slice. Run alone, N concurrent
 * kernels on N streams of one process stand in for N ranks; under mpirun
 * (with CUDA MPS), every process is a rank and maps its peers' buffers
 * through CUDA IPC, as dfccl's direct path does.
 *
 *   nvcc -O3 -arch=sm_90 -Isrc/engine/include -Isrc/engine -Isrc/kernels \
 *        -o gpu_bandwidth_probe contrib/probes/gpu_bandwidth_probe.cu \
 *        $(mpicc --showme:incdirs | sed 's/^/-I/; s/ / -I/g') $(mpicc --showme:link)
 *   [mpirun -np N] ./gpu_bandwidth_probe N MiB blocks threads unroll inplace store load layout [chunk_KiB [mover [b2b]]]
 *     unroll 2|4|8; store 0 plain, 1 .cs (evict first), 2 .cg, 3 .wt;
 *     load 0 .cg, 1 .cs, 2 .lu; layout 0 chunks of chunk_KiB dealt to blocks
 *     (the daemon kernel's), 1 one grid-stride loop over the slice;
 *     mover 0 the probe's loop, 1 dfccl's gpu_vecn_reduce (two inputs'
 *     loads in flight, pointers in shared memory, at most 128 registers);
 *     b2b 1: under mpirun, calls back to back as an application makes them
 *     (no refill, no barrier between them; out of place only); b2b 2: one
 *     persistent kernel per rank runs the calls, its blocks meeting the
 *     other ranks' at a counter in rank 0's memory after each call, as the
 *     daemon kernel's direct path does (with mover 1); b2b 3: the same with
 *     one block per SM at most, as the daemon kernel's registers allow
 *   ./gpu_bandwidth_probe copy MiB          device-to-device copy bandwidth
 *
 * PROBE_MPI=1 in the environment (under mpirun, b2b 1-3): after the
 * probe's calls, the same buffers go through MPI_Allreduce 13 times (dfccl
 * when it is selected), then the probe's calls run once more: whether the
 * buffers, the processes or dfccl's presence slow the probe down, or only
 * dfccl's own moves are slow.
 *
 * PROBE_OPEN_BUSY=1 and PROBE_MPI_FIRST=1: how the peers' buffers get
 * mapped (at setup_buffers).
 *
 * PROBE_ALLOC_EXTRA=B: every buffer's allocation is B bytes longer (as
 * dfccl_perf's, one element). PROBE_DUP=1: PROBE_MPI's calls run on a
 * duplicate of MPI_COMM_WORLD (as dfccl_perf's).
 *
 * PROBE_EXPORT=1 in the environment (under mpirun, b2b 1-3): while its
 * kernels run, every rank exports its two buffers (cudaIpcGetMemHandle)
 * every 200 us.
 *
 * PROBE_HISTORY=1 in the environment (under mpirun): before its buffers,
 * every rank first allocates what a dfccl rank has by then (mapped pinned
 * host memory, an 80 MiB region that every peer maps, small state), and
 * rank 0 copies between two 256 MiB buffers it then frees (dfccl_perf's
 * floor measurement): whether that history changes the bandwidth.
 *
 * Each rank r reduces (float sum) the r-th slice of all N inputs and
 * writes it into all N outputs. Prints the mean time of 20 calls after 5
 * warm-ups, and the bandwidth counting 2*N*S bytes (every input read once,
 * every output written once); under mpirun the time of the slowest rank
 * from a barrier to the last rank's end, so it includes one barrier. Checks
 * one element per rank. A measurement tool: not built by make.
 */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

/* dfccl's own movers (option mover 1), compiled as the daemon kernel does */
#define DFCCL_HD __device__
#define DFCCL_LOAD_ACQUIRE(p) (*(p))
#define DFCCL_STORE_RELEASE(p, v) (*(p) = (v))
#include "backends/gpu/gpu_shared.h"
#include "core/reduce.h"
#include "kernels/gpu_movers.cuh"

#define MAXN 8
#define CHECK(x)                                                                      \
    do {                                                                              \
        cudaError_t e_ = (x);                                                         \
        if (e_ != cudaSuccess) {                                                      \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,                 \
                    cudaGetErrorString(e_));                                          \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

typedef struct {
    const uint4 *in[MAXN];
    uint4 *out[MAXN];
    int n, rank, store, load, layout, mover;
    size_t vecs;         /* per rank's vector, 16-byte units */
    size_t chunk_vecs;   /* layout 0 */
} probe_args_t;

__device__ static inline uint4 ld(const uint4 *p, int mode)
{
    return mode == 1 ? __ldcs(p) : mode == 2 ? __ldlu(p) : __ldcg(p);
}

__device__ static inline void st(uint4 *p, uint4 v, int mode)
{
    if (mode == 1) __stcs(p, v);
    else if (mode == 2) __stcg(p, v);
    else if (mode == 3) __stwt(p, v);
    else *p = v;
}

__device__ static inline uint4 add4(uint4 a, uint4 b)
{
    float4 x = *(float4 *)&a, y = *(float4 *)&b, z;
    z.x = x.x + y.x;
    z.y = x.y + y.y;
    z.z = x.z + y.z;
    z.w = x.w + y.w;
    return *(uint4 *)&z;
}

/* One block's share [from, to) of 16-byte vectors: thread-strided, U in flight. */
#define DEFINE_RANGE(U)                                                                \
    __device__ static void range_##U(const probe_args_t *a, size_t from, size_t to)    \
    {                                                                                  \
        size_t i = from + threadIdx.x, step = (size_t)blockDim.x * U;                  \
        for (; i + (U - 1) * blockDim.x < to; i += step) {                             \
            uint4 acc[U], v[U];                                                        \
            _Pragma("unroll") for (int u = 0; u < U; u++)                              \
                acc[u] = ld(a->in[0] + i + u * blockDim.x, a->load);                   \
            for (int k = 1; k < a->n; k++) {                                           \
                _Pragma("unroll") for (int u = 0; u < U; u++)                          \
                    v[u] = ld(a->in[k] + i + u * blockDim.x, a->load);                 \
                _Pragma("unroll") for (int u = 0; u < U; u++) acc[u] = add4(acc[u], v[u]); \
            }                                                                          \
            for (int j = 0; j < a->n; j++)                                             \
                _Pragma("unroll") for (int u = 0; u < U; u++)                          \
                    st(a->out[j] + i + u * blockDim.x, acc[u], a->store);              \
        }                                                                              \
        for (; i < to; i += blockDim.x) {                                              \
            uint4 acc = ld(a->in[0] + i, a->load);                                     \
            for (int k = 1; k < a->n; k++) acc = add4(acc, ld(a->in[k] + i, a->load)); \
            for (int j = 0; j < a->n; j++) st(a->out[j] + i, acc, a->store);           \
        }                                                                              \
    }                                                                                  \
    __global__ void __launch_bounds__(1024) oneshot_##U(probe_args_t a)                \
    {                                                                                  \
        size_t slice = (a.vecs + a.n - 1) / a.n, begin = slice * a.rank;               \
        size_t end = begin + slice < a.vecs ? begin + slice : a.vecs;                  \
        if (a.layout == 0) {                                                           \
            for (size_t c = begin + blockIdx.x * a.chunk_vecs; c < end;                \
                 c += (size_t)gridDim.x * a.chunk_vecs)                                \
                range_##U(&a, c, c + a.chunk_vecs < end ? c + a.chunk_vecs : end);     \
        } else {                                                                       \
            /* grid-stride: block b's threads cover [b*T, b*T+T) of every B*T run */   \
            size_t per = ((end - begin) / gridDim.x + 15) & ~(size_t)15;               \
            size_t from = begin + blockIdx.x * per;                                    \
            size_t to = from + per < end ? from + per : end;                           \
            if (from < to) range_##U(&a, from, to);                                    \
        }                                                                              \
    }
DEFINE_RANGE(2)
DEFINE_RANGE(4)
DEFINE_RANGE(8)

/* One call of layout 0 with dfccl's mover; ins and outs: the block's
 * pointer table in shared memory, as the daemon kernel keeps it. */
__device__ static void slice_dfccl(const probe_args_t *a, char **ins, char **outs)
{
    size_t slice = (a->vecs + a->n - 1) / a->n, begin = slice * a->rank;
    size_t end = begin + slice < a->vecs ? begin + slice : a->vecs;
    for (size_t c = begin + blockIdx.x * a->chunk_vecs; c < end;
         c += (size_t)gridDim.x * a->chunk_vecs) {
        size_t n = c + a->chunk_vecs < end ? a->chunk_vecs : end - c;
        if (threadIdx.x == 0)
            for (int k = 0; k < a->n; k++) {
                ins[k] = (char *)(a->in[k] + c);
                outs[k] = (char *)(a->out[k] + c);
            }
        __syncthreads();
        gpu_vecn_reduce(ins, a->n, outs, a->n, 0, n, DFCCL_FLOAT, DFCCL_OP_SUM);
        __syncthreads();
    }
}

/* dfccl's mover, launched as the daemon kernel is (512 threads at most) */
__global__ void __launch_bounds__(512) oneshot_dfccl(probe_args_t a)
{
    __shared__ char *ins[MAXN], *outs[MAXN];
    slice_dfccl(&a, ins, outs);
}

__global__ void fill(float *p, size_t n, float v)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = v + (float)(i & 7);
}

static double copy_bandwidth(size_t bytes)
{
    void *a, *b;
    cudaEvent_t e0, e1;
    float ms;
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&b, bytes));
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++) CHECK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    CHECK(cudaEventRecord(e0, 0));
    for (int i = 0; i < 10; i++) CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0));
    CHECK(cudaEventRecord(e1, 0));
    CHECK(cudaEventSynchronize(e1));
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    return 2.0 * bytes * 10 / (ms * 1e-3);
}

/* PROBE_HISTORY: the allocations a dfccl rank makes before the application's buffers. */
static void allocation_history(int n, int me)
{
    void *pinned, *state, *region, *a, *b;
    cudaIpcMemHandle_t mine, all[MAXN];
    CHECK(cudaHostAlloc(&pinned, 1 << 20, cudaHostAllocMapped));
    CHECK(cudaMalloc(&state, 4 << 20));
    CHECK(cudaMalloc(&region, 80 << 20));
    CHECK(cudaMemset(region, 0, 80 << 20));
    CHECK(cudaIpcGetMemHandle(&mine, region));
    MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, MPI_COMM_WORLD);
    for (int r = 0; r < n; r++) {
        void *peer;
        if (r != me) CHECK(cudaIpcOpenMemHandle(&peer, all[r], cudaIpcMemLazyEnablePeerAccess));
    }
    if (me == 0) {
        CHECK(cudaMalloc(&a, 256 << 20));
        CHECK(cudaMalloc(&b, 256 << 20));
        CHECK(cudaMemcpy(b, a, 256 << 20, cudaMemcpyDeviceToDevice));
        CHECK(cudaFree(a));
        CHECK(cudaFree(b));
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* A numeric switch from the environment; 0 when unset. */
static long env_long(const char *name)
{
    const char *v = getenv(name);
    return v ? atol(v) : 0;
}

/* PROBE_OPEN_BUSY: a kernel that keeps one block busy until the host sets *stop. */
__global__ void spin_until(volatile int *stop)
{
    while (!*stop) __nanosleep(1000);
}

static double mpi_allreduce_us(float *in, float *out, size_t bytes, int inplace);

typedef struct {
    int n, me, inplace;
    cudaIpcMemHandle_t *all;
    float **in, **out;
} open_job_t;

static void *open_peers(void *arg)
{
    open_job_t *j = (open_job_t *)arg;
    for (int r = 0; r < j->n; r++) {
        if (r == j->me) continue;
        CHECK(cudaIpcOpenMemHandle((void **)&j->in[r], j->all[2 * r],
                                   cudaIpcMemLazyEnablePeerAccess));
        j->out[r] = j->in[r];
        if (!j->inplace)
            CHECK(cudaIpcOpenMemHandle((void **)&j->out[r], j->all[2 * r + 1],
                                       cudaIpcMemLazyEnablePeerAccess));
    }
    return NULL;
}

/* One rank's buffers: its own, and under mpirun its peers' opened through
 * IPC. PROBE_OPEN_BUSY=1: the peers' buffers are opened while a kernel of
 * ours runs, as dfccl's host opens them while its daemon kernel waits for
 * the answer; 2: they are opened by another thread. PROBE_MPI_FIRST=1:
 * MPI_Allreduce runs on the buffers before we open the peers' (dfccl maps
 * them then, and our opens get its mappings). */
static void setup_buffers(int n, int me, int procs, size_t bytes, int inplace, float **in, float **out)
{
    cudaIpcMemHandle_t mine[2], *all = (cudaIpcMemHandle_t *)calloc(2 * (size_t)n, sizeof *all);
    long busy = env_long("PROBE_OPEN_BUSY");
    int *stop = NULL;
    cudaStream_t side;
    size_t extra = (size_t)env_long("PROBE_ALLOC_EXTRA");
    for (int r = 0; r < n; r++) {
        if (procs > 1 && r != me) continue;
        CHECK(cudaMalloc((void **)&in[r], bytes + extra));
        out[r] = in[r];
        if (!inplace) CHECK(cudaMalloc((void **)&out[r], bytes + extra));
    }
    if (procs == 1) {
        free(all);
        return;
    }
    CHECK(cudaIpcGetMemHandle(&mine[0], in[me]));
    CHECK(cudaIpcGetMemHandle(&mine[1], out[me]));
    MPI_Allgather(mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, MPI_COMM_WORLD);
    if (env_long("PROBE_MPI_FIRST")) {
        double us = mpi_allreduce_us(in[me], out[me], bytes, inplace);
        if (me == 0) printf("  first MPI_Allreduce on these buffers: %.1f us\n", us);
    }
    if (busy == 1) {
        CHECK(cudaHostAlloc((void **)&stop, sizeof *stop, cudaHostAllocMapped));
        *stop = 0;
        CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
        spin_until<<<1, 32, 0, side>>>(stop);
        CHECK(cudaGetLastError());
    }
    open_job_t job = {n, me, inplace, all, in, out};
    if (busy == 2) {
        pthread_t th;
        pthread_create(&th, NULL, open_peers, &job);
        pthread_join(th, NULL);
    } else {
        open_peers(&job);
    }
    if (busy == 1) {
        if (cudaStreamQuery(side) != cudaErrorNotReady)
            printf("rank %d: the busy kernel had ended\n", me);
        *(volatile int *)stop = 1;
        CHECK(cudaStreamSynchronize(side));
    }
    free(all);
}

/* b2b 2: `calls` calls in one launch; after each, every block of every rank
 * counts itself in at *meet and waits for all (the direct path's finish). */
__global__ void __launch_bounds__(512) persistent_dfccl(probe_args_t a, int calls,
                                                        unsigned long long *meet, int nblocks_all)
{
    __shared__ char *ins[MAXN], *outs[MAXN];
    for (int call = 0; call < calls; call++) {
        slice_dfccl(&a, ins, outs);
        if (threadIdx.x == 0) {
            unsigned long long want = (unsigned long long)(call + 1) * nblocks_all;
            __threadfence_system();
            atomicAdd(meet, 1ull);
            while (*(volatile unsigned long long *)meet < want) __nanosleep(64);
            __threadfence_system();
        }
        __syncthreads();
    }
}

static void launch(int unroll, int blocks, int threads, cudaStream_t s, probe_args_t a)
{
    if (a.mover == 1) oneshot_dfccl<<<blocks, threads, 0, s>>>(a);
    else if (unroll == 2) oneshot_2<<<blocks, threads, 0, s>>>(a);
    else if (unroll == 8) oneshot_8<<<blocks, threads, 0, s>>>(a);
    else oneshot_4<<<blocks, threads, 0, s>>>(a);
    CHECK(cudaGetLastError());
}

/* Waits for the stream; with PROBE_EXPORT=1 meanwhile exports our two
 * buffers (cudaIpcGetMemHandle) every 200 us, as a dfccl rank does once
 * per call for each of them: whether exporting disturbs running kernels. */
static void wait_stream(cudaStream_t s0, const float *in_me, const float *out_me)
{
    static int export_too = -1;
    cudaIpcMemHandle_t h;

    if (export_too < 0) export_too = env_long("PROBE_EXPORT") != 0;
    while (export_too && cudaStreamQuery(s0) == cudaErrorNotReady) {
        CHECK(cudaIpcGetMemHandle(&h, (void *)in_me));
        CHECK(cudaIpcGetMemHandle(&h, (void *)out_me));
        usleep(200);
    }
    CHECK(cudaStreamSynchronize(s0));
}

/* Under mpirun, b2b 1-3: 20 calls after 5 warm-ups on one stream; the
 * slowest rank's milliseconds for the 20. */
static double calls_back_to_back(probe_args_t a, int b2b, int me, int n, int blocks, int threads,
                                 int unroll, size_t bytes, float *in_me, float *out_me,
                                 cudaStream_t s0)
{
    static unsigned long long *meet = NULL;   /* b2b 2, 3: rank 0's counter, mapped once */
    double total_ms = 0;
    if (b2b >= 2) {
        cudaIpcMemHandle_t h;
        if (meet == NULL) {
            if (me == 0) {
                CHECK(cudaMalloc((void **)&meet, 256));
                CHECK(cudaIpcGetMemHandle(&h, meet));
            }
            MPI_Bcast(&h, (int)sizeof h, MPI_BYTE, 0, MPI_COMM_WORLD);
            if (me != 0)
                CHECK(cudaIpcOpenMemHandle((void **)&meet, h, cudaIpcMemLazyEnablePeerAccess));
        }
        fill<<<264, 512>>>(in_me, bytes / 4, (float)me);
        CHECK(cudaDeviceSynchronize());
        a.rank = me;
        for (int round = 0; round < 2; round++) {   /* 5 warm-up calls, then 20 timed */
            int calls = round == 0 ? 5 : 20;
            if (me == 0) CHECK(cudaMemset(meet, 0, 256));
            CHECK(cudaDeviceSynchronize());
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime(), t, slowest;
            size_t smem = b2b == 3 ? 150 << 10 : 0;   /* two would not fit in an SM */
            CHECK(cudaFuncSetAttribute(persistent_dfccl, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)smem));
            persistent_dfccl<<<blocks, threads, smem, s0>>>(a, calls, meet, blocks * n);
            CHECK(cudaGetLastError());
            wait_stream(s0, in_me, out_me);
            MPI_Barrier(MPI_COMM_WORLD);
            t = (MPI_Wtime() - t0) * 1e3;
            MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            total_ms = slowest;
        }
    } else if (b2b) {
        /* 5 warm-ups, then 20 calls timed together; a peer's next call may
         * begin while we still finish this one, as with MPI_Allreduce */
        fill<<<264, 512>>>(in_me, bytes / 4, (float)me);
        CHECK(cudaDeviceSynchronize());
        a.rank = me;
        for (int it = 0; it < 25; it++) {
            if (it == 5) {
                MPI_Barrier(MPI_COMM_WORLD);
                total_ms = MPI_Wtime();
            }
            launch(unroll, blocks, threads, s0, a);
            wait_stream(s0, in_me, out_me);
            MPI_Barrier(MPI_COMM_WORLD);   /* the collective's own end: all ranks done */
        }
        double t = (MPI_Wtime() - total_ms) * 1e3, slowest;
        MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        total_ms = slowest;
    }
    return total_ms;
}

/* PROBE_MPI: the same buffers through MPI_Allreduce (float sum; whichever
 * collective component serves it, dfccl under --mca coll_dfccl_priority):
 * 3 warm-ups, then the mean of 10 calls, slowest rank, in us. Then the
 * device is synchronized, as an application may: dfccl's daemon kernel has
 * to leave for it to return. */
static double mpi_allreduce_us(float *in, float *out, size_t bytes, int inplace)
{
    int count = (int)(bytes / 4);
    double t0 = 0, t, slowest;
    static MPI_Comm comm = MPI_COMM_NULL;
    if (comm == MPI_COMM_NULL) {
        if (env_long("PROBE_DUP")) MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        else comm = MPI_COMM_WORLD;
    }
    for (int it = 0; it < 13; it++) {
        if (it == 3) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        MPI_Allreduce(inplace ? MPI_IN_PLACE : (const void *)in, out, count, MPI_FLOAT, MPI_SUM,
                      comm);
    }
    t = (MPI_Wtime() - t0) / 10 * 1e6;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    CHECK(cudaDeviceSynchronize());
    return slowest;
}

int main(int argc, char **argv)
{
    int me = 0, procs = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &procs);
    if (argc >= 3 && !strcmp(argv[1], "copy")) {
        size_t bytes = (size_t)atol(argv[2]) << 20;
        if (me == 0)
            printf("copy %zu MiB: %.3f TB/s (read+write)\n", bytes >> 20,
                   copy_bandwidth(bytes) / 1e12);
        MPI_Finalize();
        return 0;
    }
    if (argc < 10) {
        fprintf(stderr, "usage: see the head of the file\n");
        return 2;
    }
    int n = procs > 1 ? procs : atoi(argv[1]), blocks = atoi(argv[3]), threads = atoi(argv[4]);
    int unroll = atoi(argv[5]), inplace = atoi(argv[6]);
    size_t bytes = (size_t)atol(argv[2]) << 20, chunk = (argc > 10 ? (size_t)atol(argv[10]) : 1024) << 10;
    probe_args_t a;
    cudaStream_t s[MAXN];
    cudaEvent_t e0, e1, joined[MAXN];
    float ms;
    float *in[MAXN] = {0}, *out[MAXN] = {0};

    if (n < 1 || n > MAXN || blocks < 1 || threads < 32) return 2;
    memset(&a, 0, sizeof(a));
    a.n = n;
    a.store = atoi(argv[7]);
    a.load = atoi(argv[8]);
    a.layout = atoi(argv[9]);
    a.mover = argc > 11 ? atoi(argv[11]) : 0;
    int b2b = argc > 12 && procs > 1 && !inplace ? atoi(argv[12]) : 0;
    a.vecs = bytes / 16;
    a.chunk_vecs = chunk / 16;
    int history = procs > 1 && env_long("PROBE_HISTORY");
    if (history) allocation_history(n, me);
    setup_buffers(n, me, procs, bytes, inplace, in, out);
    for (int r = 0; r < n; r++) {
        CHECK(cudaStreamCreateWithFlags(&s[r], cudaStreamNonBlocking));
        CHECK(cudaEventCreateWithFlags(&joined[r], cudaEventDisableTiming));
        a.in[r] = (const uint4 *)in[r];
        a.out[r] = (uint4 *)out[r];
    }
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));

    double total_ms = 0, mpi_us = -1, again_us = -1;
    if (b2b) {
        total_ms = calls_back_to_back(a, b2b, me, n, blocks, threads, unroll, bytes, in[me],
                                      out[me], s[0]);
        if (env_long("PROBE_MPI")) {
            mpi_us = mpi_allreduce_us(in[me], out[me], bytes, inplace);
            again_us = calls_back_to_back(a, b2b, me, n, blocks, threads, unroll, bytes, in[me],
                                          out[me], s[0]) / 20 * 1e3;
        }
    }
    for (int it = 0; it < 25 && !b2b; it++) {
        /* in place rewrites the inputs: refill every call so the check holds */
        for (int r = 0; r < n; r++)
            if (procs == 1 || r == me) fill<<<264, 512>>>(in[r], bytes / 4, (float)r);
        CHECK(cudaDeviceSynchronize());
        if (procs > 1) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime(), t, slowest;
            a.rank = me;
            launch(unroll, blocks, threads, s[0], a);
            CHECK(cudaStreamSynchronize(s[0]));
            MPI_Barrier(MPI_COMM_WORLD);
            t = MPI_Wtime() - t0;
            MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            ms = (float)(slowest * 1e3);
        } else {
            CHECK(cudaEventRecord(e0, 0));
            for (int r = 0; r < n; r++) {
                CHECK(cudaStreamWaitEvent(s[r], e0, 0));
                a.rank = r;
                launch(unroll, blocks, threads, s[r], a);
                CHECK(cudaEventRecord(joined[r], s[r]));
                CHECK(cudaStreamWaitEvent(0, joined[r], 0));
            }
            CHECK(cudaEventRecord(e1, 0));
            CHECK(cudaEventSynchronize(e1));
            CHECK(cudaEventElapsedTime(&ms, e0, e1));
        }
        if (it >= 5) total_ms += ms;
    }
    /* element i of every output: sum over r of (r + (i & 7)) */
    long bad = 0, all_bad = 0;
    for (int r = 0; r < n; r++) {
        size_t i = (bytes / 4 / n) * r + 5;
        float got, want = 0;
        if (procs > 1 && r != me) continue;
        for (int q = 0; q < n; q++) want += (float)q + (float)(i & 7);
        CHECK(cudaMemcpy(&got, out[(r + 1) % n] + i, 4, cudaMemcpyDeviceToHost));
        bad += got != want;
    }
    MPI_Allreduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    double mean_us = total_ms / 20 * 1e3;
    if (me == 0)
        printf("%s%s%s n %d %zu MiB blocks %d threads %d unroll %d %s store %d load %d layout %d chunk %zu KiB mover %d:"
               " %.1f us, %.3f TB/s%s\n", procs > 1 ? "procs" : "streams", history ? " history" : "", b2b == 3 ? " persistent-1/SM" : b2b == 2 ? " persistent" : b2b ? " b2b" : "",
               n, bytes >> 20, blocks, threads, unroll, inplace ? "in-place" : "out-of-place", a.store,
               a.load, a.layout, chunk >> 10, a.mover, mean_us, 2.0 * n * bytes / (mean_us * 1e-6) / 1e12,
               all_bad ? " WRONG" : "");
    if (me == 0 && mpi_us >= 0)
        printf("  then MPI_Allreduce on these buffers: %.1f us, %.3f TB/s; then the probe again: %.1f us\n",
               mpi_us, 2.0 * n * bytes / (mpi_us * 1e-6) / 1e12, again_us);
    MPI_Finalize();
    return all_bad ? 1 : 0;
}
