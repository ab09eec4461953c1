/*
 * daemon_kernel.cu - the GPU daemon: a persistent kernel whose block c runs
 * channel c of every collective the host submits.
 *
 * Thread 0 of a block is the scheduler: it admits submissions, walks the
 * block's active list in the global order with the policy of sched_policy.h, and
 * checks whether the current collective's next primitive can run (its peer
 * is ready). Every thread then moves that primitive's data; thread 0
 * publishes the counters. A primitive that would wait past its budget gives
 * the block to another collective; what it leaves behind is the task's saved
 * context in global memory (exec: step, round, offset; one-shot: phase).
 *
 * Three algorithms:
 * - ring: the engine's plan (plan.c) through per-channel FIFOs in device
 *   memory shared by CUDA IPC, every channel moving its part of each step;
 * - one-shot, for small messages: each rank writes its contribution into
 *   every peer's inbox, then reduces (or gathers) all of them in rank order,
 *   so every rank computes bit-identical results;
 * - direct, for large messages: every rank reads and writes its peers'
 *   buffers, mapped for the call (below).
 *
 * The kernel leaves on its own when it has had nothing to do, or when
 * nothing moved, for a bounded time; its state stays in global memory and
 * the host launches it again when work is pending. So the application's
 * cudaDeviceSynchronize or cudaFree never waits for a peer forever.
 */
#include <cuda_runtime.h>
#include <stdint.h>

#define DFCCL_HD __device__
#define DFCCL_LOAD_ACQUIRE(p) gpu_load_acquire(p)
#define DFCCL_STORE_RELEASE(p, v) gpu_store_release((p), (v))

__device__ static inline uint64_t gpu_load_acquire(volatile uint64_t *p)
{
    uint64_t v = *p;
    __threadfence_system();
    return v;
}

__device__ static inline void gpu_store_release(volatile uint64_t *p, uint64_t v)
{
    __threadfence_system();
    *p = v;
}

#include "gpu_shared.h"
#include "kernels.h"
#include "reduce.h"
#include "sched_policy.h"

__device__ static inline uint64_t gpu_now_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* ---- data movers: all threads of the block ------------------------------ */

/* 16-byte vectors each thread keeps in flight: enough outstanding loads for
 * a few dozen blocks to approach the HBM's bandwidth. */
#define GPU_UNROLL 4

__device__ static inline int gpu_aligned16(const void *p)
{
    return ((uintptr_t)p & 15) == 0;
}

/* dst and out (either may be NULL) receive bytes from `from`. Loads bypass
 * L1: FIFO slots and inboxes are rewritten by other processes. */
__device__ static void gpu_copy(char *dst, char *out, const char *from, size_t bytes)
{
    size_t i = threadIdx.x, vecs = 0;

    if (gpu_aligned16(from) && (!dst || gpu_aligned16(dst)) && (!out || gpu_aligned16(out))) {
        const uint4 *f = (const uint4 *)from;
        uint4 *d = (uint4 *)dst, *o = (uint4 *)out;
        size_t step = (size_t)blockDim.x * GPU_UNROLL;
        vecs = bytes / 16;
        for (; i + (GPU_UNROLL - 1) * blockDim.x < vecs; i += step) {
            uint4 v[GPU_UNROLL];
            _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++) v[u] = __ldcg(f + i + u * blockDim.x);
            _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++) {
                if (d) d[i + u * blockDim.x] = v[u];
                if (o) o[i + u * blockDim.x] = v[u];
            }
        }
        for (; i < vecs; i += blockDim.x) {
            uint4 v = __ldcg(f + i);
            if (d) d[i] = v;
            if (o) o[i] = v;
        }
        i = vecs * 16 + threadIdx.x;
    }
    for (; i < bytes; i += blockDim.x) {
        char v = ((const volatile char *)from)[i];
        if (dst) dst[i] = v;
        if (out) out[i] = v;
    }
}

/* A local copy whose ranges may overlap (reduce-scatter in place moves its
 * result to the front: dst < src). Every pass reads its whole piece before
 * anyone writes, and later pieces lie beyond what earlier ones wrote. */
__device__ static void gpu_move_overlapping(char *dst, const char *src, size_t bytes)
{
    size_t piece = (size_t)blockDim.x;

    for (size_t base = 0; base < bytes; base += piece) {
        size_t i = base + threadIdx.x;
        char v = 0;
        if (i < bytes) v = ((const volatile char *)src)[i];
        __syncthreads();
        if (i < bytes) dst[i] = v;
        __syncthreads();
    }
}

/* Reductions 16 bytes at a time, GPU_UNROLL vectors in flight per thread
 * (loads first, so the memory system has enough requests to reach full
 * bandwidth): r = in OP src, stored to dst and/or out. The scalar twins
 * (volatile loads: the data may come from another process) serve what is
 * not 16-byte aligned. */
