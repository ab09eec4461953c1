/*
 * gpu_ll_early.cuh - an LL allreduce, allgather or reduce-scatter (blocks all
 * alike) that reaches an idle daemon kernel is sent and received within its
 * admission command.
 *
 * Admission copies the submission from host memory, a trip over the bus,
 * then fills the task; only then did the LL send begin. The host also
 * writes a summary of each submission (dfccl_gpu_ll_head_t: the
 * communicator, the buffers, the count), every 8-byte word tagged with the
 * ticket. While block 0 has nothing in hand, its warp 1 reads the summary in
 * the same trip as thread 0's read of the control words; when all tags
 * match, the admission command sends the lines, polls for the peers' (up to
 * gpu_ll_wait_ns), and only then stores the copy, whose loads went out
 * first. A collective whose lines were all there is completed when the
 * copy is stored, before admission fills its task (gpu_ll_early_post);
 * otherwise its attempts only receive. An 8 B allreduce and a 64 B - 4 KiB
 * reduce-scatter at 4 ranks measured faster with it (see
 * docs/performance.md). The summary carries one count, so a reduce-scatter
 * whose blocks differ is left to admission (the host writes algorithm 0
 * into its summary).
 *
 * The send is the one the LL attempt would make (gpu_ll_send), as the
 * one-shot number admission will give it: only block 0 admits one-shots and
 * counts them, in this command, so that number is the communicator's count
 * plus one. The communicator records that number (ll_early_k) in device
 * memory, which outlives the command and the launch: should the same
 * collective be admitted again (an admission that must copy again; a launch
 * that ends before the admission), neither this send nor the attempt's sends
 * again, since an in-place allreduce's input may already hold its result.
 * A receive reads only the inboxes and may run again. A communicator that
 * failed gets nothing: its collectives fail at the scheduler.
 *
 * The host publishes a collective that this send takes before its wait for
 * CUDA's legacy default stream returns (slowest under MPS),
 * its summary marked held (gpu_ll_early_takes in gpu.c); it rewrites the
 * KIND word unmarked once the wait returned (gpu_ll_head_release). Thread 0
 * polls that word after taking a held summary, within the receive's
 * deadline, before any input is read: the kernel's look at the queue and
 * the host's wait overlap. Past the
 * deadline nothing is sent early, and the scheduler's attempts look again
 * (the task is held) before they read the inputs.
 */
#ifndef DFCCL_GPU_LL_EARLY_CUH
#define DFCCL_GPU_LL_EARLY_CUH

#include "kernels/gpu_device.cuh"
#include <stddef.h>
#include <stdint.h>
#include "backends/gpu/gpu_shared.h"
#include "kernels/gpu_ll.cuh"

#define GPU_LLH_VECS (sizeof(dfccl_gpu_ll_head_t) / 16)

typedef struct gpu_ll_early {
    int         maybe;         /* block 0 with nothing in hand admits ticket: look at the summary */
    int         go;            /* it is ticket's: send before the copy */
    int         held;          /* the host had not yet released its inputs (DFCCL_GPU_LLH_HELD) */
    uint64_t    ticket;
    int         sent;          /* the lines went out (the communicator had not failed), */
    int         again;         /* before this command already */
    uint32_t    comm, type, dtype, op;
    uint32_t    count, esize, rank, size;
    const char *in;
    char       *out;
    uint64_t    k;             /* the one-shot number they went out as */
    uint64_t    deadline;      /* the receive in the same command waits until then, */
    int         received;      /* and found every line */
    uint64_t    begin_ns;      /* trace: when the send began, */
    uint64_t    sent_ns;       /* when it was done, */
    uint64_t    received_ns;   /* and the receive; */
    long long   clk_took;      /* clock64 (thread 0): the summary taken, all threads told, */
    long long   clk_loaded;    /* the communicator's words and the data loaded, */
    long long   clk_filled;    /* the LL context filled, */
    long long   clk_sent;      /* the lines stored, */
    long long   clk_received;  /* the receive done */
} gpu_ll_early_t;

/* Warp 1 of block 0 (threads 32 on, one vector each): ticket's summary
 * into rec (shared), unless ticket is UINT64_MAX. Thread 0 reads the
 * control words meanwhile: each further load from host memory by one
 * thread measured longer, so the summary's four would delay the look for
 * new work. */
__device__ static inline void gpu_ll_head_fetch(const dfccl_gpu_env_t *env, uint64_t ticket,
                                                uint4 *rec)
{
    unsigned j = threadIdx.x - 32;

    if (ticket != UINT64_MAX && threadIdx.x >= 32 && j < GPU_LLH_VECS)
        rec[j] = __ldcv((const uint4 *)&env->ll_heads[ticket % DFCCL_GPU_SQ_DEPTH] + j);
}

/* Thread 0: is the summary read (rec) ticket's, of an LL allreduce,
 * allgather or reduce-scatter with sane fields? Then e holds it. */
