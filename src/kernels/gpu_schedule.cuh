/*
 * gpu_schedule.cuh - the block's scheduler (thread 0): it walks the active
 * list in the global order with the policy of sched_policy.h, gives the
 * block to one collective at a time (a turn, with a budget), checks
 * whether the turn's next primitive can run, and sets the command all
 * threads run; it admits new work, fails collectives stuck past the
 * timeout, and decides (block 0) when the kernel leaves. It reaches the
 * paths (ring, one-shot, LL, direct) only through gpu_paths.cuh's table,
 * and a turn's bookkeeping is gpu_turn.cuh's.
 */
#ifndef DFCCL_GPU_SCHEDULE_CUH
#define DFCCL_GPU_SCHEDULE_CUH

#include "kernels/gpu_device.cuh"
#include <stdint.h>
#include "core/wait_policy.h"
#include "backends/gpu/gpu_shared.h"
#include "kernels/gpu_block_state.cuh"
#include "kernels/gpu_trace.cuh"
#include "kernels/gpu_completion.cuh"
#include "kernels/gpu_admission.cuh"
#include "kernels/gpu_turn.cuh"
#include "kernels/gpu_paths.cuh"

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

/* Block 0's thread 0: has the whole kernel had nothing to do for the idle
 * bound, or moved nothing for the stuck bound? Then it leaves (all blocks
 * together, so no channel is missing when work comes) and gives the GPU
 * back to the application's synchronisations until the host launches it
 * again. */
__device__ static int gpu_should_quit(const dfccl_gpu_env_t *env, const dfccl_gpu_block_t *blk,
                                      uint64_t now, ulonglong2 ctrl)
{
    uint64_t last = 0, nearer = env->stuck_quit_ns < env->idle_quit_ns ? env->stuck_quit_ns
                                                                       : env->idle_quit_ns;
    int active = 0;

    /* Block 0 busy within the nearer bound: no, without the scan. Its reads
     * of every block's state come one after another: scanning on every
     * check made the smallest allreduce slower with every block added */
    if (now - blk->busy_ns <= nearer) return 0;
    for (unsigned b = 0; b < gridDim.x; b++) {   /* ours as it is, the others' as published */
        const dfccl_gpu_block_t *o = b == 0 ? blk : &env->state->blocks[b];
        if (o->busy_ns > last) last = o->busy_ns;
        active |= o->nactive != 0;
    }
    if (ctrl.x > blk->admitted) return 0;
    /* a block may have stamped after our clock was read */
    if (!(now > last && now - last > (active ? env->stuck_quit_ns : env->idle_quit_ns))) return 0;
    /* An application stream waits for a stream-ordered collective: the
     * kernel stays, since a launch issued after that wait may be queued
     * behind it by CUDA (stream.c). Announce, then look (the host writes
     * hold, then looks at quitting). */
    env->ctrl->quitting = env->launch_id;
    __threadfence_system();
    if (env->ctrl->hold != 0) {
        env->ctrl->quitting = 0;
        return 0;
    }
    return 1;
}