#define GPU_VEC_REDUCE(DT, T, U, OPN, OPM)                                                  \
    __device__ static inline uint4 gpu_op16_##DT##_##OPN(uint4 a, uint4 b)                   \
    {                                                                                         \
        uint4 r;                                                                              \
        const T *x = (const T *)&a, *y = (const T *)&b;                                       \
        T *z = (T *)&r;                                                                       \
        _Pragma("unroll") for (int k = 0; k < (int)(16 / sizeof(T)); k++)                     \
            z[k] = OPM(T, U, x[k], y[k]);                                                     \
        return r;                                                                             \
    }                                                                                         \
    __device__ static void gpu_vec_##DT##_##OPN(const uint4 *in, const uint4 *src, uint4 *dst, \
                                                uint4 *out, size_t n)                         \
    {                                                                                         \
        size_t step = (size_t)blockDim.x * GPU_UNROLL, i = threadIdx.x;                       \
        for (; i + (GPU_UNROLL - 1) * blockDim.x < n; i += step) {                            \
            uint4 a[GPU_UNROLL], b[GPU_UNROLL];                                               \
            _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++) {                          \
                a[u] = __ldcg(in + i + u * blockDim.x);                                       \
                b[u] = __ldcg(src + i + u * blockDim.x);                                      \
            }                                                                                 \
            _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++) {                          \
                uint4 r = gpu_op16_##DT##_##OPN(a[u], b[u]);                                  \
                if (dst) dst[i + u * blockDim.x] = r;                                         \
                if (out) out[i + u * blockDim.x] = r;                                         \
            }                                                                                 \
        }                                                                                     \
        for (; i < n; i += blockDim.x) {                                                      \
            uint4 r = gpu_op16_##DT##_##OPN(__ldcg(in + i), __ldcg(src + i));                 \
            if (dst) dst[i] = r;                                                              \
            if (out) out[i] = r;                                                              \
        }                                                                                     \
    }                                                                                         \
    /* direct: element-wise over nin inputs in rank order, into nout outputs;                \
     * two inputs' loads in flight together */                                               \
    __device__ static void gpu_vecn_##DT##_##OPN(char *const *ins, int nin, char *const *outs, \
                                                 int nout, size_t at, size_t n)               \
    {                                                                                         \
        size_t step = (size_t)blockDim.x * GPU_UNROLL, i = threadIdx.x;                       \
        (void)at;                                                                             \
        for (; i + (GPU_UNROLL - 1) * blockDim.x < n; i += step) {                            \
            uint4 a[GPU_UNROLL], b[GPU_UNROLL], c[GPU_UNROLL];                                \
            const uint4 *p = (const uint4 *)ins[0], *q;                                       \
            int k = 1;                                                                        \
            _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++) a[u] = __ldcg(p + i + u * blockDim.x); \
            for (; k + 1 < nin; k += 2) {                                                     \
                p = (const uint4 *)ins[k];                                                    \
                q = (const uint4 *)ins[k + 1];                                                \
                _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++) {                      \
                    b[u] = __ldcg(p + i + u * blockDim.x);                                    \
                    c[u] = __ldcg(q + i + u * blockDim.x);                                    \
                }                                                                             \
                _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++)                        \
                    a[u] = gpu_op16_##DT##_##OPN(gpu_op16_##DT##_##OPN(a[u], b[u]), c[u]);    \
            }                                                                                 \
            if (k < nin) {                                                                    \
                p = (const uint4 *)ins[k];                                                    \
                _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++) b[u] = __ldcg(p + i + u * blockDim.x); \
                _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++)                        \
                    a[u] = gpu_op16_##DT##_##OPN(a[u], b[u]);                                 \
            }                                                                                 \
            for (int j = 0; j < nout; j++) {                                                  \
                uint4 *o = (uint4 *)outs[j];                                                  \
                _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++) o[i + u * blockDim.x] = a[u]; \
            }                                                                                 \
        }                                                                                     \
        for (; i < n; i += blockDim.x) {                                                      \
            uint4 a = __ldcg((const uint4 *)ins[0] + i);                                      \
            for (int k = 1; k < nin; k++)                                                     \
                a = gpu_op16_##DT##_##OPN(a, __ldcg((const uint4 *)ins[k] + i));              \
            for (int j = 0; j < nout; j++) ((uint4 *)outs[j])[i] = a;                         \
        }                                                                                     \
    }                                                                                         \
    __device__ static void gpu_scan_##DT##_##OPN(char *const *ins, int nin, char *const *outs, \
                                                 int nout, size_t at, size_t n)               \
    {                                                                                         \
        for (size_t i = threadIdx.x; i < n; i += blockDim.x) {                                \
            T a = ((const volatile T *)(ins[0] + at))[i];                                     \
            for (int k = 1; k < nin; k++) {                                                   \
                T y = ((const volatile T *)(ins[k] + at))[i];                                 \
                a = OPM(T, U, a, y);                                                          \
            }                                                                                 \
            for (int j = 0; j < nout; j++) ((T *)(outs[j] + at))[i] = a;                      \
        }                                                                                     \
    }                                                                                         \
    __device__ static void gpu_sca_##DT##_##OPN(const void *in_, const void *src_, void *dst_, \
                                                void *unused, size_t n)                       \
    {                                                                                         \
        const volatile T *in = (const volatile T *)in_, *src = (const volatile T *)src_;      \
        T *dst = (T *)dst_;                                                                   \
        (void)unused;                                                                         \
        for (size_t i = threadIdx.x; i < n; i += blockDim.x) {                                \
            T x = in[i], y = src[i];                                                          \
            dst[i] = OPM(T, U, x, y);                                                         \
        }                                                                                     \
    }
#define GPU_VEC_INT(DT, T, U)                                                                 \
    GPU_VEC_REDUCE(DT, T, U, SUM, DFCCL_R_SUM) GPU_VEC_REDUCE(DT, T, U, PROD, DFCCL_R_PROD)   \
    GPU_VEC_REDUCE(DT, T, U, MIN, DFCCL_R_MIN) GPU_VEC_REDUCE(DT, T, U, MAX, DFCCL_R_MAX)     \
    GPU_VEC_REDUCE(DT, T, U, LAND, DFCCL_R_LAND) GPU_VEC_REDUCE(DT, T, U, LOR, DFCCL_R_LOR)   \
    GPU_VEC_REDUCE(DT, T, U, LXOR, DFCCL_R_LXOR) GPU_VEC_REDUCE(DT, T, U, BAND, DFCCL_R_BAND) \
    GPU_VEC_REDUCE(DT, T, U, BOR, DFCCL_R_BOR) GPU_VEC_REDUCE(DT, T, U, BXOR, DFCCL_R_BXOR)
#define GPU_VEC_FLOAT(DT, T, U)                                                               \
    GPU_VEC_REDUCE(DT, T, U, SUM, DFCCL_R_SUM) GPU_VEC_REDUCE(DT, T, U, PROD, DFCCL_R_PROD)   \
    GPU_VEC_REDUCE(DT, T, U, MIN, DFCCL_R_MIN) GPU_VEC_REDUCE(DT, T, U, MAX, DFCCL_R_MAX)
DFCCL_FOREACH_INT_TYPE(GPU_VEC_INT)
DFCCL_FOREACH_FLOAT_TYPE(GPU_VEC_FLOAT)
GPU_VEC_REDUCE(DFCCL_BOOL, uint8_t, uint8_t, LAND, DFCCL_R_LAND)
GPU_VEC_REDUCE(DFCCL_BOOL, uint8_t, uint8_t, LOR, DFCCL_R_LOR)
GPU_VEC_REDUCE(DFCCL_BOOL, uint8_t, uint8_t, LXOR, DFCCL_R_LXOR)
GPU_VEC_REDUCE(DFCCL_BYTE, uint8_t, uint8_t, BAND, DFCCL_R_BAND)
GPU_VEC_REDUCE(DFCCL_BYTE, uint8_t, uint8_t, BOR, DFCCL_R_BOR)
GPU_VEC_REDUCE(DFCCL_BYTE, uint8_t, uint8_t, BXOR, DFCCL_R_BXOR)

/* Returns 0 for a (type, op) the engine does not carry (never submitted).
 * PREFIX: gpu_vec (n 16-byte vectors) or gpu_sca (n elements, dst only). */
