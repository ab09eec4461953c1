/*
 * gpu_ll.cuh - the low-latency one-shot for the smallest collectives.
 *
 * The exchange of the one-shot (gpu_oneshot.cuh), but in 16-byte lines that
 * carry 8 data bytes and the collective's number twice, as NCCL's LL
 * protocol does: each 8-byte half is one store, so a line whose two flags
 * match holds its data. A sender needs no fence and no counter after its
 * data, and a receiver polls the data itself, every thread its own lines,
 * instead of thread 0 waiting for counters and fencing. Twice the bytes
 * cross, which only small messages can afford.
 *
 * Flags are the one-shot's number modulo 2^32; an inbox line is rewritten
 * by every LL one-shot of its parity that reaches it, so an old line could
 * pass for a new one only if it stayed untouched through 2^32 one-shots.
 */
#ifndef DFCCL_GPU_LL_CUH
#define DFCCL_GPU_LL_CUH

#include "kernels/gpu_device.cuh"
#include <stddef.h>
#include <stdint.h>
#include "core/exec.h"
#include "core/reduce.h"
#include "backends/gpu/gpu_shared.h"
#include "kernels/gpu_oneshot.cuh"

#define GPU_LL_DATA 8   /* data bytes per line */

/* Where rank `from`'s lines of one-shot k lie in an inbox (two sets, by
 * parity) of a communicator of n ranks; the inbox starts at `inbox`. */
__device__ static inline uint4 *gpu_ll_lines_at(const char *inbox, int n, int from, uint64_t k)
{
    return (uint4 *)(inbox + DFCCL_GPU_INBOX_LL_OFFSET(n) +
                     ((size_t)(k & 1) * (size_t)n + (size_t)from) * DFCCL_GPU_LL_SLOT_BYTES);
}

/* One line in one 16-byte access; volatile, as other processes write it.
 * Neither access clobbers "memory": the data travel in the line itself, and
 * a clobber after each load made the compiler read the context's fields
 * again before the next one. */
__device__ static inline void gpu_ll_store(uint4 *line, uint64_t v, uint32_t flag)
{
    asm volatile("st.volatile.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(line),
                 "r"((uint32_t)v), "r"(flag), "r"((uint32_t)(v >> 32)), "r"(flag));
}

__device__ static inline uint4 gpu_ll_load(const uint4 *line)
{
    uint4 l;
    asm volatile("ld.volatile.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(l.x), "=r"(l.y), "=r"(l.z), "=r"(l.w)
                 : "l"(line));
    return l;
}

/* Up to 8 bytes of an application buffer, past L1 (another kernel may have
 * written them since this one last looked). */
__device__ static inline uint64_t gpu_ll_gather(const char *p, size_t n)
{
    uint64_t v = 0;

    if (n == GPU_LL_DATA && ((uintptr_t)p & 7) == 0) return __ldcg((const unsigned long long *)p);
    for (size_t b = 0; b < n; b++) v |= (uint64_t)((const volatile uint8_t *)p)[b] << (8 * b);
    return v;
}

__device__ static inline void gpu_ll_scatter(char *p, uint64_t v, size_t n)
{
    if (n == GPU_LL_DATA && ((uintptr_t)p & 7) == 0) {
        *(uint64_t *)p = v;
        return;
    }
    for (size_t b = 0; b < n; b++) p[b] = (char)(v >> (8 * b));
}

/* acc OP v, element by element over one line's 8 data bytes: in registers
 * for the common (type, op) pairs, with the engine's own operators (so
 * results are those of every other path); the others through the engine's
 * reducer, which works in local memory. Elements past ne, in a line that
 * is not full, are zeros on both sides and are never written out. */
#define GPU_LL_LANES(T, U, R)                                                    \
    {                                                                            \
        union { uint64_t w; T e[8 / sizeof(T)]; } x, y;                          \
        x.w = acc;                                                               \
        y.w = v;                                                                 \
        _Pragma("unroll") for (unsigned j = 0; j < 8 / sizeof(T); j++)           \
            x.e[j] = R(T, U, x.e[j], y.e[j]);                                    \
        return x.w;                                                              \
    }
