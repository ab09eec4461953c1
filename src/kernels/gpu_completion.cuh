/*
 * gpu_completion.cuh - how a channel's part of a collective ends: out of the
 * block's active list, the channels' status and diagnosis gathered by the
 * last one, and the completion entry the host reads.
 */
#ifndef DFCCL_GPU_COMPLETION_CUH
#define DFCCL_GPU_COMPLETION_CUH

#include "kernels/gpu_device.cuh"
#include <stdint.h>
#include "core/exec.h"
#include "core/fifo.h"
#include "backends/gpu/gpu_shared.h"
#include "kernels/gpu_block_state.cuh"
#include "kernels/gpu_trace.cuh"

/* Thread 0: slot's completion entry, in this block's own ring (only this
 * block writes it: no atomic for the index), its marker last, after a
 * system fence, so that the host sees the outputs before it. t: the task
 * whose stamps a trace copies; why: the diagnosis when worst is an error;
 * c0: clock64 when completing began (trace). */
__device__ static void gpu_cq_post(const dfccl_gpu_env_t *env, dfccl_gpu_block_t *blk, int slot,
                                   int32_t worst, const volatile uint64_t *why,
                                   const dfccl_gpu_task_t *t, uint32_t nparts, long long c0)
{
    dfccl_gpu_state_t *st = env->state;
    uint64_t n = blk->cq_next++;
    dfccl_gpu_cqe_t *e = &env->cq[blockIdx.x * DFCCL_GPU_SQ_DEPTH + n % DFCCL_GPU_SQ_DEPTH];

    e->ticket = (uint64_t)slot;
    e->status = worst;
    if (worst != DFCCL_OK) {   /* the diagnosis crosses the bus only when needed */
        uint64_t *to = (uint64_t *)&e->diag;
        for (unsigned w = 0; w < sizeof(dfccl_gpu_diag_t) / 8; w++) to[w] = why ? why[w] : 0;
    }
    gpu_trace_cqe(env, st, e, slot, t, nparts, c0);
    __threadfence_system();
    e->marker = n + 1;
}

/* Thread 0: takes entry idx out of the block's active list. */
__device__ static void gpu_active_remove(dfccl_gpu_block_t *blk, int idx)
{
    for (uint32_t j = (uint32_t)idx; j + 1 < blk->nactive; j++) blk->active[j] = blk->active[j + 1];
    blk->nactive--;
}

/* The channel's part of a collective is over: the last channel completes it
 * (a collective of one channel at once, without the channels' counters).
 * parts: its channels where the caller knows them (LL: 1; the task's copy
 * is a trip away, before the completion's own), else 0. */
__device__ static void gpu_finish(const dfccl_gpu_env_t *env, dfccl_gpu_block_t *blk, int idx,
                                  int32_t status, const dfccl_gpu_diag_t *diag, uint32_t parts)
{
    int slot = blk->active[idx];
    dfccl_gpu_state_t *st = env->state;
    const dfccl_gpu_task_t *t = gpu_task(env, slot);
    uint32_t nparts = parts ? parts : t->nparts;
    int32_t worst = status;
    const volatile uint64_t *why = (const volatile uint64_t *)diag;
    long long c0 = gpu_trace_clock(env);

    gpu_active_remove(blk, idx);
    if (nparts > 1) {
        gpu_trace_part_done(env, st, slot, t);
        if (status != DFCCL_OK) {
            atomicMin(&st->status[slot], status);
            if (diag && atomicExch(&st->diag_taken[slot], 1u) == 0) st->diag[slot] = *diag;
        }
        __threadfence();
        if (atomicAdd(&st->done[slot], 1u) + 1 < nparts) return;
        /* last channel: the other channels' status and diagnosis are read
         * past L1 after an acquire fence */
        __threadfence();
        worst = atomicAdd(&st->status[slot], 0);
        why = (const volatile uint64_t *)&st->diag[slot];
        /* the slot's counters ready for its next collective: read above,
         * and no other channel touches them again for this one */
        st->done[slot] = 0;
        st->status[slot] = DFCCL_OK;
        st->diag_taken[slot] = 0;
    }
    gpu_cq_post(env, blk, slot, worst, why, t, nparts, c0);
}

/* Thread 0: what the host reports of a collective that failed on this
 * channel: where its executor stood, and whom it waited for. */
__device__ static void gpu_diag_fill(const dfccl_gpu_task_t *t, const dfccl_gpu_comm_dev_t *c,
                                     uint32_t peer, uint64_t blocked_ns, dfccl_gpu_diag_t *g)
{
    const dfccl_exec_t *x = &t->exec;
    const dfccl_fifo_t *f = NULL;

    /* the connection it waited on: the one to or from the peer it named */
    if (t->algo == DFCCL_GPU_ALGO_RING && x->waiting != DFCCL_WAIT_NONE) {
        const dfccl_fifo_t *conns = x->waiting == DFCCL_WAIT_SEND ? x->send_fifo : x->recv_fifo;
        for (int k = 0; k < gpu_comm_nconns(blockIdx.x) && f == NULL; k++)
            if (conns[k].ctrl != NULL && conns[k].peer == x->wait_peer) f = &conns[k];
    }
    if (t->algo == DFCCL_GPU_ALGO_RING && f == NULL && x->recv_fifo[0].ctrl != NULL)
        f = &x->recv_fifo[0];

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

#endif