#define GPU_DEFINE_DISPATCH(NAME, PREFIX, PT, QT)                                         \
__device__ static int NAME(PT in, PT src, QT dst, QT out, size_t n, dfccl_dtype_t dtype,    \
                           dfccl_op_t op)                                                  \
{                                                                                          \
    GPU_DISPATCH_BODY(PREFIX)                                                              \
}
#define GPU_DISPATCH_BODY(PREFIX)                                                          \
    switch (dtype) {                                                                       \
    DFCCL_FOREACH_INT_TYPE(GPU_INT_CASES_##PREFIX)                                         \
    DFCCL_FOREACH_FLOAT_TYPE(GPU_FLOAT_CASES_##PREFIX)                                     \
    case DFCCL_BOOL:                                                                       \
        switch (op) {                                                                      \
        GPU_CASE_##PREFIX(DFCCL_BOOL, LAND) GPU_CASE_##PREFIX(DFCCL_BOOL, LOR)            \
        GPU_CASE_##PREFIX(DFCCL_BOOL, LXOR)                                                \
        default: return 0;                                                                 \
        }                                                                                  \
    case DFCCL_BYTE:                                                                       \
        switch (op) {                                                                      \
        GPU_CASE_##PREFIX(DFCCL_BYTE, BAND) GPU_CASE_##PREFIX(DFCCL_BYTE, BOR)            \
        GPU_CASE_##PREFIX(DFCCL_BYTE, BXOR)                                                \
        default: return 0;                                                                 \
        }                                                                                  \
    default:                                                                               \
        return 0;                                                                          \
    }
#define GPU_CASE_gpu_vec(DT, OP) case DFCCL_OP_##OP: gpu_vec_##DT##_##OP(in, src, dst, out, n); return 1;
#define GPU_CASE_gpu_sca(DT, OP) case DFCCL_OP_##OP: gpu_sca_##DT##_##OP(in, src, dst, out, n); return 1;
#define GPU_CASE_gpu_vecn(DT, OP) \
    case DFCCL_OP_##OP: gpu_vecn_##DT##_##OP(ins, nin, outs, nout, at, n); return 1;
#define GPU_CASE_gpu_scan(DT, OP) \
    case DFCCL_OP_##OP: gpu_scan_##DT##_##OP(ins, nin, outs, nout, at, n); return 1;
#define GPU_INT_CASES_GEN(C, DT)                                                           \
    case DT:                                                                               \
        switch (op) {                                                                      \
        C(DT, SUM) C(DT, PROD) C(DT, MIN) C(DT, MAX) C(DT, LAND) C(DT, LOR) C(DT, LXOR)   \
        C(DT, BAND) C(DT, BOR) C(DT, BXOR)                                                 \
        default: return 0;                                                                 \
        }
#define GPU_FLOAT_CASES_GEN(C, DT)                                                         \
    case DT:                                                                               \
        switch (op) {                                                                      \
        C(DT, SUM) C(DT, PROD) C(DT, MIN) C(DT, MAX)                                       \
        default: return 0;                                                                 \
        }
#define GPU_INT_CASES_gpu_vec(DT, T, U) GPU_INT_CASES_GEN(GPU_CASE_gpu_vec, DT)
#define GPU_INT_CASES_gpu_sca(DT, T, U) GPU_INT_CASES_GEN(GPU_CASE_gpu_sca, DT)
#define GPU_FLOAT_CASES_gpu_vec(DT, T, U) GPU_FLOAT_CASES_GEN(GPU_CASE_gpu_vec, DT)
#define GPU_FLOAT_CASES_gpu_sca(DT, T, U) GPU_FLOAT_CASES_GEN(GPU_CASE_gpu_sca, DT)
#define GPU_INT_CASES_gpu_vecn(DT, T, U) GPU_INT_CASES_GEN(GPU_CASE_gpu_vecn, DT)
#define GPU_INT_CASES_gpu_scan(DT, T, U) GPU_INT_CASES_GEN(GPU_CASE_gpu_scan, DT)
#define GPU_FLOAT_CASES_gpu_vecn(DT, T, U) GPU_FLOAT_CASES_GEN(GPU_CASE_gpu_vecn, DT)
#define GPU_FLOAT_CASES_gpu_scan(DT, T, U) GPU_FLOAT_CASES_GEN(GPU_CASE_gpu_scan, DT)
GPU_DEFINE_DISPATCH(gpu_vec_reduce, gpu_vec, const uint4 *, uint4 *)
GPU_DEFINE_DISPATCH(gpu_sca_reduce, gpu_sca, const void *, void *)

/* Over nin inputs into nout outputs: n 16-byte vectors (gpu_vecn), or n
 * elements from byte `at` on (gpu_scan). */
#define GPU_DEFINE_DISPATCH_N(NAME, PREFIX)                                                \
__device__ static int NAME(char *const *ins, int nin, char *const *outs, int nout, size_t at, \
                           size_t n, dfccl_dtype_t dtype, dfccl_op_t op)                   \
{                                                                                          \
    GPU_DISPATCH_BODY(PREFIX)                                                              \
}
GPU_DEFINE_DISPATCH_N(gpu_vecn_reduce, gpu_vecn)
GPU_DEFINE_DISPATCH_N(gpu_scan_reduce, gpu_scan)


/* target = in OP src over count elements; target is dst, else out; out gets
 * a copy when both are wanted. */
__device__ static void gpu_reduce(char *dst, char *out, const char *in, const char *src,
                                  size_t count, size_t esize, dfccl_dtype_t dtype, dfccl_op_t op)
{
    size_t bytes = count * esize, vec_bytes = 0;
    char *target = dst ? dst : out;

    if (gpu_aligned16(in) && gpu_aligned16(src) && gpu_aligned16(target) &&
        (!dst || !out || gpu_aligned16(out))) {
        vec_bytes = bytes & ~(size_t)15;
        gpu_vec_reduce((const uint4 *)in, (const uint4 *)src, (uint4 *)dst, (uint4 *)out,
                       vec_bytes / 16, dtype, op);
    }
    if (vec_bytes < bytes) {
        size_t done = vec_bytes / esize;
        gpu_sca_reduce(in + vec_bytes, src + vec_bytes, target + vec_bytes, NULL, count - done,
                       dtype, op);
        if (dst && out) {
            __syncthreads();
            gpu_copy(NULL, out + vec_bytes, dst + vec_bytes, bytes - vec_bytes);
        }
    }
}

/* One ring slice: exactly what exec_host.c does on the host. */
__device__ static void gpu_slice_move(const dfccl_exec_t *x, const dfccl_slice_t *s)
{
    size_t bytes = s->count * x->esize;

    if (s->in && s->reduce) {
        gpu_reduce(s->dst, s->out, s->in, s->src, s->count, x->esize, x->dtype, x->op);
    } else if (s->in) {
        gpu_copy(s->dst, s->out, s->in, bytes);
    } else if (s->out) {
        gpu_copy(s->dst != s->src ? s->dst : NULL, s->out, s->src, bytes);
    } else if (s->dst && s->dst != s->src) {
        gpu_move_overlapping(s->dst, s->src, bytes);
    }
}

/* ---- one-shot for small messages ------------------------------------------ */

__device__ static inline dfccl_gpu_inbox_ctrl_t *gpu_inbox_ctrl(const dfccl_gpu_comm_dev_t *c, int r)
{
    return (dfccl_gpu_inbox_ctrl_t *)c->inbox[r];
}

__device__ static inline char *gpu_inbox_slot(const dfccl_gpu_comm_dev_t *c, int owner, int from)
{
    return c->inbox[owner] + DFCCL_GPU_INBOX_DATA_OFFSET + (size_t)from * DFCCL_GPU_SMALL_BYTES;
}

__device__ static uint64_t gpu_rs_displ(const dfccl_gpu_task_t *t, int r)
{
    uint64_t d = 0;
    for (int i = 0; i < r; i++) d += t->desc.rs_counts[i];
    return d;
}

/* Thread 0: may the one-shot's current phase run? Records the peer it waits for. */
__device__ static int gpu_oneshot_ready(dfccl_gpu_task_t *t, const dfccl_gpu_comm_dev_t *c,
                                        uint32_t *peer)
{
    const dfccl_gpu_inbox_ctrl_t *mine = gpu_inbox_ctrl(c, c->rank);

    for (int p = 0; p < c->size; p++) {
        if (p == c->rank) continue;
        uint64_t have = t->phase == 0 ? mine->acked[p] : mine->arrived[p];
        uint64_t need = t->phase == 0 ? t->small_k - 1 : t->small_k;
        if (have < need) {
            *peer = (uint32_t)p;
            t->exec.waiting = t->phase == 0 ? DFCCL_WAIT_SEND : DFCCL_WAIT_RECV;
            return 0;
        }
    }
    __threadfence_system();   /* acquire: the peers' data and slots are ours now */
    t->exec.waiting = DFCCL_WAIT_NONE;
    return 1;
}

/* All threads: phase 0 writes our contribution into every inbox (ours too,
 * so that phase 1 reads all inputs alike and in-place inputs are saved). */
__device__ static void gpu_oneshot_send(const dfccl_gpu_task_t *t, const dfccl_gpu_comm_dev_t *c)
{
    const dfccl_exec_t *x = &t->exec;
    const char *in = x->sendbuf ? x->sendbuf : x->recvbuf;

    for (int p = 0; p < c->size; p++) {
        char *slot = gpu_inbox_slot(c, p, c->rank);
        switch (t->type) {
        case DFCCL_COLL_ALLREDUCE:
            gpu_copy(slot, NULL, in, t->desc.count * x->esize);
            break;
        case DFCCL_COLL_ALLGATHER:
            gpu_copy(slot, NULL, x->sendbuf ? x->sendbuf : x->recvbuf + (size_t)c->rank *
                     t->desc.count * x->esize, t->desc.count * x->esize);
            break;
        default:
            gpu_copy(slot, NULL, in + gpu_rs_displ(t, p) * x->esize, t->desc.rs_counts[p] * x->esize);
            break;
        }
    }
}

/* All threads: phase 1 combines the inbox slots in rank order. */
__device__ static void gpu_oneshot_recv(const dfccl_gpu_task_t *t, const dfccl_gpu_comm_dev_t *c)
{
    const dfccl_exec_t *x = &t->exec;
    int me = c->rank, n = c->size;

    if (t->type == DFCCL_COLL_ALLGATHER) {
        for (int p = 0; p < n; p++)
            gpu_copy(x->recvbuf + (size_t)p * t->desc.count * x->esize, NULL, gpu_inbox_slot(c, me, p),
                     t->desc.count * x->esize);
        return;
    }
    size_t count = t->type == DFCCL_COLL_ALLREDUCE ? t->desc.count : t->desc.rs_counts[me];
    if (n == 1) {
        gpu_copy(x->recvbuf, NULL, gpu_inbox_slot(c, me, 0), count * x->esize);
        return;
    }
    /* each thread owns its elements through every pass: no barrier needed */
    gpu_sca_reduce(gpu_inbox_slot(c, me, 0), gpu_inbox_slot(c, me, 1), x->recvbuf, NULL, count,
                   x->dtype, x->op);
    for (int p = 2; p < n; p++)
        gpu_sca_reduce(x->recvbuf, gpu_inbox_slot(c, me, p), x->recvbuf, NULL, count, x->dtype,
                       x->op);
}

/* Thread 0, after a phase moved: tell the peers. */
__device__ static void gpu_oneshot_publish(dfccl_gpu_task_t *t, const dfccl_gpu_comm_dev_t *c)
{
    __threadfence_system();
    for (int p = 0; p < c->size; p++) {
        if (p == c->rank) continue;
        dfccl_gpu_inbox_ctrl_t *theirs = gpu_inbox_ctrl(c, p);
        if (t->phase == 0) theirs->arrived[c->rank] = t->small_k;
        else theirs->acked[c->rank] = t->small_k;
    }
    t->phase++;
}

/* ---- direct, for large messages ------------------------------------------- */
/*
 * Every rank maps its peers' buffers (CUDA IPC, per call; the host caches
 * the mappings). Channel c of rank r owns some chunks: for allreduce chunks
 * of the vector, which it reduces from every rank's input and writes into
 * every rank's output; for allgather chunks of its own block, copied into
 * every output; for reduce-scatter chunks of its own block, reduced into
 * its own output. Nobody else reads or writes an owned chunk, so in-place
 * buffers are safe, and each element is computed once: every rank gets the
 * same bits. Memory traffic is the floor's: inputs read once, outputs
 * written once.
 */
enum {
    DIRECT_PUBLISH = 0,   /* channel 0: our buffers onto our board */
    DIRECT_GATHER,        /* channel 0: the peers' entries, handed to our host */
    DIRECT_OPENED,        /* channel 0: our host mapped them (or could not) */
    DIRECT_AGREE,         /* channel 0: could every rank map everyone's? */
    DIRECT_TABLE,         /* every channel: channel 0's pointers */
    DIRECT_MOVE,
    DIRECT_FINISH,        /* every channel: the peers are done with our buffers */
    DIRECT_DONE
};

/* All threads: from one source into nout outputs (allgather). */
__device__ static void gpu_copy_many(const char *from, char *const *outs, int nout, size_t bytes,
                                     int aligned)
{
    size_t i = threadIdx.x, vecs = 0;

    if (aligned) {
        const uint4 *f = (const uint4 *)from;
        size_t step = (size_t)blockDim.x * GPU_UNROLL;
        vecs = bytes / 16;
        for (; i + (GPU_UNROLL - 1) * blockDim.x < vecs; i += step) {
            uint4 v[GPU_UNROLL];
            _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++) v[u] = __ldcg(f + i + u * blockDim.x);
            for (int j = 0; j < nout; j++) {
                uint4 *o = (uint4 *)outs[j];
                _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++) o[i + u * blockDim.x] = v[u];
            }
        }
        for (; i < vecs; i += blockDim.x) {
            uint4 v = __ldcg(f + i);
            for (int j = 0; j < nout; j++) ((uint4 *)outs[j])[i] = v;
        }
        i = vecs * 16 + threadIdx.x;
    }
    for (; i < bytes; i += blockDim.x) {
        char v = ((const volatile char *)from)[i];
        for (int j = 0; j < nout; j++) outs[j][i] = v;
    }
}

