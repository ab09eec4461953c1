/*
 * gpu_trace.cuh - the latency trace's stamps (config gpu_trace): times
 * (globaltimer) and cycles (clock64) of a collective's way through the
 * daemon kernel, kept in its task and copied into its completion entry.
 *
 * Every stamp is taken only where GPU_TRACE_ON(env) (gpu_device.cuh): the
 * trace compiled in (configure --enable-gpu-trace) and on in this launch
 * (env->trace). Each helper tests it itself, so that the scheduler,
 * admission and completion read without the trace woven through them.
 * All are inlined: compiled in but off, each costs one test of a launch
 * parameter; not compiled in, nothing.
 */
#ifndef DFCCL_GPU_TRACE_CUH
#define DFCCL_GPU_TRACE_CUH

#include "kernels/gpu_device.cuh"
#include <stdint.h>
#include "backends/gpu/gpu_shared.h"
#include "kernels/gpu_ll_early.cuh"
#include "kernels/gpu_block_state.cuh"

/* Thread 0, trace: a command's times: when thread 0 had set it
 * (globaltimer), and clock64 when it began and when all threads were past
 * it. */
typedef struct gpu_cmd_times {
    uint64_t  ns;
    long long clk, clk_end;
} gpu_cmd_times_t;

/* clock64 where the trace is on, else 0: where a count of cycles begins. */
__device__ static inline long long gpu_trace_clock(const dfccl_gpu_env_t *env)
{
    return GPU_TRACE_ON(env) ? clock64() : 0;
}

/* Thread 0 of the threads that call: clock64 into *at. */
__device__ static inline void gpu_trace_clock0(const dfccl_gpu_env_t *env, long long *at)
{
    if (GPU_TRACE_ON(env) && threadIdx.x == 0) *at = clock64();
}

/* The cycles since c0 (gpu_trace_clock) into *to. */
__device__ static inline void gpu_trace_cycles(const dfccl_gpu_env_t *env, uint32_t *to,
                                               long long c0)
{
    if (GPU_TRACE_ON(env)) *to = (uint32_t)(clock64() - c0);
}

/* The time and clock64 now into *ns and *clk. */
__device__ static inline void gpu_trace_stamp(const dfccl_gpu_env_t *env, uint64_t *ns,
                                              long long *clk)
{
    if (GPU_TRACE_ON(env)) {
        *ns = gpu_now_ns();
        *clk = clock64();
    }
}

/* ---- the command ------------------------------------------------------- */

/* Thread 0: the command is set. */
__device__ static inline void gpu_trace_cmd_set(const dfccl_gpu_env_t *env, gpu_cmd_times_t *tm)
{
    if (GPU_TRACE_ON(env)) tm->ns = gpu_now_ns();
}

/* All threads: the command begins (thread 0 notes when). */
__device__ static inline void gpu_trace_cmd_begin(const dfccl_gpu_env_t *env, gpu_cmd_times_t *tm)
{
    gpu_trace_clock0(env, &tm->clk);
}

/* Thread 0: all threads are past the command; one that moved data adds
 * its time to the task's. */
__device__ static inline void gpu_trace_cmd_end(const dfccl_gpu_env_t *env, gpu_cmd_times_t *tm,
                                                dfccl_gpu_task_t *t, gpu_cmd_t cmd)
{
    if (GPU_TRACE_ON(env)) tm->clk_end = clock64();
    if (GPU_TRACE_ON(env) && cmd >= CMD_RING_SLICE) t->move_ns += gpu_now_ns() - tm->ns;
}

/* ---- admission --------------------------------------------------------- */

/* Thread 0: a new submission was seen; clk_now: gpu_trace_clock beside
 * the time read before the control read, as seen_ns. */
__device__ static inline void gpu_trace_seen(const dfccl_gpu_env_t *env, gpu_sched_t *s,
                                             long long clk_now)
{
    if (GPU_TRACE_ON(env)) {
        s->clk_seen = clk_now;   /* as seen_ns: before the control read */
        s->seen_cyc = s->ctrl_cyc;
    }
}

/* Thread 0, trace: the stamps of an admission into the task (its
 * completion entry copies them). */
