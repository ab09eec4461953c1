/*
 * gpu_paths.cuh - the one table through which the scheduler
 * (gpu_schedule.cuh) and the block's loop (daemon_kernel.cu) reach the
 * kernel's paths. For each path: what thread 0 calls to learn whether the
 * turn's next primitive can run, setting the command (try); the command all
 * threads then run (command); what thread 0 does after it (after); and
 * whether its collective is done (done). A new path adds its row here and
 * its cases below; nothing else in the scheduler names a path's functions.
 *
 *   path      try (thread 0)          command (all threads)    after (thread 0)      done
 *   ring      dfccl_exec_slice_begin  gpu_slice_move           dfccl_exec_slice_end  dfccl_exec_done
 *   one-shot  gpu_oneshot_try         gpu_oneshot_send, _recv  gpu_oneshot_publish   phase 2
 *   LL        gpu_ll_try              gpu_ll_command           gpu_ll_after          phase 2
 *   direct    gpu_direct_try          gpu_direct_exchange,     gpu_direct_after      DIRECT_DONE
 *                                     gpu_direct_move_command
 *
 * LL's try only prepares an attempt (2): whether it moves, only its command
 * can tell, and its after decides what try decides for the others. Entries
 * outside a turn: gpu_path_express, right after an admission (a collective
 * that starts without a pass of the scheduler: LL); and LL's early send
 * around every command of block 0 (gpu_path_prefetch, gpu_path_next). The
 * early send itself runs within admission's command (gpu_ll_early_admit.cuh,
 * called by gpu_admission.cuh).
 *
 * Functions that branch on the path, not an array of function pointers:
 * each is inlined where it is called, so the code is what the scheduler and
 * the loop had when they named the paths themselves (the PTX is the same);
 * an indirect call would keep every path out of line, with its arguments
 * in local memory.
 */
#ifndef DFCCL_GPU_PATHS_CUH
#define DFCCL_GPU_PATHS_CUH

#include "kernels/gpu_device.cuh"
#include <stdint.h>
#include "core/exec.h"
#include "backends/gpu/gpu_shared.h"
#include "kernels/gpu_movers.cuh"
#include "kernels/gpu_direct_move.cuh"
#include "kernels/gpu_oneshot.cuh"
#include "kernels/gpu_ll_early.cuh"
#include "kernels/gpu_block_state.cuh"
#include "kernels/gpu_trace.cuh"
#include "kernels/gpu_ll_early_admit.cuh"
#include "kernels/gpu_ll_attempt.cuh"
#include "kernels/gpu_direct_steps.cuh"

/* ---- ring and one-shot: their scheduler's side ----------------------------
 * Here, not in gpu_oneshot.cuh: the command they set lives in the block's
 * shared state (gpu_block_state.cuh), which includes the one-shot's header
 * (through LL's). The ring's steps are the portable executor's (exec.h). */

/* Thread 0: the ring's next slice, if both its FIFOs are ready; a plan
 * file's program (a graph): a slice of any step that may move now. */
__device__ static inline int gpu_ring_try(dfccl_gpu_task_t *t, gpu_shared_t *sh)
{
    dfccl_exec_t *x = &t->exec;

    if (x->graph != NULL ? !dfccl_graph_slice_begin(x, &sh->slice)
                         : !dfccl_exec_slice_begin(x, &sh->slice))
        return 0;
    sh->cmd = CMD_RING_SLICE;
    return 1;
}

/* All threads, after a slice moved: a plan file's step that sends to
 * several peers gives the others what its first slot got. */
__device__ static void gpu_ring_multicast(const dfccl_exec_t *x, const dfccl_slice_t *slice)
{
    const dfccl_step_t *s;

    if (x->graph == NULL) return;
    s = &x->steps[x->step];
    if (s->send < 2) return;
    __syncthreads();   /* the first slot is whole */
    for (uint32_t k = 1; k < s->send; k++)
        gpu_copy(dfccl_exec_send_slot(x, s, k), NULL, slice->out, slice->count * x->esize);
}

/* Thread 0: the one-shot's phase, if it can run (gpu_oneshot_ready). */
__device__ static inline int gpu_oneshot_try(dfccl_gpu_task_t *t, const dfccl_gpu_comm_dev_t *c,
                                             gpu_shared_t *sh, uint32_t *peer)
{
    if (!gpu_oneshot_ready(t, c, peer)) return 0;
    sh->cmd = t->phase == 0 ? CMD_ONESHOT_SEND : CMD_ONESHOT_RECV;
    return 1;
}

/* ---- the table --------------------------------------------------------- */

/* Thread 0: can the turn's task t (in slot) move now? Sets the shared
 * command and returns 1 it moves, 2 an attempt whose command tells (LL),
 * 0 it cannot (s->wait_peer: whom it waits for). */