/* All threads: one chunk of a direct collective (ins and outs point at it). */
__device__ static void gpu_direct_move(char *const *ins, int nin, char *const *outs, int nout,
                                       size_t count, size_t esize, dfccl_dtype_t dtype,
                                       dfccl_op_t op, int reduce)
{
    size_t bytes = count * esize, vec_bytes = 0;
    int aligned = 1;

    for (int k = 0; k < nin; k++) aligned &= gpu_aligned16(ins[k]);
    for (int j = 0; j < nout; j++) aligned &= gpu_aligned16(outs[j]);
    if (!reduce) {
        gpu_copy_many(ins[0], outs, nout, bytes, aligned);
        return;
    }
    if (aligned) {
        vec_bytes = bytes & ~(size_t)15;
        gpu_vecn_reduce(ins, nin, outs, nout, 0, vec_bytes / 16, dtype, op);
    }
    if (vec_bytes < bytes)
        gpu_scan_reduce(ins, nin, outs, nout, vec_bytes, (bytes - vec_bytes) / esize, dtype, op);
}

__device__ static inline dfccl_gpu_board_t *gpu_board(const dfccl_gpu_comm_dev_t *c, int r)
{
    return (dfccl_gpu_board_t *)(c->inbox[r] + DFCCL_GPU_BOARD_OFFSET);
}

__device__ static inline dfccl_gpu_board_entry_t *gpu_board_entry(const dfccl_gpu_comm_dev_t *c,
                                                                  int r, uint64_t k)
{
    return &gpu_board(c, r)->entry[k % DFCCL_GPU_BOARD_DEPTH];
}

/* What this channel owns, in chunks of *grain elements: chunk numbers
 * owner, owner + owners, owner + 2 * owners, ... of the whole vector for
 * allreduce (owner = rank * parts + channel), of our own block for
 * allgather and reduce-scatter (owner = channel). Interleaved rather than
 * one range each, so that all blocks of all ranks work in a window of
 * owners chunks at a time, over fewer pages of the 2N buffers (measured:
 * a 256 MiB allreduce out of place at 4 ranks took 1169 us with one range
 * per channel, 883 us interleaved; chunks of 128 KiB to 1 MiB made little
 * difference). Chunks are cut on 16 bytes. */
