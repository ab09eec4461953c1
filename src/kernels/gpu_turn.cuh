/*
 * gpu_turn.cuh - a turn: the block given to one collective at a time by its
 * scheduler (thread 0), with a budget from the policy of sched_policy.h;
 * how a turn begins, moves, gives way and ends (a collective stuck past the
 * timeout fails there). The scheduler (gpu_schedule.cuh) and the LL path,
 * whose attempt decides after its command (gpu_ll_attempt.cuh), both use it.
 */
#ifndef DFCCL_GPU_TURN_CUH
#define DFCCL_GPU_TURN_CUH

#include "kernels/gpu_device.cuh"
#include <stdint.h>
#include "core/sched_policy.h"
#include "backends/gpu/gpu_shared.h"
#include "kernels/gpu_block_state.cuh"
#include "kernels/gpu_completion.cuh"

/* The policy's budgets (sched_policy.h) from the launch's settings. */
__device__ static inline dfccl_sched_budgets_t gpu_budgets(const dfccl_gpu_env_t *env)
{
    dfccl_sched_budgets_t b = { env->budget_head_ns, env->budget_ns, env->budget_min_ns,
                                env->budget_max_ns };
    return b;
}

/* Thread 0: the collective at index i of the active list, whose adapted
 * budget is budget_ns, gets the block. */
__device__ static void gpu_turn_begin(const dfccl_gpu_env_t *env, gpu_sched_t *s, int i,
                                      uint64_t budget_ns)
{
    dfccl_sched_budgets_t b = gpu_budgets(env);

    s->turn = i;
    s->turn_budget = dfccl_sched_turn_budget(&b, budget_ns, s->first_of_pass);
    s->first_of_pass = 0;
    s->turn_blocked_since = 0;
    s->turn_moved = 0;
}

/* Thread 0: the turn's collective moved data. */
__device__ static inline void gpu_turn_moved(gpu_sched_t *s, dfccl_gpu_task_t *t,
                                             dfccl_gpu_block_t *blk, uint64_t now)
{
    s->turn_moved = 1;
    s->turn_blocked_since = 0;
    t->blocked_since = 0;
    blk->busy_ns = now;
}

/* Thread 0, in a turn that could not move: give way after the budget, or
 * at once when new work arrived or the host wants the kernel out. */
__device__ static inline int gpu_turn_gives_way(const dfccl_gpu_env_t *env,
                                                const dfccl_gpu_block_t *blk,
                                                const gpu_sched_t *s, uint64_t now, ulonglong2 ctrl)
{
    return now - s->turn_blocked_since >= s->turn_budget || ctrl.x > blk->admitted ||
           ctrl.y >= env->launch_id;
}

/* Thread 0: the turn gave way. Its collective's budget adapts; one blocked
 * past the timeout fails, and its communicator with it; the pass goes on
 * after it, or from the head when it moved. */
__device__ static void gpu_end_turn(const dfccl_gpu_env_t *env, dfccl_gpu_block_t *blk,
                                    gpu_sched_t *s, uint64_t now)
{
    dfccl_sched_budgets_t b = gpu_budgets(env);
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
            gpu_finish(env, blk, s->turn, DFCCL_ERR_TIMEOUT, &g, 0);
            s->pos = s->turn;  /* the list moved up by one */
            s->turn = -1;
            return;
        }
        s->pos = s->turn + 1;
    }
    s->turn = -1;
}

#endif