#define GPU_LL_TYPE(DT, T, U)                                                    \
    case DT:                                                                     \
        switch (op) {                                                            \
        case DFCCL_OP_SUM: GPU_LL_LANES(T, U, DFCCL_R_SUM)                        \
        case DFCCL_OP_PROD: GPU_LL_LANES(T, U, DFCCL_R_PROD)                      \
        case DFCCL_OP_MIN: GPU_LL_LANES(T, U, DFCCL_R_MIN)                        \
        case DFCCL_OP_MAX: GPU_LL_LANES(T, U, DFCCL_R_MAX)                        \
        default: break;                                                          \
        }                                                                        \
        break;

/* The other (type, op) pairs: out of line, so that the engine's whole reducer
 * is not inlined into every receive, between the LL path's instructions. */
__device__ static __noinline__ uint64_t gpu_ll_combine_other(uint64_t acc, uint64_t v, size_t ne,
                                                            dfccl_dtype_t dtype, dfccl_op_t op)
{
    dfccl_reduce_strided(&acc, &acc, &v, ne, 0, 1, dtype, op);
    return acc;
}

__device__ static inline uint64_t gpu_ll_combine(uint64_t acc, uint64_t v, size_t ne,
                                                 dfccl_dtype_t dtype, dfccl_op_t op)
{
    switch (dtype) {
    GPU_LL_TYPE(DFCCL_FLOAT, float, float)
    GPU_LL_TYPE(DFCCL_DOUBLE, double, double)
    GPU_LL_TYPE(DFCCL_INT32, int32_t, uint32_t)
    GPU_LL_TYPE(DFCCL_INT64, int64_t, uint64_t)
    default:
        break;
    }
    return gpu_ll_combine_other(acc, v, ne, dtype, op);
}
#undef GPU_LL_TYPE
#undef GPU_LL_LANES

/* Lines that carry `bytes`: at least one, so that every collective reaches
 * every peer. A rank starts one-shot k + 1 (into the slot set of k - 1) once
 * it holds every peer's line of k, which each peer wrote only after it had
 * read all of k - 1; a contribution without lines would break that chain. */
__device__ static inline size_t gpu_ll_lines(size_t bytes)
{
    return bytes ? (bytes + GPU_LL_DATA - 1) / GPU_LL_DATA : 1;
}

/* Data bytes of line i (0 for an empty contribution's one line). */
__device__ static inline size_t gpu_ll_len(size_t i, size_t bytes)
{
    size_t at = i * GPU_LL_DATA;
    return at >= bytes ? 0 : bytes - at < GPU_LL_DATA ? bytes - at : GPU_LL_DATA;
}

/*
 * What an LL collective's commands read, in shared memory: filled once by
 * all threads in parallel (each a peer's entries), then every attempt reads
 * only shared memory, its data and its lines. Read through the task and the
 * communicator in global memory instead, one field after another, the
 * addresses made a chain of dependent loads, each a trip to memory; with
 * the context here an attempt after the first no longer reads them.
 */
typedef struct gpu_ll_ctx {
    const dfccl_gpu_task_t *task;     /* filled for this task (NULL: for none) */
    uint64_t      k;                  /* and its one-shot number (its lines' flag: k mod 2^32) */
    int           n, type;
    size_t        esize;
    dfccl_dtype_t dtype;
    dfccl_op_t    op;
    char         *out;                /* the output buffer */
    size_t        out_bytes;          /* our result (allgather: each rank's part) */
    const char   *inbox;              /* our inbox's lines of k: rank p's at p slots on */
    const char   *src[DFCCL_GPU_ALL_PEER_RANKS];        /* what we send rank p */
    size_t        src_bytes[DFCCL_GPU_ALL_PEER_RANKS];
    uint4        *to[DFCCL_GPU_ALL_PEER_RANKS];         /* our lines in rank p's inbox */
} gpu_ll_ctx_t;