__device__ static void gpu_direct_layout(const dfccl_gpu_env_t *env, const dfccl_gpu_task_t *t,
                                         const dfccl_gpu_comm_dev_t *c, uint64_t *total,
                                         uint64_t *owner, uint64_t *owners, uint64_t *chunk)
{
    const dfccl_gpu_desc_t *d = &t->desc;
    uint64_t grain = d->esize < 16 ? 16 / d->esize : 1, per, most;

    *total = t->type == DFCCL_COLL_REDUCE_SCATTER ? d->rs_counts[c->rank] : d->count;
    *owners = t->nparts;
    *owner = blockIdx.x;
    if (t->type == DFCCL_COLL_ALLREDUCE) {
        *owners *= (uint64_t)c->size;
        *owner += (uint64_t)c->rank * t->nparts;
    }
    per = (*total + *owners - 1) / *owners;
    per = (per + grain - 1) / grain * grain;
    most = env->direct_chunk_bytes / d->esize / grain * grain;
    *chunk = per < most ? per : most > grain ? most : grain;
}

/* ---- the scheduler (thread 0) --------------------------------------------- */

typedef enum {
    CMD_NONE,          /* nothing for the other threads this round */
    CMD_QUIT,
    CMD_ADMIT,         /* copy new submissions into this block's tasks */
    CMD_RING_SLICE,
    CMD_ONESHOT_SEND,
    CMD_ONESHOT_RECV,
    CMD_DIRECT_GATHER,  /* the peers' board entries into our host's request */
    CMD_DIRECT_TABLE,   /* our host's pointers into the channels' table */
    CMD_DIRECT_MOVE
} gpu_cmd_t;

typedef struct gpu_shared {
    gpu_cmd_t     cmd;
    int           slot;
    uint32_t      nsteps;
    dfccl_slice_t slice;
    struct {                    /* CMD_DIRECT_MOVE: the chunk's inputs and outputs */
        char    *ins[DFCCL_GPU_MAX_RANKS];
        char    *outs[DFCCL_GPU_MAX_RANKS];
        int      nin, nout;
        uint64_t count;
    } direct;
} gpu_shared_t;

/* Thread 0's state within one launch. */
typedef struct gpu_sched {
    int      turn;            /* index in the active list of the running turn, or -1 */
    int      pos;             /* where the pass goes on */
    int      first_of_pass;
    uint64_t turn_budget, turn_blocked_since;
    int      turn_moved;
    uint32_t relax_ns;
    uint32_t wait_peer;
} gpu_sched_t;

__device__ static dfccl_gpu_task_t *gpu_task(const dfccl_gpu_env_t *env, int slot)
{
    return &env->state->tasks[slot][blockIdx.x];
}

/* 16 bytes of host memory in one uncached load (the host rewrites them). */
__device__ static inline ulonglong2 gpu_host_load16(const void *p)
{
    uint4 v = __ldcv((const uint4 *)p);
    ulonglong2 r;
    r.x = (unsigned long long)v.x | (unsigned long long)v.y << 32;
    r.y = (unsigned long long)v.z | (unsigned long long)v.w << 32;
    return r;
}

/* Submissions published to this block (x) and the stop flag (y): block 0
 * reads the host's words, the others block 0's mirror in device memory
 * (stop reaches them through quit_launch). */
__device__ static inline ulonglong2 gpu_ctrl_read(const dfccl_gpu_env_t *env)
{
    if (blockIdx.x == 0) return gpu_host_load16(env->ctrl);
    ulonglong2 v;
    v.x = env->state->sq_mirror;
    v.y = 0;
    __threadfence();   /* acquire: block 0's copies before the mirror */
    return v;
}

/* Where this block reads submission entries: block 0 from host memory, the
 * others from block 0's copies. */
__device__ static inline const dfccl_gpu_desc_t *gpu_desc_src(const dfccl_gpu_env_t *env, int slot)
{
    return blockIdx.x == 0 ? &env->descs[slot] : &env->state->descs[slot];
}

/* Thread 0: where the next chunk of this channel's piece comes from and goes. */
__device__ static void gpu_direct_chunk(const dfccl_gpu_env_t *env, const dfccl_gpu_task_t *t,
                                        int slot, const dfccl_gpu_comm_dev_t *c, gpu_shared_t *sh)
{
    const dfccl_gpu_desc_t *d = &t->desc;
    /* volatile: the table was written by block 0; past L1 */
    const volatile dfccl_gpu_direct_tab_t *tab = &env->state->direct[slot];
    uint64_t total, owner, owners, chunk, e = d->esize, at;
    int me = c->rank, n = c->size;

    /* exec.offset counts the chunks this channel has moved */
    gpu_direct_layout(env, t, c, &total, &owner, &owners, &chunk);
    at = (owner + t->exec.offset * owners) * chunk;
    sh->direct.count = chunk < total - at ? chunk : total - at;
    sh->direct.nout = 0;
    switch (t->type) {
    case DFCCL_COLL_ALLREDUCE:
        for (int q = 0; q < n; q++) {
            sh->direct.ins[q] = tab->in[q] + at * e;
            sh->direct.outs[q] = tab->out[q] + at * e;
        }
        sh->direct.nin = sh->direct.nout = n;
        break;
    case DFCCL_COLL_ALLGATHER: {
        char *from = tab->in[me] + at * e;
        sh->direct.ins[0] = from;
        sh->direct.nin = 1;
        for (int q = 0; q < n; q++) {
            char *to = tab->out[q] + ((uint64_t)me * d->count + at) * e;
            if (to != from) sh->direct.outs[sh->direct.nout++] = to;   /* in place: ours is there */
        }
        break;
    }
    default: {
        uint64_t displ = gpu_rs_displ(t, me);
        for (int q = 0; q < n; q++) sh->direct.ins[q] = tab->in[q] + (displ + at) * e;
        sh->direct.nin = n;
        sh->direct.outs[0] = tab->out[me] + at * e;
        sh->direct.nout = 1;
        break;
    }
    }
}

/* Thread 0: the direct collective's next primitive, if it can run; the
 * agreement steps that move no data run here at once. Records the peer
 * it waits for (our own rank: our host, or channel 0). */
