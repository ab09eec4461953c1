/*
 * gpu_ll_attempt.cuh - an LL attempt (gpu_ll.cuh) as the scheduler sets it
 * and all threads run it: one command fills the context, sends on the
 * first attempt and receives until a deadline; whether it moved only the
 * threads can tell, each polling its own lines (gpu_ll_after, in
 * gpu_schedule.cuh, decides after it).
 * Included once, by daemon_kernel.cu, after gpu_admission.cuh.
 */
#ifndef DFCCL_GPU_LL_ATTEMPT_CUH
#define DFCCL_GPU_LL_ATTEMPT_CUH

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

#endif