/* Thread 0: decide what the block does next. */
__device__ static void gpu_schedule(const dfccl_gpu_env_t *env, dfccl_gpu_block_t *blk,
                                    gpu_shared_t *sh, gpu_sched_t *s)
{
    sh->cmd = CMD_NONE;
    for (;;) {
        uint64_t now = gpu_now_ns();
        long long clk_now = gpu_trace_clock(env);   /* beside now: the totals' rate */

        if (s->turn >= 0) {
            int slot = blk->active[s->turn];
            dfccl_gpu_task_t *t = gpu_task(env, slot);
            if (gpu_path_done(t)) {
                gpu_finish(env, blk, s->turn, DFCCL_OK, NULL, 0);
                s->turn = -1;
                s->pos = 0;
                blk->busy_ns = now;
                continue;
            }
            int moves = gpu_path_try(env, t, slot, sh, s);
            if (moves == 2) return;   /* an attempt: its command tells (gpu_path_after) */
            if (moves) {
                gpu_turn_moved(s, t, blk, now);
                return;
            }
            if (s->turn_blocked_since == 0) s->turn_blocked_since = now;
            if (gpu_turn_gives_way(env, blk, s, now, gpu_ctrl_poll(env, s, now, 1, blk->admitted)))
                gpu_end_turn(env, blk, s, now);
            else
                __nanosleep(64);
            continue;
        }
        ulonglong2 ctrl = gpu_ctrl_poll(env, s, now, blk->nactive != 0, blk->admitted);
        if (ctrl.y >= env->launch_id ||
            (blockIdx.x != 0 && env->state->quit_launch == env->launch_id)) {
            if (ctrl.y >= env->launch_id) env->state->quit_launch = env->launch_id;   /* everyone */
            sh->cmd = CMD_QUIT;
            return;
        }
        if (ctrl.x > blk->admitted) {
            if (gpu_admit_seen(env, blk, sh, s, now, clk_now)) return;   /* CMD_ADMIT */
            continue;   /* not this block's collective */
        }
        /* the next runnable collective of this pass */
        while (s->pos < (int)blk->nactive && !gpu_runnable(env, blk, s->pos)) s->pos++;
        if (s->pos < (int)blk->nactive) {
            dfccl_gpu_task_t *t = gpu_task(env, blk->active[s->pos]);
            int32_t broken = env->comms[t->comm_index].broken;
            if (broken) {
                dfccl_gpu_diag_t g = {};
                g.channel = blockIdx.x;
                g.waiting = 0xffffffffu;   /* failed because an earlier one did, or a peer */
                gpu_finish(env, blk, s->pos,
                           broken == DFCCL_GPU_BROKEN_PEER       ? DFCCL_ERR_PEER_FAILED
                           : broken == DFCCL_GPU_BROKEN_MISMATCH ? DFCCL_ERR_MISMATCH
                                                                 : DFCCL_ERR_TIMEOUT, &g, 0);
                continue;
            }
            gpu_turn_begin(env, s, s->pos, t->budget_ns);
            continue;
        }
        /* a pass without progress: back off a little; block 0 decides for
         * the whole kernel whether to leave (with nothing in hand it read
         * the control words in this pass) */
        s->pos = 0;
        s->first_of_pass = 1;
        if (blockIdx.x == 0 && now - s->quit_check_ns >= GPU_QUIT_CHECK_NS) {
            s->quit_check_ns = now;
            if (gpu_should_quit(env, blk, now, blk->nactive == 0 ? ctrl : gpu_ctrl_read(env))) {
                env->state->quit_launch = env->launch_id;
                __threadfence();
                sh->cmd = CMD_QUIT;
                return;
            }
        }
        {
            /* waiting for peers: half the idle nap, so a late peer is seen sooner */
            uint32_t cap = blk->nactive ? env->poll_max_ns / 2 : env->poll_max_ns;
            if (s->relax_ns > cap) s->relax_ns = cap;
            if (s->relax_ns > 0) __nanosleep(s->relax_ns);
            if (s->relax_ns < cap) s->relax_ns = s->relax_ns ? 2 * s->relax_ns : 32;
        }
        return;   /* let the block loop (and see new work) */
    }
}

/* Thread 0, as a launch begins: the block's state from global memory, the
 * scheduler's afresh (a launch starts the quit bounds again), nothing in
 * the LL context. */
__device__ static void gpu_launch_begin(const dfccl_gpu_env_t *env, dfccl_gpu_block_t *blk,
                                        gpu_shared_t *sh, gpu_sched_t *s)
{
    uint64_t now = gpu_now_ns();
    gpu_block_copy(blk, &env->state->blocks[blockIdx.x]);
    s->turn = -1;
    s->pos = 0;
    s->first_of_pass = 1;
    s->turn_budget = s->turn_blocked_since = 0;
    s->turn_moved = 0;
    blk->busy_ns = now;   /* a launch starts the bounds afresh */
    s->relax_ns = 32;
    s->wait_peer = 0;
    s->seen_ns = 0;
    s->express = 0;
    s->ctrl = make_ulonglong2(0, 0);
    s->next = make_ulonglong2(UINT64_MAX, 0);
    s->ctrl_ns = now - GPU_CTRL_MAX_AGE_NS;   /* read at once */
    s->quit_check_ns = now;
    s->clk_seen = 0;
    s->ctrl_cyc = s->seen_cyc = s->issue_cyc = s->copy_cyc = 0;
    s->mirror_due = 0;
    gpu_block_publish(env, blk);   /* block 0's quit decision sees the fresh start */
    sh->ll.ctx.task = NULL;
    sh->early.maybe = sh->early.go = 0;
    sh->llh_ticket = blockIdx.x == 0 ? blk->admitted : UINT64_MAX;
}

#endif