__device__ static int gpu_direct_try(const dfccl_gpu_env_t *env, dfccl_gpu_task_t *t, int slot,
                                     dfccl_gpu_comm_dev_t *c, gpu_shared_t *sh, uint32_t *peer)
{
    int me = c->rank, n = c->size;
    uint64_t k = t->direct_k, tag = t->desc.ticket + 1;
    dfccl_gpu_board_entry_t *mine = gpu_board_entry(c, me, k);
    volatile dfccl_gpu_direct_tab_t *tab = &env->state->direct[slot];
    volatile uint64_t *done = gpu_board(c, me)->done[blockIdx.x];

    t->exec.waiting = DFCCL_WAIT_RECV;
    switch (t->phase) {
    case DIRECT_PUBLISH:
        mine->exported = t->desc.exported;
        __threadfence_system();
        mine->tag = k;
        t->phase = DIRECT_GATHER;
        /* fall through */
    case DIRECT_GATHER:
        for (int p = 0; p < n; p++) {
            if (p != me && gpu_board_entry(c, p, k)->tag != k) {
                *peer = (uint32_t)p;
                return 0;
            }
        }
        __threadfence_system();
        sh->cmd = CMD_DIRECT_GATHER;
        break;
    case DIRECT_OPENED: {
        const volatile dfccl_gpu_direct_reply_t *r = &env->direct_reply[slot];
        if (r->tag != tag) {
            *peer = (uint32_t)me;
            return 0;
        }
        __threadfence_system();
        mine->open_ok = r->ok;
        __threadfence_system();
        mine->open_tag = k;
        t->phase = DIRECT_AGREE;
    }
        /* fall through */
    case DIRECT_AGREE: {
        uint32_t ok = 1;
        for (int p = 0; p < n; p++) {
            if (gpu_board_entry(c, p, k)->open_tag != k) {
                *peer = (uint32_t)p;
                return 0;
            }
        }
        __threadfence_system();
        for (int p = 0; p < n; p++) ok &= gpu_board_entry(c, p, k)->open_ok != 0;
        tab->ok = ok;
        sh->cmd = CMD_DIRECT_TABLE;
        break;
    }
    case DIRECT_TABLE:
        if (tab->ready != tag) {
            *peer = (uint32_t)me;
            return 0;
        }
        __threadfence();
        if (!tab->ok) {
            /* some rank cannot map some buffer: all ranks run the ring */
            t->algo = DFCCL_GPU_ALGO_RING;
            t->exec.nrounds = dfccl_exec_part_rounds(&t->exec);
            if (!dfccl_exec_slice_begin(&t->exec, &sh->slice)) return 0;
            sh->cmd = CMD_RING_SLICE;
            break;
        }
        t->phase = DIRECT_MOVE;
        /* fall through */
    case DIRECT_MOVE: {
        uint64_t total, owner, owners, chunk;
        gpu_direct_layout(env, t, c, &total, &owner, &owners, &chunk);
        if ((owner + t->exec.offset * owners) * chunk < total) {
            gpu_direct_chunk(env, t, slot, c, sh);
            sh->cmd = CMD_DIRECT_MOVE;
            break;
        }
        __threadfence_system();   /* our writes into the peers' outputs first */
        for (int p = 0; p < n; p++)
            if (p != me) gpu_board(c, p)->done[blockIdx.x][me] = k;
        t->phase = DIRECT_FINISH;
    }
        /* fall through */
    case DIRECT_FINISH:
        for (int p = 0; p < n; p++) {
            if (p != me && done[p] < k) {
                *peer = (uint32_t)p;
                return 0;
            }
        }
        __threadfence_system();
        t->phase = DIRECT_DONE;
        sh->cmd = CMD_NONE;   /* the next pass completes it */
        break;
    default:
        return 0;
    }
    t->exec.waiting = DFCCL_WAIT_NONE;
    return 1;
}

/* Thread 0, after the other threads ran a direct command. */
__device__ static void gpu_direct_after(const dfccl_gpu_env_t *env, dfccl_gpu_task_t *t, int slot,
                                        gpu_cmd_t cmd, const gpu_shared_t *sh)
{
    uint64_t tag = t->desc.ticket + 1;

    switch (cmd) {
    case CMD_DIRECT_GATHER:
        __threadfence_system();
        env->direct_req[slot].tag = tag;
        t->phase = DIRECT_OPENED;
        break;
    case CMD_DIRECT_TABLE:
        __threadfence();
        env->state->direct[slot].ready = tag;
        t->phase = DIRECT_TABLE;
        break;
    default:
        t->exec.offset++;
        break;
    }
}

/* All threads: copies between the board, the host and the table. */
__device__ static void gpu_direct_exchange(const dfccl_gpu_env_t *env, const dfccl_gpu_task_t *t,
                                           int slot, gpu_cmd_t cmd)
{
    const dfccl_gpu_comm_dev_t *c = &env->comms[t->comm_index];
    int n = c->size;

    if (cmd == CMD_DIRECT_GATHER) {
        const unsigned words = sizeof(dfccl_gpu_export_t) / 8;
        for (unsigned w = threadIdx.x; w < (unsigned)n * words; w += blockDim.x) {
            int p = (int)(w / words);
            const volatile uint64_t *from =
                (const volatile uint64_t *)&gpu_board_entry(c, p, t->direct_k)->exported;
            uint64_t *to = (uint64_t *)&env->direct_req[slot].peer[p];
            if (p != c->rank) to[w % words] = from[w % words];
        }
    } else {
        const volatile dfccl_gpu_direct_reply_t *r = &env->direct_reply[slot];
        dfccl_gpu_direct_tab_t *tab = &env->state->direct[slot];
        for (unsigned i = threadIdx.x; i < 2u * (unsigned)n; i += blockDim.x) {
            if (i < (unsigned)n) tab->in[i] = r->in[i];
            else tab->out[i - n] = r->out[i - n];
        }
    }
}

/* Oldest collective of its communicator in this block's list? */
__device__ static int gpu_runnable(const dfccl_gpu_env_t *env, const dfccl_gpu_block_t *blk, int i)
{
    const dfccl_gpu_task_t *t = gpu_task(env, blk->active[i]);
    for (uint32_t j = 0; j < blk->nactive; j++) {
        const dfccl_gpu_task_t *o = gpu_task(env, blk->active[j]);
        if (o->comm_index == t->comm_index && o->key.seq < t->key.seq) return 0;
    }
    return 1;
}

/* The channel's part of a collective is over: the last channel completes it. */
__device__ static void gpu_finish(const dfccl_gpu_env_t *env, dfccl_gpu_block_t *blk, int idx,
                                  int32_t status, const dfccl_gpu_diag_t *diag)
{
    int slot = blk->active[idx];
    dfccl_gpu_state_t *st = env->state;
    uint32_t nparts = gpu_task(env, slot)->nparts;

    for (uint32_t j = (uint32_t)idx; j + 1 < blk->nactive; j++) blk->active[j] = blk->active[j + 1];
    blk->nactive--;
    if (status != DFCCL_OK) {
        atomicMin(&st->status[slot], status);
        if (diag && atomicExch(&st->diag_taken[slot], 1u) == 0) st->diag[slot] = *diag;
    }
    __threadfence();
    if (atomicAdd(&st->done[slot], 1u) + 1 < nparts) return;
    /* last channel: hand the completion to the host; the other channels'
     * status and diagnosis are read past L1 after an acquire fence */
    __threadfence();
    unsigned long long idx_cq = atomicAdd(&st->cq_reserved, 1ull);
    dfccl_gpu_cqe_t *e = &env->cq[idx_cq % DFCCL_GPU_SQ_DEPTH];
    e->ticket = (uint64_t)slot;
    e->status = atomicAdd(&st->status[slot], 0);
    {
        const volatile uint64_t *from = (const volatile uint64_t *)&st->diag[slot];
        uint64_t *to = (uint64_t *)&e->diag;
        for (unsigned w = 0; w < sizeof(dfccl_gpu_diag_t) / 8; w++) to[w] = from[w];
    }
    st->done[slot] = 0;
    st->status[slot] = DFCCL_OK;
    st->diag_taken[slot] = 0;
    __threadfence_system();
    e->marker = idx_cq + 1;
}

__device__ static void gpu_diag_fill(const dfccl_gpu_task_t *t, const dfccl_gpu_comm_dev_t *c,
                                     uint32_t peer, uint64_t blocked_ns, dfccl_gpu_diag_t *g)
{
    const dfccl_exec_t *x = &t->exec;
    const dfccl_fifo_t *f = x->waiting == DFCCL_WAIT_SEND ? x->send_fifo : x->recv_fifo;

    g->channel = blockIdx.x;
    g->algo = t->algo;
    g->phase = t->phase;
    g->step = x->step;
    g->nsteps = x->nsteps;
    g->waiting = x->waiting;
    g->round = x->round;
    g->nrounds = x->nrounds;
    g->offset = x->offset;
    g->blocked_ns = blocked_ns;
    if (t->algo == DFCCL_GPU_ALGO_RING && f != NULL) {
        g->peer = (uint32_t)f->peer;
        g->tail = f->ctrl->tail;
        g->head = f->ctrl->head;
    } else {
        g->peer = peer;
        g->tail = t->algo == DFCCL_GPU_ALGO_DIRECT ? t->direct_k : t->small_k;
        g->head = 0;
    }
}

