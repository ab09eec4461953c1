/*
 * gpu_ll_attempt.cuh - an LL attempt (gpu_ll.cuh) as the scheduler sets it
 * and all threads run it: one command fills the context, sends on the
 * first attempt and receives until a deadline; whether it moved only the
 * threads can tell, each polling its own lines, so thread 0 decides after
 * the command (gpu_ll_after) what the scheduler decides before it for the
 * other paths. The LL path's entries in gpu_paths.cuh.
 */
#ifndef DFCCL_GPU_LL_ATTEMPT_CUH
#define DFCCL_GPU_LL_ATTEMPT_CUH

#include "kernels/gpu_device.cuh"
#include <stdint.h>
#include "core/exec.h"
#include "backends/gpu/gpu_shared.h"
#include "kernels/gpu_ll.cuh"
#include "kernels/gpu_ll_early.cuh"
#include "kernels/gpu_block_state.cuh"
#include "kernels/gpu_trace.cuh"
#include "kernels/gpu_completion.cuh"
#include "kernels/gpu_admission.cuh"
#include "kernels/gpu_turn.cuh"

/* Thread 0: an LL attempt. Whether it moves only all threads can tell (each
 * polls its own lines), so the command runs and gpu_ll_after decides. Its
 * wait for lines ends with the turn's budget, and after at most
 * env->ll_wait_ns (config gpu_ll_wait_ns), when the scheduler looks for new
 * work. */
__device__ static void gpu_ll_prepare(const dfccl_gpu_env_t *env, dfccl_gpu_task_t *t, int slot,
                                      gpu_shared_t *sh, const gpu_sched_t *s, int send,
                                      uint32_t comm, uint64_t k)
{
    uint64_t now = gpu_now_ns(), left = s->turn_budget;

    if (s->turn_blocked_since != 0) {
        uint64_t spent = now - s->turn_blocked_since;
        left = spent < left ? left - spent : 0;
    }
    if (left > env->ll_wait_ns) left = env->ll_wait_ns;
    sh->cmd = CMD_LL;
    sh->slot = slot;
    sh->ll.start = now;
    sh->ll.deadline = now + left;
    sh->ll.send = send;
    sh->ll.comm = comm;
    sh->ll.k = k;
    sh->ll.fill = sh->ll.ctx.task != t || sh->ll.ctx.k != sh->ll.k;
    sh->ll.ok = 0;
    sh->ll.lagging = -1;
    gpu_trace_ll_start(env, t, sh, now);
}

/* All threads: the LL command (CMD_LL) for task t: the context filled
 * where it is not t's, the send on the first attempt, then the receive
 * until the deadline; thread 0 leaves in sh->ll.ok whether every line was
 * there. clk_cmd: clock64 when the command began (trace). */
__device__ static void gpu_ll_command(const dfccl_gpu_env_t *env, gpu_shared_t *sh,
                                      dfccl_gpu_task_t *t, long long clk_cmd)
{
    int ok;
    long long clk_recv = clk_cmd;   /* thread 0, trace: the receive began */

    gpu_trace_ll_attempt(env, t, sh, clk_cmd);
    if (sh->ll.fill) {
        gpu_ll_fill(&sh->ll.ctx, t, &env->comms[sh->ll.comm], sh->ll.k);
        __syncthreads();
    }
    if (sh->ll.send) {
        gpu_ll_send(&sh->ll.ctx, 0, 0);
        __syncthreads();   /* in place: everything read before outputs are written */
        gpu_trace_ll_sent(env, t, &clk_recv, clk_cmd);
    }
    ok = gpu_ll_recv(&sh->ll.ctx, sh->ll.deadline, &sh->ll.lagging, &sh->ll.first_clk,
                     &sh->ll.done_clk, &sh->ll.polls);
    if (threadIdx.x == 0) {
        sh->ll.ok = ok;
        gpu_trace_ll_received(env, t, sh, ok, clk_recv);
    }
}

/* Thread 0: the scheduler's look at an LL collective: an attempt (2: its
 * command tells whether it moves), unless its inputs are not to be read
 * yet (0). */
__device__ static inline int gpu_ll_try(const dfccl_gpu_env_t *env, dfccl_gpu_task_t *t, int slot,
                                        gpu_shared_t *sh, gpu_sched_t *s)
{
    if (t->phase == 0 && t->held) {   /* its inputs are not to be read yet */
        if (!gpu_ll_released(env, t->desc.ticket)) {
            t->exec.waiting = DFCCL_WAIT_HOST;
            return 0;
        }
        t->held = 0;
    }
    gpu_ll_prepare(env, t, slot, sh, s, t->phase == 0, t->comm_index, t->small_k);
    return 2;
}

/* Thread 0, after an LL attempt: complete at once (no pass of the scheduler
 * in between), or wait as any turn whose primitive cannot run. */
__device__ static void gpu_ll_after(const dfccl_gpu_env_t *env, dfccl_gpu_block_t *blk,
                                    gpu_sched_t *s, dfccl_gpu_task_t *t, const gpu_shared_t *sh)
{
    uint64_t now = gpu_now_ns();

    if (sh->ll.send || sh->ll.ok) {   /* the send went out, or the receive */
        t->phase = sh->ll.ok ? 2 : 1;
        gpu_turn_moved(s, t, blk, now);
    }
    if (sh->ll.ok) {
        t->exec.waiting = DFCCL_WAIT_NONE;
        gpu_trace_last_move(env, t, sh->ll.start);
        gpu_finish(env, blk, s->turn, DFCCL_OK, NULL, 1);   /* LL: channel 0 alone */
        s->turn = -1;
        s->pos = 0;
        return;
    }
    t->exec.waiting = DFCCL_WAIT_RECV;
    s->wait_peer = (uint32_t)sh->ll.lagging;
    if (s->turn_blocked_since == 0) s->turn_blocked_since = sh->ll.start;
    if (gpu_turn_gives_way(env, blk, s, now, gpu_ctrl_poll(env, s, now, 1, blk->admitted)))
        gpu_end_turn(env, blk, s, now);
}

/* Thread 0, right after an admission: an LL collective that is all the
 * block has starts at once, without a pass of the scheduler, which would
 * pick it anyway when no newer submission is known (the control words as
 * last read) and its communicator has not failed. What it needs comes
 * from the admission, in shared memory: reading back the task in global
 * memory would cost a trip per field. */
__device__ static int gpu_ll_express(const dfccl_gpu_env_t *env, dfccl_gpu_block_t *blk,
                                     gpu_shared_t *sh, gpu_sched_t *s)
{
    const dfccl_gpu_desc_t *d = (const dfccl_gpu_desc_t *)sh->head;
    dfccl_gpu_task_t *t;

    if (blk->nactive != 1 || s->turn >= 0 || d->algo != DFCCL_GPU_ALGO_LL ||
        blk->active[0] != (uint16_t)sh->slot || s->ctrl.x > blk->admitted ||
        s->ctrl.y >= env->launch_id || sh->admit_broken || (d->held && !sh->admit_sent))
        return 0;   /* held: gpu_ll_try asks the host first */
    t = gpu_task(env, sh->slot);
    s->pos = 0;
    gpu_turn_begin(env, s, 0, env->budget_ns);   /* as admission set it */
    gpu_ll_prepare(env, t, sh->slot, sh, s, !sh->admit_sent, d->comm_index, sh->admit_k);
    return 1;
}

#endif