__device__ static int gpu_ll_head_take(const uint4 *rec, uint64_t ticket, gpu_ll_early_t *e)
{
    const uint64_t *w = (const uint64_t *)rec;
    uint32_t v[DFCCL_GPU_LLH_WORDS];

    for (int j = 0; j < DFCCL_GPU_LLH_WORDS; j++) {
        if ((uint32_t)w[j] != (uint32_t)ticket) return 0;
        v[j] = (uint32_t)(w[j] >> 32);
    }
    e->held = (v[DFCCL_GPU_LLH_KIND] & DFCCL_GPU_LLH_HELD) != 0;
    v[DFCCL_GPU_LLH_KIND] &= ~DFCCL_GPU_LLH_HELD;
    e->type = v[DFCCL_GPU_LLH_KIND] & 0xff;
    e->dtype = (v[DFCCL_GPU_LLH_KIND] >> 8) & 0xff;
    e->op = (v[DFCCL_GPU_LLH_KIND] >> 16) & 0xff;
    e->comm = v[DFCCL_GPU_LLH_COMM];
    e->count = v[DFCCL_GPU_LLH_COUNT];
    e->esize = v[DFCCL_GPU_LLH_SHAPE] & 0xff;
    e->rank = (v[DFCCL_GPU_LLH_SHAPE] >> 8) & 0xff;
    e->size = v[DFCCL_GPU_LLH_SHAPE] >> 16;
    e->in = (const char *)((uint64_t)v[DFCCL_GPU_LLH_IN_HI] << 32 | v[DFCCL_GPU_LLH_IN_LO]);
    e->out = (char *)((uint64_t)v[DFCCL_GPU_LLH_OUT_HI] << 32 | v[DFCCL_GPU_LLH_OUT_LO]);
    return v[DFCCL_GPU_LLH_KIND] >> 24 == DFCCL_GPU_ALGO_LL &&
           (e->type == DFCCL_COLL_ALLREDUCE || e->type == DFCCL_COLL_ALLGATHER ||
            e->type == DFCCL_COLL_REDUCE_SCATTER) &&
           e->comm < DFCCL_GPU_MAX_COMMS && e->size >= 1 && e->size <= DFCCL_GPU_ALL_PEER_RANKS &&
           e->rank < e->size && e->esize >= 1 &&
           (uint64_t)e->count * e->esize <= DFCCL_GPU_LL_MAX_BYTES;
}

/* Thread 0: has the host released ticket's LL inputs (its wait for CUDA's
 * legacy default stream returned, gpu_ll_head_release)? One trip over the
 * bus, to the summary's KIND word. */
__device__ static inline int gpu_ll_released(const dfccl_gpu_env_t *env, uint64_t ticket)
{
    const dfccl_gpu_ll_head_t *h = &env->ll_heads[ticket % DFCCL_GPU_SQ_DEPTH];
    uint64_t w = __ldcv((const unsigned long long *)&h->w[DFCCL_GPU_LLH_KIND]);

    return (uint32_t)w == (uint32_t)ticket && ((uint32_t)(w >> 32) & DFCCL_GPU_LLH_HELD) == 0;
}

/*
 * All threads: the lines of the summarised collective into every inbox, and
 * the LL context for its receive (task t, the slot's). One trip to memory
 * for the communicator's fields and the first line of each thread's data
 * together, then the stores. Leaves e->sent for every thread.
 */
__device__ static void gpu_ll_early_send(const dfccl_gpu_env_t *env, gpu_ll_early_t *e,
                                         gpu_ll_ctx_t *x, const dfccl_gpu_task_t *t)
{
    dfccl_gpu_comm_dev_t *c = &env->comms[e->comm];
    int n = (int)e->size, me = (int)e->rank, p = (int)threadIdx.x, broken = 0;
    size_t bytes = (size_t)e->count * e->esize, lines = gpu_ll_lines(bytes);
    const char *in = e->in, *inbox = NULL;
    uint64_t first = 0, k = 0, already = 0;

    /* the loads, all before any store (see gpu_ll_fill) */
    if (p < n) inbox = c->inbox[p];
    /* the same lines to every peer: each thread's first one now (a
     * reduce-scatter sends each peer its own block, gathered in the send) */
    if ((size_t)p < lines && e->type != DFCCL_COLL_REDUCE_SCATTER)
        first = gpu_ll_gather(in + (size_t)p * GPU_LL_DATA, gpu_ll_len((size_t)p, bytes));
    if (p == 0) {
        k = c->small_count + 1;
        broken = c->broken;
        already = c->ll_early_k;
    }
    if (p == 0) {
        if (GPU_TRACE_ON(env)) e->begin_ns = gpu_now_ns();
        e->k = k;
        e->sent = !broken;
        e->again = already == k;   /* its lines went out before: not again */
        gpu_ll_ctx_set(x, broken ? NULL : t, k, n, (int)e->type, e->esize, (dfccl_dtype_t)e->dtype,
                       (dfccl_op_t)e->op, e->out, bytes);
    }
    __syncthreads();
    if (GPU_TRACE_ON(env) && p == 0) e->clk_loaded = clock64();
    if (!e->sent) return;
    k = e->k;
    /* reduce-scatter: rank p gets block p (all blocks alike, bytes each) */
    if (p < n)
        gpu_ll_ctx_peer(x, p, me, n, k, inbox,
                        e->type == DFCCL_COLL_REDUCE_SCATTER ? in + (size_t)p * bytes : in, bytes);
    __syncthreads();
    if (GPU_TRACE_ON(env) && p == 0) e->clk_filled = clock64();
    if (!e->again) gpu_ll_send(x, (size_t)p < lines, first);
    if (p == 0) c->ll_early_k = k;
    if (GPU_TRACE_ON(env) && p == 0) {
        e->sent_ns = gpu_now_ns();
        e->clk_sent = clock64();
    }
}

#endif