/* Thread 0: does this block take part in ticket's collective? The host
 * reuses a slot once its collective completed, which needs every channel
 * that takes part: a block that lags behind may find a newer submission
 * there. The first 16 bytes (ticket, nparts, nsteps) come in one load; the
 * ticket is checked again in the copy (a seqlock). */
__device__ static int gpu_takes_part(const dfccl_gpu_env_t *env, uint64_t ticket, uint32_t *nsteps)
{
    ulonglong2 v = gpu_host_load16(gpu_desc_src(env, (int)(ticket % DFCCL_GPU_SQ_DEPTH)));
    *nsteps = (uint32_t)(v.y >> 32);
    return v.x == ticket && blockIdx.x < (uint32_t)v.y;
}

/* Thread 0, after the other threads copied the submission: executor state
 * and a place in the active list, in the global order. Returns 0 when the
 * copy shows the slot was reused meanwhile (not ours after all). */
__device__ static int gpu_admit_finish(const dfccl_gpu_env_t *env, dfccl_gpu_block_t *blk, int slot,
                                       uint64_t ticket)
{
    dfccl_gpu_task_t *t = gpu_task(env, slot);
    const dfccl_gpu_desc_t *d = &t->desc;
    dfccl_gpu_comm_dev_t *c = &env->comms[d->comm_index];
    dfccl_exec_t *x = &t->exec;

    if (d->ticket != ticket) return 0;
    t->algo = d->algo;
    t->type = d->type;
    t->comm_index = d->comm_index;
    t->nparts = d->nparts;
    t->phase = 0;
    t->budget_ns = env->budget_ns;
    t->blocked_since = 0;
    t->key.priority = d->priority;
    t->key.comm_key = d->comm_key;
    t->key.seq = d->seq;
    x->steps = d->steps;
    x->nsteps = d->nsteps;
    x->step = 0;
    x->round = 0;
    x->offset = 0;
    x->part = blockIdx.x;
    x->nparts = d->nparts;
    x->chunk_elems = d->chunk_elems;
    x->slice_elems = d->slice_elems;
    x->slices = 0;
    x->sent_bytes = 0;
    x->sendbuf = d->sendbuf;
    x->recvbuf = d->recvbuf;
    x->esize = d->esize;
    x->dtype = (dfccl_dtype_t)d->dtype;
    x->op = (dfccl_op_t)d->op;
    x->recv_fifo = &c->recv_fifo[blockIdx.x];
    x->send_fifo = &c->send_fifo[blockIdx.x];
    x->waiting = DFCCL_WAIT_NONE;
    x->nrounds = 0;
    if (t->algo == DFCCL_GPU_ALGO_RING) {
        x->nrounds = dfccl_exec_part_rounds(x);
    } else if (t->algo == DFCCL_GPU_ALGO_DIRECT) {
        /* admitted in order on a communicator, alike on every rank */
        t->direct_k = ++c->direct_count[blockIdx.x];
        t->phase = blockIdx.x == 0 ? DIRECT_PUBLISH : DIRECT_TABLE;
    } else {
        t->small_k = ++c->small_count;   /* admitted in order on a communicator */
    }
    uint32_t i = blk->nactive;
    while (i > 0 && dfccl_sched_before(&t->key, &gpu_task(env, blk->active[i - 1])->key)) {
        blk->active[i] = blk->active[i - 1];
        i--;
    }
    blk->active[i] = (uint16_t)slot;
    blk->nactive++;
    return 1;
}

/* Thread 0: can the task's next primitive run now? Fills the shared command. */
__device__ static int gpu_try_move(const dfccl_gpu_env_t *env, dfccl_gpu_task_t *t, int slot,
                                   gpu_shared_t *sh, gpu_sched_t *s)
{
    dfccl_gpu_comm_dev_t *c = &env->comms[t->comm_index];

    if (t->algo == DFCCL_GPU_ALGO_RING) {
        if (!dfccl_exec_slice_begin(&t->exec, &sh->slice)) return 0;
        sh->cmd = CMD_RING_SLICE;
    } else if (t->algo == DFCCL_GPU_ALGO_DIRECT) {
        if (!gpu_direct_try(env, t, slot, c, sh, &s->wait_peer)) return 0;
    } else {
        if (!gpu_oneshot_ready(t, c, &s->wait_peer)) return 0;
        sh->cmd = t->phase == 0 ? CMD_ONESHOT_SEND : CMD_ONESHOT_RECV;
    }
    sh->slot = slot;
    return 1;
}

__device__ static int gpu_task_done(dfccl_gpu_task_t *t)
{
    if (t->algo == DFCCL_GPU_ALGO_RING) return dfccl_exec_done(&t->exec);
    return t->phase >= (t->algo == DFCCL_GPU_ALGO_DIRECT ? (uint32_t)DIRECT_DONE : 2u);
}

__device__ static void gpu_end_turn(const dfccl_gpu_env_t *env, dfccl_gpu_block_t *blk,
                                    gpu_sched_t *s, uint64_t now)
{
    dfccl_sched_budgets_t b = { env->budget_head_ns, env->budget_ns, env->budget_min_ns,
                                env->budget_max_ns };
    dfccl_gpu_task_t *t = gpu_task(env, blk->active[s->turn]);

    t->budget_ns = dfccl_sched_adapt(&b, t->budget_ns, s->turn_moved);
    if (s->turn_moved) {
        s->pos = 0;            /* progress: the next pass starts at the head again */
    } else {
        if (t->blocked_since == 0) t->blocked_since = s->turn_blocked_since;
        if (now - t->blocked_since > env->timeout_ns) {
            dfccl_gpu_diag_t g;
            gpu_diag_fill(t, &env->comms[t->comm_index], s->wait_peer, now - t->blocked_since, &g);
            env->comms[t->comm_index].broken = 1;
            gpu_finish(env, blk, s->turn, DFCCL_ERR_TIMEOUT, &g);
            s->pos = s->turn;  /* the list moved up by one */
            s->turn = -1;
            return;
        }
        s->pos = s->turn + 1;
    }
    s->turn = -1;
}

/* Block 0's thread 0: has the whole kernel had nothing to do for the idle
 * bound, or moved nothing for the stuck bound? Then it leaves (all blocks
 * together, so no channel is missing when work comes) and gives the GPU
 * back to the application's synchronisations until the host launches it
 * again. */
__device__ static int gpu_should_quit(const dfccl_gpu_env_t *env, uint64_t now)
{
    uint64_t last = 0;
    int active = 0;

    for (unsigned b = 0; b < gridDim.x; b++) {
        const dfccl_gpu_block_t *o = &env->state->blocks[b];
        if (o->busy_ns > last) last = o->busy_ns;
        active |= o->nactive != 0;
    }
    if (gpu_ctrl_read(env).x > env->state->blocks[0].admitted) return 0;
    return now - last > (active ? env->stuck_quit_ns : env->idle_quit_ns);
}