__device__ static int gpu_path_try(const dfccl_gpu_env_t *env, dfccl_gpu_task_t *t, int slot,
                                   gpu_shared_t *sh, gpu_sched_t *s)
{
    dfccl_gpu_comm_dev_t *c = &env->comms[t->comm_index];

    /* tests in a chain, not a switch: the compiler laid a switch's blocks
     * out otherwise, and this is the scheduler's code as it was */
    if (t->algo == DFCCL_GPU_ALGO_RING) {
        if (!gpu_ring_try(t, sh)) return 0;
    } else if (t->algo == DFCCL_GPU_ALGO_DIRECT) {
        if (!gpu_direct_try(env, t, slot, c, sh, &s->wait_peer)) return 0;
    } else if (t->algo == DFCCL_GPU_ALGO_LL) {
        return gpu_ll_try(env, t, slot, sh, s);
    } else {   /* DFCCL_GPU_ALGO_ONESHOT */
        if (!gpu_oneshot_try(t, c, sh, &s->wait_peer)) return 0;
    }
    sh->slot = slot;
    gpu_trace_move(env, t);
    return 1;
}

/* Thread 0: is the task's collective done on this channel? A one-shot or
 * LL one has sent and received (phase 2). */
__device__ static int gpu_path_done(dfccl_gpu_task_t *t)
{
    if (t->algo == DFCCL_GPU_ALGO_RING)
        return t->exec.graph != NULL ? dfccl_graph_done(&t->exec) : dfccl_exec_done(&t->exec);
    return t->phase >= (t->algo == DFCCL_GPU_ALGO_DIRECT ? (uint32_t)DIRECT_DONE : 2u);
}

/* All threads: the path's command cmd for task t (none for CMD_NONE).
 * clk: clock64 when the command began (trace). */
__device__ static __forceinline__ void gpu_path_command(const dfccl_gpu_env_t *env,
                                                        dfccl_gpu_block_t *blk, gpu_shared_t *sh,
                                                        dfccl_gpu_task_t *t, gpu_cmd_t cmd,
                                                        long long clk)
{
    switch (cmd) {
    case CMD_RING_SLICE:
        gpu_slice_move(&t->exec, &sh->slice);
        gpu_ring_multicast(&t->exec, &sh->slice);
        break;
    case CMD_ONESHOT_SEND:
        gpu_oneshot_send(t, &env->comms[t->comm_index]);
        break;
    case CMD_ONESHOT_RECV:
        gpu_oneshot_recv(t, &env->comms[t->comm_index]);
        break;
    case CMD_LL:
        gpu_ll_command(env, sh, t, clk);
        break;
    case CMD_DIRECT_GATHER:
    case CMD_DIRECT_TABLE:
        gpu_direct_exchange(env, t, sh->slot, cmd);
        break;
    case CMD_DIRECT_MOVE:
        gpu_direct_move_command(env, blk, sh, t);
        break;
    default:
        break;
    }
}

/* Thread 0, after all threads ran the path's command cmd for task t (tm:
 * its times, for the trace). A path's command moved data or a step: the
 * scheduler's next nap starts short. */
__device__ static __forceinline__ void gpu_path_after(const dfccl_gpu_env_t *env,
                                                      dfccl_gpu_block_t *blk, gpu_shared_t *sh,
                                                      gpu_sched_t *s, dfccl_gpu_task_t *t,
                                                      gpu_cmd_t cmd, const gpu_cmd_times_t *tm)
{
    switch (cmd) {
    case CMD_RING_SLICE:
        if (t->exec.graph != NULL) dfccl_graph_slice_end(&t->exec, &sh->slice);
        else dfccl_exec_slice_end(&t->exec, &sh->slice);
        s->relax_ns = 32;
        break;
    case CMD_ONESHOT_SEND:
    case CMD_ONESHOT_RECV:
        gpu_trace_oneshot(env, t, cmd, tm);
        gpu_oneshot_publish(t, &env->comms[t->comm_index]);
        s->relax_ns = 32;
        break;
    case CMD_LL:
        gpu_ll_after(env, blk, s, t, sh);
        s->relax_ns = 32;
        break;
    case CMD_DIRECT_GATHER:
    case CMD_DIRECT_TABLE:
    case CMD_DIRECT_MOVE:
        gpu_direct_after(env, t, sh->slot, cmd, sh);
        s->relax_ns = 32;
        break;
    default:
        break;
    }
}

/* Thread 0, right after an admission: does the admitted collective start
 * at once, its command set, without a pass of the scheduler? Only LL's
 * can (gpu_ll_express). */
__device__ static inline int gpu_path_express(const dfccl_gpu_env_t *env, dfccl_gpu_block_t *blk,
                                              gpu_shared_t *sh, gpu_sched_t *s)
{
    return gpu_ll_express(env, blk, sh, s);
}

/* All threads of block 0, before thread 0 schedules: LL's early send needs
 * the summary of the ticket thread 0 named, which warp 1 reads now while
 * thread 0 reads the control words (gpu_ll_early.cuh). */
__device__ static inline void gpu_path_prefetch(const dfccl_gpu_env_t *env, gpu_shared_t *sh)
{
    gpu_ll_head_fetch(env, sh->llh_ticket, sh->llh);
}

/* Thread 0, after every command: which summary warp 1 reads next. */
__device__ static inline void gpu_path_next(const dfccl_gpu_env_t *env, const dfccl_gpu_block_t *blk,
                                            gpu_shared_t *sh, const gpu_sched_t *s)
{
    gpu_ll_early_next(env, blk, sh, s);
}

#endif
