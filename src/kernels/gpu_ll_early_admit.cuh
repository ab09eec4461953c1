/*
 * gpu_ll_early_admit.cuh - the early LL send (gpu_ll_early.cuh) within the
 * admission command: whether it goes, the send and its receive while the
 * copy's loads are under way, the completion entry of a collective done
 * within the command, and which summary warp 1 reads next.
 * Admission (gpu_admission.cuh) calls it.
 */
#ifndef DFCCL_GPU_LL_EARLY_ADMIT_CUH
#define DFCCL_GPU_LL_EARLY_ADMIT_CUH

#include "kernels/gpu_device.cuh"
#include <stdint.h>
#include "backends/gpu/gpu_shared.h"
#include "kernels/gpu_ll.cuh"
#include "kernels/gpu_ll_early.cuh"
#include "kernels/gpu_block_state.cuh"
#include "kernels/gpu_trace.cuh"
#include "kernels/gpu_completion.cuh"

/* Thread 0, trace: the parts of an LL send made early (gpu_ll_early.cuh),
 * counted from the admission command's beginning, and of its receive when
 * that found every line. */
__device__ static void gpu_ll_early_stamp(dfccl_gpu_task_t *t, const gpu_shared_t *sh,
                                          const gpu_sched_t *s)
{
    const gpu_ll_early_t *e = &sh->early;

    t->t[DFCCL_GPU_T_FIRST_MOVE] = e->begin_ns;
    t->t[DFCCL_GPU_T_SENT] = e->sent_ns;
    t->cyc[DFCCL_GPU_C_SEND] = (uint32_t)(e->clk_sent - s->clk_seen) - s->issue_cyc;
    t->cyc[DFCCL_GPU_C_TAKE] = (uint32_t)(e->clk_took - s->clk_seen) - s->issue_cyc;
    t->cyc[DFCCL_GPU_C_LOAD] = (uint32_t)(e->clk_loaded - e->clk_took);
    t->cyc[DFCCL_GPU_C_FILL] = (uint32_t)(e->clk_filled - e->clk_loaded);
    t->cyc[DFCCL_GPU_C_STORE] = (uint32_t)(e->clk_sent - e->clk_filled);
    t->cyc[DFCCL_GPU_C_ATTEMPTS] = 1;   /* its receive, in the admission */
    if (!e->received) return;
    t->t[DFCCL_GPU_T_LAST_MOVE] = e->sent_ns;
    t->t[DFCCL_GPU_T_RECEIVED] = e->received_ns;
    t->cyc[DFCCL_GPU_C_RECEIVE] = (uint32_t)(e->clk_received - e->clk_sent);
    t->cyc[DFCCL_GPU_C_FIRST] = (uint32_t)(sh->ll.first_clk - e->clk_sent);
    t->cyc[DFCCL_GPU_C_LINES] = (uint32_t)(sh->ll.done_clk - e->clk_sent);
    t->cyc[DFCCL_GPU_C_POLLS] = sh->ll.polls;
}

/* Thread 0: gpu_ll_early_stamp where the trace is on, for a task that
 * admission fills (not done: not completed in the command already). */
__device__ static inline void gpu_ll_early_trace(const dfccl_gpu_env_t *env, dfccl_gpu_task_t *t,
                                                 const gpu_shared_t *sh, const gpu_sched_t *s,
                                                 int done)
{
    if (GPU_TRACE_ON(env) && !done) gpu_ll_early_stamp(t, sh, s);
}

/* Thread 0: did this admission command send lines early (gpu_ll_early.cuh)
 * for the copied submission d's communicator? Then the send's number is
 * the one admission gives it. */
__device__ static inline int gpu_ll_early_sent_for(const gpu_shared_t *sh, const dfccl_gpu_desc_t *d)
{
    return sh->early.go && sh->early.sent && sh->early.comm == d->comm_index;
}

/* All threads, in the admission command of block 0 with nothing in hand
 * (sh->early.maybe), before the copy's stores: warp 1 read the LL summary
 * beside the control words; if it is the ticket's, its lines go out and
 * its receive runs while the copy's loads are under way. t: the slot's
 * task. */
__device__ static void gpu_ll_early_admit(const dfccl_gpu_env_t *env, gpu_shared_t *sh,
                                          dfccl_gpu_task_t *t)
{
    if (threadIdx.x == 0) {
        sh->early.go = gpu_ll_head_take(sh->llh, sh->early.ticket, &sh->early);
        sh->early.received = 0;
        /* the receive's wait: as the express attempt's would be */
        sh->early.deadline = gpu_now_ns() + (env->ll_wait_ns < env->budget_head_ns
                                             ? env->ll_wait_ns : env->budget_head_ns);
        sh->ll.lagging = -1;
        /* published before the host's wait for the legacy
         * stream returned: no input is read before its word
         * (gpu_ll_early.cuh). Four staggered pollers (warps)
         * instead of thread 0, and the context filled before
         * the word, were both measured slower */
        while (sh->early.go && sh->early.held) {
            if (gpu_ll_released(env, sh->early.ticket)) sh->early.held = 0;
            else if (gpu_now_ns() >= sh->early.deadline) sh->early.go = 0;
        }
    }
    __syncthreads();
    gpu_trace_clock0(env, &sh->early.clk_took);
    if (sh->early.go) {
        gpu_ll_early_send(env, &sh->early, &sh->ll.ctx, t);
        /* and its receive, while the copy's loads are under way */
        if (sh->early.sent) {
            int ok = gpu_ll_recv(&sh->ll.ctx, sh->early.deadline, &sh->ll.lagging,
                                 &sh->ll.first_clk, &sh->ll.done_clk, &sh->ll.polls);
            if (threadIdx.x == 0) {
                sh->early.received = ok;
                gpu_trace_stamp(env, &sh->early.received_ns, &sh->early.clk_received);
            }
        }
    }
}

/* Thread 0, after an admission command whose LL collective was sent and
 * received within it (gpu_ll_early.cuh) and whose copy is ticket's: its
 * completion entry goes out before the admission fills the task, which the
 * host's answer does not need (the outputs are written; the slot is reused
 * only after DFCCL_GPU_SQ_DEPTH newer tickets, which this block admits
 * after this one; the copy's loads were consumed by its stores). */
__device__ static void gpu_ll_early_post(const dfccl_gpu_env_t *env, dfccl_gpu_block_t *blk,
                                         const gpu_shared_t *sh, const gpu_sched_t *s,
                                         dfccl_gpu_task_t *t)
{
    long long c0 = gpu_trace_clock(env);

    if (GPU_TRACE_ON(env)) {
        gpu_admit_stamp(t, s);
        gpu_ll_early_stamp(t, sh, s);
        t->algo = DFCCL_GPU_ALGO_LL;
    }
    gpu_cq_post(env, blk, sh->slot, DFCCL_OK, NULL, t, 1, c0);   /* LL: channel 0 alone */
}

/* Thread 0 of block 0, after each command: the ticket whose summary warp 1
 * reads beside the next control read, while nothing is in hand. */
__device__ static inline void gpu_ll_early_next(const dfccl_gpu_env_t *env,
                                                const dfccl_gpu_block_t *blk, gpu_shared_t *sh,
                                                const gpu_sched_t *s)
{
    if (blockIdx.x == 0)
        sh->llh_ticket = blk->nactive == 0 && !s->express ? blk->admitted : UINT64_MAX;
}

#endif