/* Thread 0: decide what the block does next. */
__device__ static void gpu_schedule(const dfccl_gpu_env_t *env, dfccl_gpu_block_t *blk,
                                    gpu_shared_t *sh, gpu_sched_t *s)
{
    dfccl_sched_budgets_t b = { env->budget_head_ns, env->budget_ns, env->budget_min_ns,
                                env->budget_max_ns };

    sh->cmd = CMD_NONE;
    for (;;) {
        uint64_t now = gpu_now_ns();

        if (s->turn >= 0) {
            int slot = blk->active[s->turn];
            dfccl_gpu_task_t *t = gpu_task(env, slot);
            if (gpu_task_done(t)) {
                gpu_finish(env, blk, s->turn, DFCCL_OK, NULL);
                s->turn = -1;
                s->pos = 0;
                blk->busy_ns = now;
                continue;
            }
            if (gpu_try_move(env, t, slot, sh, s)) {
                s->turn_moved = 1;
                s->turn_blocked_since = 0;
                t->blocked_since = 0;
                blk->busy_ns = now;
                return;
            }
            if (s->turn_blocked_since == 0) s->turn_blocked_since = now;
            /* give way after the budget, or at once when new work arrived */
            ulonglong2 ctrl = gpu_ctrl_read(env);
            if (now - s->turn_blocked_since >= s->turn_budget || ctrl.x > blk->admitted ||
                ctrl.y >= env->launch_id)
                gpu_end_turn(env, blk, s, now);
            else
                __nanosleep(64);
            continue;
        }
        ulonglong2 ctrl = gpu_ctrl_read(env);
        if (ctrl.y >= env->launch_id || env->state->quit_launch == env->launch_id) {
            if (ctrl.y >= env->launch_id) env->state->quit_launch = env->launch_id;   /* everyone */
            sh->cmd = CMD_QUIT;
            return;
        }
        if (ctrl.x > blk->admitted) {
            uint64_t ticket = blk->admitted;
            blk->busy_ns = now;
            if (!gpu_takes_part(env, ticket, &sh->nsteps)) {
                /* block 0 takes part in everything: only others get here */
                blk->admitted = ticket + 1;
                continue;
            }
            sh->cmd = CMD_ADMIT;
            sh->slot = (int)(ticket % DFCCL_GPU_SQ_DEPTH);
            return;
        }
        /* the next runnable collective of this pass */
        while (s->pos < (int)blk->nactive && !gpu_runnable(env, blk, s->pos)) s->pos++;
        if (s->pos < (int)blk->nactive) {
            dfccl_gpu_task_t *t = gpu_task(env, blk->active[s->pos]);
            if (env->comms[t->comm_index].broken) {
                dfccl_gpu_diag_t g = {};
                g.channel = blockIdx.x;
                g.waiting = 0xffffffffu;   /* failed because an earlier one did */
                gpu_finish(env, blk, s->pos, DFCCL_ERR_TIMEOUT, &g);
                continue;
            }
            s->turn = s->pos;
            s->turn_budget = dfccl_sched_turn_budget(&b, t->budget_ns, s->first_of_pass);
            s->first_of_pass = 0;
            s->turn_blocked_since = 0;
            s->turn_moved = 0;
            continue;
        }
        /* a pass without progress: back off a little; block 0 decides for
         * the whole kernel whether to leave */
        s->pos = 0;
        s->first_of_pass = 1;
        if (blockIdx.x == 0 && gpu_should_quit(env, now)) {
            env->state->quit_launch = env->launch_id;
            __threadfence();
            sh->cmd = CMD_QUIT;
            return;
        }
        __nanosleep(s->relax_ns);
        if (s->relax_ns < (blk->nactive ? 2000u : 4000u)) s->relax_ns *= 2;
        return;   /* let the block loop (and see new work) */
    }
}

/* All threads: the submission into device memory, in one parallel pass over
 * the bus (the header, the reduce-scatter counts and the plan's steps). */
__device__ static void gpu_admit_copy(const dfccl_gpu_env_t *env, int slot, uint32_t nsteps)
{
    const uint4 *from = (const uint4 *)gpu_desc_src(env, slot);
    uint4 *to = (uint4 *)&gpu_task(env, slot)->desc;
    uint4 *mirror = (uint4 *)&env->state->descs[slot];
    uint32_t n = (uint32_t)((offsetof(dfccl_gpu_desc_t, steps) + nsteps * sizeof(dfccl_step_t) + 15) / 16);

    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
        uint4 v = __ldcv(from + i);
        to[i] = v;
        if (blockIdx.x == 0) mirror[i] = v;
    }
}

__global__ void __launch_bounds__(512) dfccl_daemon_kernel(dfccl_gpu_env_t env)
{
    __shared__ gpu_shared_t sh;
    dfccl_gpu_block_t *blk = &env.state->blocks[blockIdx.x];
    gpu_sched_t s;

    if (threadIdx.x == 0) {
        uint64_t now = gpu_now_ns();
        s.turn = -1;
        s.pos = 0;
        s.first_of_pass = 1;
        s.turn_budget = s.turn_blocked_since = 0;
        s.turn_moved = 0;
        blk->busy_ns = now;   /* a launch starts the bounds afresh */
        s.relax_ns = 32;
        s.wait_peer = 0;
    }
    for (;;) {
        if (threadIdx.x == 0) gpu_schedule(&env, blk, &sh, &s);
        __syncthreads();
        gpu_cmd_t cmd = sh.cmd;
        if (cmd == CMD_QUIT) return;
        dfccl_gpu_task_t *t = cmd >= CMD_ADMIT ? gpu_task(&env, sh.slot) : NULL;
        switch (cmd) {
        case CMD_ADMIT:
            gpu_admit_copy(&env, sh.slot, sh.nsteps);
            break;
        case CMD_RING_SLICE:
            gpu_slice_move(&t->exec, &sh.slice);
            break;
        case CMD_ONESHOT_SEND:
            gpu_oneshot_send(t, &env.comms[t->comm_index]);
            break;
        case CMD_ONESHOT_RECV:
            gpu_oneshot_recv(t, &env.comms[t->comm_index]);
            break;
        case CMD_DIRECT_GATHER:
        case CMD_DIRECT_TABLE:
            gpu_direct_exchange(&env, t, sh.slot, cmd);
            break;
        case CMD_DIRECT_MOVE:
            gpu_direct_move(sh.direct.ins, sh.direct.nin, sh.direct.outs, sh.direct.nout,
                            sh.direct.count, t->desc.esize, (dfccl_dtype_t)t->desc.dtype,
                            (dfccl_op_t)t->desc.op, t->type != DFCCL_COLL_ALLGATHER);
            break;
        default:
            break;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            switch (cmd) {
            case CMD_ADMIT:
                gpu_admit_finish(&env, blk, sh.slot, blk->admitted);
                blk->admitted++;
                if (blockIdx.x == 0) {
                    __threadfence();   /* the copies before the mirror */
                    env.state->sq_mirror = blk->admitted;
                }
                break;
            case CMD_RING_SLICE:
                dfccl_exec_slice_end(&t->exec, &sh.slice);
                s.relax_ns = 32;
                break;
            case CMD_ONESHOT_SEND:
            case CMD_ONESHOT_RECV:
                gpu_oneshot_publish(t, &env.comms[t->comm_index]);
                s.relax_ns = 32;
                break;
            case CMD_DIRECT_GATHER:
            case CMD_DIRECT_TABLE:
            case CMD_DIRECT_MOVE:
                gpu_direct_after(&env, t, sh.slot, cmd, &sh);
                s.relax_ns = 32;
                break;
            default:
                break;
            }
        }
    }
}

extern "C" int dfccl_gpu_kernel_launch(const dfccl_gpu_env_t *env, unsigned blocks, unsigned threads,
                                       void *stream)
{
    dfccl_daemon_kernel<<<blocks, threads, 0, (cudaStream_t)stream>>>(*env);
    return (int)cudaGetLastError();
}