/* Thread 0: the context's fields for the whole collective. */
__device__ static inline void gpu_ll_ctx_set(gpu_ll_ctx_t *x, const dfccl_gpu_task_t *t, uint64_t k,
                                             int n, int type, size_t esize, dfccl_dtype_t dtype,
                                             dfccl_op_t op, char *out, size_t out_bytes)
{
    x->task = t;
    x->k = k;
    x->n = n;
    x->type = type;
    x->esize = esize;
    x->dtype = dtype;
    x->op = op;
    x->out = out;
    x->out_bytes = out_bytes;
}

/* Thread p (< n): peer p's entries of one-shot k, whose inbox starts at
 * `inbox`; rank me's thread also our own inbox's lines. */
__device__ static inline void gpu_ll_ctx_peer(gpu_ll_ctx_t *x, int p, int me, int n, uint64_t k,
                                              const char *inbox, const char *src, size_t bytes)
{
    x->src[p] = src;
    x->src_bytes[p] = bytes;
    x->to[p] = gpu_ll_lines_at(inbox, n, me, k);
    if (p == me) x->inbox = (const char *)gpu_ll_lines_at(inbox, n, 0, k);
}

/* All threads: the context of task t's one-shot k on communicator c;
 * thread p fills peer p's entries. A __syncthreads must follow. Every
 * load comes before the first store: the compiler cannot tell the context
 * (shared) from the task (global) behind generic pointers, so a store
 * between two loads would make the second wait for the first, a trip to
 * memory each. */
__device__ static void gpu_ll_fill(gpu_ll_ctx_t *x, const dfccl_gpu_task_t *t,
                                   const dfccl_gpu_comm_dev_t *c, uint64_t k)
{
    const dfccl_exec_t *e = &t->exec;
    int me = c->rank, n = c->size, p = (int)threadIdx.x, type = 0;
    const char *src = NULL, *inbox = NULL;
    char *out = NULL;
    size_t bytes = 0, count = 0, esize = 0;
    dfccl_dtype_t dtype = DFCCL_FLOAT;
    dfccl_op_t op = DFCCL_OP_SUM;

    if (p < n) {
        src = gpu_oneshot_source(t, me, p, &bytes);
        inbox = c->inbox[p];
    }
    if (p == 0) {
        type = (int)t->type;
        count = type == DFCCL_COLL_REDUCE_SCATTER ? t->desc.rs_counts[me] : t->desc.count;
        esize = e->esize;
        dtype = e->dtype;
        op = e->op;
        out = e->recvbuf;
    }
    if (p < n) gpu_ll_ctx_peer(x, p, me, n, k, inbox, src, bytes);
    if (p == 0) gpu_ll_ctx_set(x, t, k, n, type, esize, dtype, op, out, count * esize);
}

/* All threads: our contribution, line by line, into every inbox (ours too,
 * so that the receive reads all inputs alike and in-place inputs are kept).
 * have_first: first is the data of each thread's first line, already
 * gathered (allreduce and allgather). By value: a variable whose address
 * is taken lives in local memory, and storing the gathered line there
 * made the thread wait for that load before issuing its next ones. */
__device__ static void gpu_ll_send(const gpu_ll_ctx_t *x, int have_first, uint64_t first)
{
    if (x->type != DFCCL_COLL_REDUCE_SCATTER) {   /* the same lines to everyone */
        const char *from = x->src[0];
        size_t bytes = x->src_bytes[0];
        for (size_t i = threadIdx.x; i < gpu_ll_lines(bytes); i += blockDim.x) {
            uint64_t v = have_first && i == threadIdx.x
                             ? first : gpu_ll_gather(from + i * GPU_LL_DATA, gpu_ll_len(i, bytes));
            for (int p = 0; p < x->n; p++) gpu_ll_store(x->to[p] + i, v, (uint32_t)x->k);
        }
        return;
    }
    for (int p = 0; p < x->n; p++) {
        const char *from = x->src[p];
        size_t bytes = x->src_bytes[p];
        for (size_t i = threadIdx.x; i < gpu_ll_lines(bytes); i += blockDim.x)
            gpu_ll_store(x->to[p] + i, gpu_ll_gather(from + i * GPU_LL_DATA, gpu_ll_len(i, bytes)),
                         (uint32_t)x->k);
    }
}