__device__ static void gpu_admit_stamp(dfccl_gpu_task_t *t, const gpu_sched_t *s)
{
    t->t[DFCCL_GPU_T_SEEN] = s->seen_ns;
    t->t[DFCCL_GPU_T_ADMITTED] = gpu_now_ns();
    t->t[DFCCL_GPU_T_FIRST_MOVE] = 0;
    t->t[DFCCL_GPU_T_SENT] = 0;
    t->t[DFCCL_GPU_T_LAST_MOVE] = 0;
    t->t[DFCCL_GPU_T_RECEIVED] = 0;
    t->move_ns = 0;
    t->clk[0] = (uint64_t)s->clk_seen;
    for (int k = 0; k < DFCCL_GPU_C_COUNT; k++) t->cyc[k] = 0;
    t->cyc[DFCCL_GPU_C_POLL] = s->seen_cyc;
    t->cyc[DFCCL_GPU_C_ISSUE] = s->issue_cyc;
    t->cyc[DFCCL_GPU_C_COPY] = s->copy_cyc;
}

/* Thread 0: gpu_admit_stamp, for a task that admission fills (not done,
 * that is, not completed in the admission command already). */
__device__ static inline void gpu_trace_admitted(const dfccl_gpu_env_t *env, dfccl_gpu_task_t *t,
                                                 const gpu_sched_t *s, int done)
{
    if (GPU_TRACE_ON(env) && !done) gpu_admit_stamp(t, s);
}

/* Thread 0, after the admission command: its cycles from the submission
 * seen to the command, and of the copy. */
__device__ static inline void gpu_trace_admit_cmd(const dfccl_gpu_env_t *env, gpu_sched_t *s,
                                                  const gpu_ll_early_t *early,
                                                  const gpu_cmd_times_t *tm)
{
    if (GPU_TRACE_ON(env)) {
        s->issue_cyc = (uint32_t)(tm->clk - s->clk_seen);
        /* sent early: the copy's stores followed the receive */
        long long copy_from = early->go && early->sent ? early->clk_received : tm->clk;
        s->copy_cyc = (uint32_t)(tm->clk_end - copy_from);
    }
}

/* Thread 0: admission filled the task (unless done); its cycles since the
 * command's end, and from when its first attempt's wait counts. */
__device__ static inline void gpu_trace_admit_filled(const dfccl_gpu_env_t *env,
                                                     dfccl_gpu_task_t *t, int done,
                                                     long long clk_end)
{
    if (GPU_TRACE_ON(env) && !done) {
        long long c = clock64();
        t->cyc[DFCCL_GPU_C_ADMIT] = (uint32_t)(c - clk_end);
        t->clk[1] = (uint64_t)c;
    }
}

/* ---- moves ------------------------------------------------------------- */

/* Thread 0: the task's primitive moves now: its last move, and its first. */
__device__ static inline void gpu_trace_move(const dfccl_gpu_env_t *env, dfccl_gpu_task_t *t)
{
    if (GPU_TRACE_ON(env)) {
        t->t[DFCCL_GPU_T_LAST_MOVE] = gpu_now_ns();
        if (t->t[DFCCL_GPU_T_FIRST_MOVE] == 0) {
            t->t[DFCCL_GPU_T_FIRST_MOVE] = t->t[DFCCL_GPU_T_LAST_MOVE];
            t->cyc[DFCCL_GPU_C_START] = (uint32_t)(clock64() - (long long)t->clk[1]);
        }
    }
}

/* Thread 0: the task's last move was at ns. */
__device__ static inline void gpu_trace_last_move(const dfccl_gpu_env_t *env, dfccl_gpu_task_t *t,
                                                  uint64_t ns)
{
    if (GPU_TRACE_ON(env)) t->t[DFCCL_GPU_T_LAST_MOVE] = ns;
}

/* Thread 0: the one-shot command's phase is done (cmd: its send or its
 * receive). */
__device__ static inline void gpu_trace_oneshot(const dfccl_gpu_env_t *env, dfccl_gpu_task_t *t,
                                                gpu_cmd_t cmd, const gpu_cmd_times_t *tm)
{
    if (GPU_TRACE_ON(env)) {
        t->t[cmd == CMD_ONESHOT_SEND ? DFCCL_GPU_T_SENT : DFCCL_GPU_T_RECEIVED] = gpu_now_ns();
        t->cyc[cmd == CMD_ONESHOT_SEND ? DFCCL_GPU_C_SEND : DFCCL_GPU_C_RECEIVE] =
            (uint32_t)(tm->clk_end - tm->clk);
    }
}

/* ---- LL attempts ------------------------------------------------------- */

/* Thread 0: an LL attempt that sends is set at now. */
__device__ static inline void gpu_trace_ll_start(const dfccl_gpu_env_t *env, dfccl_gpu_task_t *t,
                                                 const gpu_shared_t *sh, uint64_t now)
{
    if (GPU_TRACE_ON(env) && sh->ll.send) {
        t->t[DFCCL_GPU_T_FIRST_MOVE] = now;
        t->cyc[DFCCL_GPU_C_START] = (uint32_t)(clock64() - (long long)t->clk[1]);
    }
}

