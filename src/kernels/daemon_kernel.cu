/*
 * daemon_kernel.cu - the GPU daemon: a persistent kernel whose block c runs
 * channel c of every collective the host submits.
 *
 * Thread 0 of a block is the scheduler: it admits submissions, walks the
 * block's active list in the global order with the policy of sched_policy.h, and
 * checks whether the current collective's next primitive can run (its peer
 * is ready). Every thread then moves that primitive's data; thread 0
 * publishes the counters. A primitive that would wait past its budget gives
 * the block to another collective; what it leaves behind is the task's saved
 * context in global memory (exec: step, round, offset; one-shot: phase).
 *
 * Four algorithms:
 * - ring: the engine's plan (plan.c) through per-channel FIFOs in device
 *   memory shared by CUDA IPC, every channel moving its part of each step
 *   (a FIFO to or from a rank on another node lives in pinned host memory
 *   instead, which the host's proxy thread moves over the network);
 * - one-shot, for small messages: each rank writes its contribution into
 *   every peer's inbox, then reduces (or gathers) all of them in rank order,
 *   so every rank computes bit-identical results;
 * - LL, the one-shot for the smallest: lines that carry their own flags, so
 *   the send and the wait for the peers' lines are one command of all
 *   threads, without counters or fences;
 * - direct, for large messages: every rank reads and writes its peers'
 *   buffers, mapped for the call.
 * This file holds the kernel's loop: thread 0 sets a command, all threads
 * run it, thread 0 acts on its outcome. The rest lives in kernels/*.cuh,
 * each a header that includes what it uses (test/kernels_headers.sh
 * compiles each alone); their functions are static, as the kernel is this
 * one translation unit and inlines what it calls:
 * - gpu_device.cuh: the core's device build, the counters' order, the
 *   clock, whether the latency trace is compiled in;
 * - gpu_movers.cuh: copies and reductions of all threads;
 * - gpu_oneshot.cuh, gpu_ll.cuh, gpu_ll_early.cuh, gpu_direct_move.cuh:
 *   the one-shot, LL, LL's early send, the direct path's movers;
 * - gpu_block_state.cuh: the command shared by the block, thread 0's state;
 * - gpu_trace.cuh: the latency trace's stamps (--enable-gpu-trace);
 * - gpu_completion.cuh: a collective's end and its completion entry;
 * - gpu_admission.cuh, gpu_ll_early_admit.cuh: new submissions into tasks,
 *   with LL's early send within that command;
 * - gpu_turn.cuh: a turn's budget, its moves, its end;
 * - gpu_ll_attempt.cuh, gpu_direct_steps.cuh: the LL and direct paths'
 *   steps and commands as the scheduler runs them;
 * - gpu_paths.cuh: the one table through which the scheduler and this loop
 *   reach every path;
 * - gpu_schedule.cuh: the scheduler, its passes, when the kernel leaves.
 *
 * The kernel leaves on its own when it has had nothing to do, or when
 * nothing moved, for a bounded time; its state stays in global memory and
 * the host launches it again when work is pending. So the application's
 * cudaDeviceSynchronize or cudaFree never waits for a peer forever.
 */
#include "kernels/gpu_device.cuh"
#include <cuda_runtime.h>
#include <stdint.h>
#include "backends/gpu/gpu_shared.h"
#include "kernels/kernels.h"
#include "kernels/gpu_block_state.cuh"
#include "kernels/gpu_trace.cuh"
#include "kernels/gpu_admission.cuh"
#include "kernels/gpu_paths.cuh"
#include "kernels/gpu_schedule.cuh"

__global__ void __launch_bounds__(512) dfccl_daemon_kernel(dfccl_gpu_env_t env)
{
    __shared__ gpu_shared_t sh;
    __shared__ dfccl_gpu_block_t blk_state;
    dfccl_gpu_block_t *blk = &blk_state;
    gpu_sched_t s;

    if (threadIdx.x == 0) gpu_launch_begin(&env, blk, &sh, &s);
    for (;;) {
        gpu_cmd_times_t tm = { 0, 0, 0 };   /* thread 0, trace */
        if (blockIdx.x == 0) {
            __syncthreads();   /* thread 0 set llh_ticket */
            gpu_path_prefetch(&env, &sh);
        }
        if (threadIdx.x == 0) {
            if (s.express) s.express = 0;   /* the command is set */
            else gpu_schedule(&env, blk, &sh, &s);
            if (sh.cmd == CMD_QUIT) {
                gpu_block_copy(&env.state->blocks[blockIdx.x], blk);
                if (blockIdx.x == 0) env.ctrl->left = env.launch_id;   /* the host looks now */
            } else {
                gpu_block_publish(&env, blk);
            }
            gpu_trace_cmd_set(&env, &tm);
        }
        __syncthreads();
        gpu_cmd_t cmd = sh.cmd;
        if (cmd == CMD_QUIT) return;
        gpu_trace_cmd_begin(&env, &tm);
        dfccl_gpu_task_t *t = cmd >= CMD_ADMIT ? gpu_task(&env, sh.slot) : NULL;
        /* admission is the block's, not a path's; every other command is */
        if (cmd == CMD_ADMIT)
            gpu_admit_command(&env, &sh, t);
        else
            gpu_path_command(&env, blk, &sh, t, cmd, tm.clk);
        __syncthreads();
        if (threadIdx.x == 0) {
            gpu_trace_cmd_end(&env, &tm, t, cmd);
            if (cmd == CMD_ADMIT) {
                gpu_admit_after(&env, blk, &sh, &s, t, &tm);
                s.express = gpu_path_express(&env, blk, &sh, &s);
            } else {
                gpu_path_after(&env, blk, &sh, &s, t, cmd, &tm);
            }
            gpu_mirror_raise(&env, blk, &s);
            gpu_path_next(&env, blk, &sh, &s);
        }
    }
}

extern "C" int dfccl_gpu_kernel_launch(const dfccl_gpu_env_t *env, unsigned blocks, unsigned threads,
                                       void *stream)
{
    dfccl_daemon_kernel<<<blocks, threads, 0, (cudaStream_t)stream>>>(*env);
    return (int)cudaGetLastError();
}

extern "C" int dfccl_gpu_kernel_per_sm(unsigned threads, int *per_sm)
{
    return (int)cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, dfccl_daemon_kernel, (int)threads, 0);
}