/* One line, polled until its flags say `flag` or the deadline passes;
 * *polls counts the loads after the first. */
__device__ static inline int gpu_ll_wait(const uint4 *line, uint4 *l, uint32_t flag, uint64_t deadline,
                                         uint32_t *polls)
{
    while (l->y != flag || l->w != flag) {
        if (gpu_now_ns() >= deadline) return 0;
        *l = gpu_ll_load(line);
        ++*polls;
    }
    return 1;
}

/* Lines in flight per thread while it polls: their latencies overlap. */
#define GPU_LL_BATCH 8

/*
 * All threads: line i of every rank's contribution in our inbox, in rank
 * order, reduced (or, for allgather, copied) into the output. Returns 0 when
 * some line was not there by the deadline (*lagging: whose).
 */
__device__ static int gpu_ll_line(const gpu_ll_ctx_t *x, size_t i, uint64_t deadline, int *lagging,
                                  uint32_t *polls, long long *first)
{
    int n = x->n, gather = x->type == DFCCL_COLL_ALLGATHER;
    size_t bytes = x->out_bytes, at = i * GPU_LL_DATA, len = gpu_ll_len(i, bytes), ne = len / x->esize;
    uint64_t acc = 0;

    for (int base = 0; base < n; base += GPU_LL_BATCH) {
        uint4 l[GPU_LL_BATCH];
        _Pragma("unroll") for (int j = 0; j < GPU_LL_BATCH; j++)
            if (base + j < n)
                l[j] = gpu_ll_load((const uint4 *)(x->inbox + (size_t)(base + j) * DFCCL_GPU_LL_SLOT_BYTES) + i);
        _Pragma("unroll") for (int j = 0; j < GPU_LL_BATCH; j++) {
            int p = base + j;
            if (p >= n) break;
            if (!gpu_ll_wait((const uint4 *)(x->inbox + (size_t)p * DFCCL_GPU_LL_SLOT_BYTES) + i, &l[j],
                             (uint32_t)x->k, deadline, polls)) {
                *lagging = p;
                return 0;
            }
            if (GPU_TRACE_BUILT && p == 0 && *first == 0)
                *first = clock64();   /* trace: the first line's load is back */
            uint64_t v = (uint64_t)l[j].x | (uint64_t)l[j].z << 32;
            if (gather) {
                gpu_ll_scatter(x->out + (size_t)p * bytes + at, v, len);
            } else if (p == 0) {
                acc = v;
            } else {
                acc = gpu_ll_combine(acc, v, ne, x->dtype, x->op);
            }
        }
    }
    if (!gather) gpu_ll_scatter(x->out + at, acc, len);
    return 1;
}

/*
 * All threads: the result, once every line has arrived; each thread polls
 * its own lines until the deadline. Returns to every thread whether all
 * were there; if not, *lagging names a rank one was missing from. Outputs
 * of an attempt that comes too early are written again by the next (the
 * inputs are in the inbox, so in place is safe). For the trace (where
 * compiled in), thread 0 leaves in *first its clock64 when the load of its
 * first line was back (it waits for it there), in *done when its own lines
 * were handled, and in *polls how often it loaded one again.
 */
__device__ static int gpu_ll_recv(const gpu_ll_ctx_t *x, uint64_t deadline, int *lagging,
                                  long long *first, long long *done, uint32_t *polls)
{
    int ok = 1, who = -1;
    uint32_t again = 0;
    long long back = 0;

    for (size_t i = threadIdx.x; ok && i < gpu_ll_lines(x->out_bytes); i += blockDim.x)
        ok = gpu_ll_line(x, i, deadline, &who, &again, &back);
    if (GPU_TRACE_BUILT && threadIdx.x == 0) {   /* only the trace reads them */
        *first = back;
        *done = clock64();
        *polls = again;
    }
    if (!ok) atomicMax(lagging, who);   /* shared: one of them, without a race */
    return __syncthreads_and(ok);
}

#endif
