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
 * run it, thread 0 acts on its outcome. The rest is included here (one
 * translation unit), in the order each part needs the ones before:
 * - gpu_movers.cuh: copies and reductions of all threads;
 * - gpu_direct_move.cuh, gpu_oneshot.cuh, gpu_ll.cuh, gpu_ll_early.cuh:
 *   the direct path's movers, the one-shot, LL, LL's early send;
 * - gpu_block_state.cuh: the command shared by the block, thread 0's state;
 * - gpu_trace.cuh: the latency trace's stamps;
 * - gpu_completion.cuh: a collective's end and its completion entry;
 * - gpu_ll_early_admit.cuh: LL's early send within the admission command;
 * - gpu_admission.cuh: the control words, the copy of submissions, tasks;
 * - gpu_ll_attempt.cuh: an LL attempt's command;
 * - gpu_direct_steps.cuh: the direct path's steps and commands;
 * - gpu_schedule.cuh: the scheduler, its turns, when the kernel leaves.
 *
 * The kernel leaves on its own when it has had nothing to do, or when
 * nothing moved, for a bounded time; its state stays in global memory and
 * the host launches it again when work is pending. So the application's
 * cudaDeviceSynchronize or cudaFree never waits for a peer forever.
 */
#include <cuda_runtime.h>
#include <stdint.h>

#define DFCCL_HD __device__
#define DFCCL_LOAD_ACQUIRE(p) gpu_load_acquire(p)
#define DFCCL_STORE_RELEASE(p, v) gpu_store_release((p), (v))

/* The FIFO counters' order, at system scope for every FIFO: the other end
 * is another process's kernel on this or another GPU, or, for a FIFO to
 * another node in pinned host memory, the proxy thread on the CPU. The
 * release is thread 0's after the block's barrier, so the slot's bytes that
 * all threads wrote (and the slot's length, for the proxy) are visible
 * system-wide before the tail that publishes them; the acquire's fence
 * keeps the slot's loads after the counter's, and the barrier that follows
 * hands that order to the other threads. The proxy writes a received slot
 * and then the tail with release order, and frees a sent slot through the
 * head the same way. */

__device__ static inline uint64_t gpu_load_acquire(volatile uint64_t *p)
{
    uint64_t v = *p;
    __threadfence_system();
    return v;
}

__device__ static inline void gpu_store_release(volatile uint64_t *p, uint64_t v)
{
    __threadfence_system();
    *p = v;
}

#include "backends/gpu/gpu_shared.h"
#include "kernels/kernels.h"
#include "core/reduce.h"
#include "core/sched_policy.h"
#include "core/wait_policy.h"

__device__ static inline uint64_t gpu_now_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

#include "kernels/gpu_movers.cuh"
#include "kernels/gpu_direct_move.cuh"
#include "kernels/gpu_oneshot.cuh"
#include "kernels/gpu_ll.cuh"
#include "kernels/gpu_ll_early.cuh"
#include "kernels/gpu_block_state.cuh"
#include "kernels/gpu_trace.cuh"
#include "kernels/gpu_completion.cuh"
#include "kernels/gpu_ll_early_admit.cuh"
#include "kernels/gpu_admission.cuh"
#include "kernels/gpu_ll_attempt.cuh"
#include "kernels/gpu_direct_steps.cuh"
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
            gpu_ll_head_fetch(&env, sh.llh_ticket, sh.llh);
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
        switch (cmd) {
        case CMD_ADMIT:
            gpu_admit_command(&env, &sh, t);
            break;
        case CMD_RING_SLICE:
            gpu_slice_move(&t->exec, &sh.slice);
            break;
        case CMD_ONESHOT_SEND:
            gpu_oneshot_send(t, &env.comms[t->comm_index]);
            break;
        case CMD_ONESHOT_RECV:
            gpu_oneshot_recv(t, &env.comms[t->comm_index]);
            break;
        case CMD_LL:
            gpu_ll_command(&env, &sh, t, tm.clk);
            break;
        case CMD_DIRECT_GATHER:
        case CMD_DIRECT_TABLE:
            gpu_direct_exchange(&env, t, sh.slot, cmd);
            break;
        case CMD_DIRECT_MOVE:
            gpu_direct_move_command(&env, blk, &sh, t);
            break;
        default:
            break;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            gpu_trace_cmd_end(&env, &tm, t, cmd);
            switch (cmd) {
            case CMD_ADMIT:
                gpu_admit_after(&env, blk, &sh, &s, t, &tm);
                s.express = gpu_express(&env, blk, &sh, &s);
                break;
            case CMD_RING_SLICE:
                dfccl_exec_slice_end(&t->exec, &sh.slice);
                s.relax_ns = 32;
                break;
            case CMD_ONESHOT_SEND:
            case CMD_ONESHOT_RECV:
                gpu_trace_oneshot(&env, t, cmd, &tm);
                gpu_oneshot_publish(t, &env.comms[t->comm_index]);
                s.relax_ns = 32;
                break;
            case CMD_LL:
                gpu_ll_after(&env, blk, &s, t, &sh);
                s.relax_ns = 32;
                break;
            case CMD_DIRECT_GATHER:
            case CMD_DIRECT_TABLE:
            case CMD_DIRECT_MOVE:
                gpu_direct_after(&env, t, sh.slot, cmd, &sh);
                s.relax_ns = 32;
                break;
            default:
                break;
            }
            gpu_mirror_raise(&env, blk, &s);
            gpu_ll_early_next(&env, blk, &sh, &s);
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