/* All threads (thread 0 counts): the LL command began at clk_cmd. */
__device__ static inline void gpu_trace_ll_attempt(const dfccl_gpu_env_t *env, dfccl_gpu_task_t *t,
                                                   const gpu_shared_t *sh, long long clk_cmd)
{
    if (GPU_TRACE_ON(env) && threadIdx.x == 0) {
        uint32_t since = (uint32_t)(clk_cmd - (long long)t->clk[1]);
        /* sent early: the first attempt only receives */
        if (++t->cyc[DFCCL_GPU_C_ATTEMPTS] == 1 && !sh->ll.send)
            t->cyc[DFCCL_GPU_C_START] = since;
        else if (!sh->ll.send)
            t->cyc[DFCCL_GPU_C_RETRY] += since;
    }
}

/* All threads (thread 0 notes): the LL command's send is done; the
 * receive begins now (*clk_recv). */
__device__ static inline void gpu_trace_ll_sent(const dfccl_gpu_env_t *env, dfccl_gpu_task_t *t,
                                                long long *clk_recv, long long clk_cmd)
{
    if (GPU_TRACE_ON(env) && threadIdx.x == 0) {
        t->t[DFCCL_GPU_T_SENT] = gpu_now_ns();
        *clk_recv = clock64();
        t->cyc[DFCCL_GPU_C_SEND] = (uint32_t)(*clk_recv - clk_cmd);
    }
}

/* Thread 0: the LL command's receive, begun at clk_recv, is over; ok: it
 * found every line. */
__device__ static inline void gpu_trace_ll_received(const dfccl_gpu_env_t *env, dfccl_gpu_task_t *t,
                                                    const gpu_shared_t *sh, int ok,
                                                    long long clk_recv)
{
    if (GPU_TRACE_ON(env)) {
        long long c1 = clock64();
        if (ok) {
            t->t[DFCCL_GPU_T_RECEIVED] = gpu_now_ns();
            t->cyc[DFCCL_GPU_C_RECEIVE] = (uint32_t)(c1 - clk_recv);
            t->cyc[DFCCL_GPU_C_FIRST] = (uint32_t)(sh->ll.first_clk - clk_recv);
            t->cyc[DFCCL_GPU_C_LINES] = (uint32_t)(sh->ll.done_clk - clk_recv);
            t->cyc[DFCCL_GPU_C_POLLS] = sh->ll.polls;
        }
        t->clk[1] = (uint64_t)c1;   /* a retry's wait counts from here */
    }
}

/* ---- completion -------------------------------------------------------- */

/* Thread 0: this channel's part of slot's collective is over: its move
 * time into the channels' maximum and sum. */
__device__ static inline void gpu_trace_part_done(const dfccl_gpu_env_t *env,
                                                  dfccl_gpu_state_t *st, int slot,
                                                  const dfccl_gpu_task_t *t)
{
    if (GPU_TRACE_ON(env)) {
        atomicMax(&st->move_max[slot], (unsigned long long)t->move_ns);
        atomicAdd(&st->move_sum[slot], (unsigned long long)t->move_ns);
    }
}

/* Thread 0: the stamps of task t into its completion entry e, before the
 * marker; c0: clock64 when completing began. */
__device__ static inline void gpu_trace_cqe(const dfccl_gpu_env_t *env, dfccl_gpu_state_t *st,
                                            dfccl_gpu_cqe_t *e, int slot, const dfccl_gpu_task_t *t,
                                            uint32_t nparts, long long c0)
{
    if (GPU_TRACE_ON(env)) {
        for (int k = 0; k < DFCCL_GPU_T_FINISHED; k++) e->t[k] = t->t[k];
        e->t[DFCCL_GPU_T_FINISHED] = gpu_now_ns();
        e->move_max_ns = nparts > 1 ? atomicAdd(&st->move_max[slot], 0ull) : t->move_ns;
        e->move_sum_ns = nparts > 1 ? atomicAdd(&st->move_sum[slot], 0ull) : t->move_ns;
        e->algo_run = t->algo;
        e->nparts = nparts;
        for (int k = 0; k < DFCCL_GPU_C_COMPLETE; k++) e->cyc[k] = t->cyc[k];
        e->cyc[DFCCL_GPU_C_COMPLETE] = (uint32_t)(clock64() - c0);
        e->cyc[DFCCL_GPU_C_TOTAL] = (uint32_t)(clock64() - (long long)t->clk[0]);
        st->move_max[slot] = 0;
        st->move_sum[slot] = 0;
    }
}

#endif
