/*
 * gpu_direct_steps.cuh - the direct path's steps as the block's scheduler (thread 0)
 * runs them: the handshake over the board and the host, the chunks, the
 * finish; and the commands all threads run for it: the copies for the
 * handshake, the chunks' moves.
 */
#ifndef DFCCL_GPU_DIRECT_STEPS_CUH
#define DFCCL_GPU_DIRECT_STEPS_CUH

#include "kernels/gpu_device.cuh"
#include <stdint.h>
#include "core/exec.h"
#include "backends/gpu/gpu_shared.h"
#include "kernels/gpu_direct_move.cuh"
#include "kernels/gpu_oneshot.cuh"
#include "kernels/gpu_block_state.cuh"
#include "kernels/gpu_admission.cuh"

/* Thread 0: where this channel's chunk at element `at` comes from and goes
 * (gpu_direct_layout gave at, end, chunk and the stride to the next). */
__device__ static void gpu_direct_chunk(const dfccl_gpu_env_t *env, const dfccl_gpu_task_t *t,
                                        int slot, const dfccl_gpu_comm_dev_t *c, gpu_shared_t *sh,
                                        uint64_t at, uint64_t end, uint64_t chunk, uint64_t stride)
{
    const dfccl_gpu_desc_t *d = &t->desc;
    /* volatile: the table was written by block 0; past L1 */
    const volatile dfccl_gpu_direct_tab_t *tab = &env->state->direct[slot];
    uint64_t e = d->esize;
    int me = c->rank, n = c->size;

    sh->direct.count = chunk < end - at ? chunk : end - at;
    sh->direct.at = at;
    sh->direct.end = end;
    sh->direct.stride = stride;
    sh->direct.nout = 0;
    switch (t->type) {
    case DFCCL_COLL_ALLREDUCE:
        for (int q = 0; q < n; q++) {
            sh->direct.ins[q] = tab->in[q] + at * e;
            sh->direct.outs[q] = tab->out[q] + at * e;
        }
        sh->direct.nin = sh->direct.nout = n;
        break;
    case DFCCL_COLL_ALLGATHER: {
        char *from = tab->in[me] + at * e;
        sh->direct.ins[0] = from;
        sh->direct.nin = 1;
        for (int q = 0; q < n; q++) {
            char *to = tab->out[q] + ((uint64_t)me * d->count + at) * e;
            if (to != from) sh->direct.outs[sh->direct.nout++] = to;   /* in place: ours is there */
        }
        break;
    }
    default: {
        uint64_t displ = gpu_rs_displ(t, me);
        for (int q = 0; q < n; q++) sh->direct.ins[q] = tab->in[q] + (displ + at) * e;
        sh->direct.nin = n;
        sh->direct.outs[0] = tab->out[me] + at * e;
        sh->direct.nout = 1;
        break;
    }
    }
}

/* Thread 0: from one chunk of the channel's piece to the next (the same
 * distance further in every input and output). Called only when the next
 * chunk begins before the end, so the one just moved was a whole chunk:
 * count stays, but for the last chunk, which may be shorter. */
__device__ static void gpu_direct_next_chunk(gpu_shared_t *sh, uint64_t esize)
{
    uint64_t step = sh->direct.stride * esize, left;

    sh->direct.at += sh->direct.stride;
    left = sh->direct.end - sh->direct.at;
    sh->direct.count = sh->direct.count < left ? sh->direct.count : left;
    for (int q = 0; q < sh->direct.nin; q++) sh->direct.ins[q] += step;
    for (int j = 0; j < sh->direct.nout; j++) sh->direct.outs[j] += step;
}

/* Thread 0: the direct collective's next primitive, if it can run; the
 * agreement steps that move no data run here at once. Records the peer
 * it waits for (our own rank: our host, or channel 0). */
__device__ static int gpu_direct_try(const dfccl_gpu_env_t *env, dfccl_gpu_task_t *t, int slot,
                                     dfccl_gpu_comm_dev_t *c, gpu_shared_t *sh, uint32_t *peer)
{
    int me = c->rank, n = c->size;
    uint64_t k = t->direct_k, tag = t->desc.ticket + 1;
    dfccl_gpu_board_entry_t *mine = gpu_board_entry(c, me, k);
    volatile dfccl_gpu_direct_tab_t *tab = &env->state->direct[slot];
    volatile uint64_t *done = gpu_board(c, me)->done[blockIdx.x];

    t->exec.waiting = DFCCL_WAIT_RECV;
    switch (t->phase) {
    case DIRECT_PUBLISH:
        mine->exported = t->desc.exported;
        __threadfence_system();
        mine->tag = k;
        t->phase = DIRECT_GATHER;
        /* fall through */
    case DIRECT_GATHER:
        for (int p = 0; p < n; p++) {
            if (p != me && gpu_board_entry(c, p, k)->tag != k) {
                *peer = (uint32_t)p;
                return 0;
            }
        }
        __threadfence_system();
        sh->cmd = CMD_DIRECT_GATHER;
        break;
    case DIRECT_OPENED: {
        const volatile dfccl_gpu_direct_reply_t *r = &env->direct_reply[slot];
        if (r->tag != tag) {
            *peer = (uint32_t)me;
            return 0;
        }
        __threadfence_system();
        mine->open_ok = r->ok;
        __threadfence_system();
        mine->open_tag = k;
        t->phase = DIRECT_AGREE;
    }
        /* fall through */
    case DIRECT_AGREE: {
        uint32_t ok = 1;
        for (int p = 0; p < n; p++) {
            if (gpu_board_entry(c, p, k)->open_tag != k) {
                *peer = (uint32_t)p;
                return 0;
            }
        }
        __threadfence_system();
        for (int p = 0; p < n; p++) ok &= gpu_board_entry(c, p, k)->open_ok != 0;
        tab->ok = ok;
        sh->cmd = CMD_DIRECT_TABLE;
        break;
    }
    case DIRECT_TABLE:
        if (tab->ready != tag) {
            *peer = (uint32_t)me;
            return 0;
        }
        __threadfence();
        if (!tab->ok) {
            /* some rank cannot map some buffer: all ranks run the ring,
             * from the next pass on. Its first slice must not start here:
             * gpu_task_done (dfccl_exec_done) first skips the plan's empty
             * steps, which a reduce-scatter with an empty block has; a
             * slice of none would still move the FIFO's counters and put
             * the receiving peer one message out of step (wrong results) */
            t->algo = DFCCL_GPU_ALGO_RING;
            t->exec.nrounds = dfccl_exec_part_rounds(&t->exec);
            sh->cmd = CMD_NONE;
            break;
        }
        t->phase = DIRECT_MOVE;
        /* fall through */
    case DIRECT_MOVE: {
        uint64_t begin, end, owner, owners, chunk, at;
        gpu_direct_layout(env, t, c, &begin, &end, &owner, &owners, &chunk);
        at = begin + (owner + t->exec.offset * owners) * chunk;   /* offset: chunks moved */
        if (at < end) {
            gpu_direct_chunk(env, t, slot, c, sh, at, end, chunk, owners * chunk);
            sh->cmd = CMD_DIRECT_MOVE;
            break;
        }
        __threadfence_system();   /* our writes into the peers' outputs first */
        for (int p = 0; p < n; p++)
            if (p != me) gpu_board(c, p)->done[blockIdx.x][me] = k;
        t->phase = DIRECT_FINISH;
    }
        /* fall through */
    case DIRECT_FINISH:
        for (int p = 0; p < n; p++) {
            if (p != me && done[p] < k) {
                *peer = (uint32_t)p;
                return 0;
            }
        }
        __threadfence_system();
        t->phase = DIRECT_DONE;
        sh->cmd = CMD_NONE;   /* the next pass completes it */
        break;
    default:
        return 0;
    }
    t->exec.waiting = DFCCL_WAIT_NONE;
    return 1;
}

/* Thread 0, after the other threads ran a direct command. */
__device__ static void gpu_direct_after(const dfccl_gpu_env_t *env, dfccl_gpu_task_t *t, int slot,
                                        gpu_cmd_t cmd, const gpu_shared_t *sh)
{
    uint64_t tag = t->desc.ticket + 1;

    switch (cmd) {
    case CMD_DIRECT_GATHER:
        __threadfence_system();
        env->direct_req[slot].tag = tag;
        t->phase = DIRECT_OPENED;
        break;
    case CMD_DIRECT_TABLE:
        __threadfence();
        env->state->direct[slot].ready = tag;
        t->phase = DIRECT_TABLE;
        break;
    default:
        t->exec.offset++;
        break;
    }
}

/* All threads: copies between the board, the host and the table. */
__device__ static void gpu_direct_exchange(const dfccl_gpu_env_t *env, const dfccl_gpu_task_t *t,
                                           int slot, gpu_cmd_t cmd)
{
    const dfccl_gpu_comm_dev_t *c = &env->comms[t->comm_index];
    int n = c->size;

    if (cmd == CMD_DIRECT_GATHER) {
        const unsigned words = sizeof(dfccl_gpu_export_t) / 8;
        for (unsigned w = threadIdx.x; w < (unsigned)n * words; w += blockDim.x) {
            int p = (int)(w / words);
            const volatile uint64_t *from =
                (const volatile uint64_t *)&gpu_board_entry(c, p, t->direct_k)->exported;
            uint64_t *to = (uint64_t *)&env->direct_req[slot].peer[p];
            if (p != c->rank) to[w % words] = from[w % words];
        }
    } else {
        const volatile dfccl_gpu_direct_reply_t *r = &env->direct_reply[slot];
        dfccl_gpu_direct_tab_t *tab = &env->state->direct[slot];
        for (unsigned i = threadIdx.x; i < 2u * (unsigned)n; i += blockDim.x) {
            if (i < (unsigned)n) tab->in[i] = r->in[i];
            else tab->out[i - n] = r->out[i - n];
        }
    }
}

/* Thread 0, after a chunk of a direct collective: go on with the channel's
 * next chunk within the same command? Only while this collective is all
 * the block has: then a pass of the scheduler could only pick it again,
 * and the pass is a chain of dependent global-memory reads (with small
 * chunks at 8 ranks, a call spent several times as long outside the moves
 * without this). New submissions and requests to leave need no look here:
 * the scheduler keeps a turn that can move, and a direct move always can,
 * so they wait for the turn's end either way. */
__device__ static int gpu_direct_continue(const dfccl_gpu_env_t *env, dfccl_gpu_task_t *t,
                                          dfccl_gpu_block_t *blk, gpu_shared_t *sh)
{
    blk->busy_ns = gpu_now_ns();   /* block 0's quit decision sees a long command move */
    gpu_block_publish(env, blk);
    if (sh->direct.at + sh->direct.stride >= sh->direct.end || blk->nactive != 1) return 0;
    t->exec.offset++;
    gpu_direct_next_chunk(sh, t->desc.esize);
    return 1;
}

/* All threads: the direct move command (CMD_DIRECT_MOVE) for task t: its
 * chunk, and the channel's next ones while gpu_direct_continue says so. */
__device__ static void gpu_direct_move_command(const dfccl_gpu_env_t *env, dfccl_gpu_block_t *blk,
                                               gpu_shared_t *sh, dfccl_gpu_task_t *t)
{
    do {
        gpu_direct_move(sh->direct.ins, sh->direct.nin, sh->direct.outs, sh->direct.nout,
                        sh->direct.count, t->desc.esize, (dfccl_dtype_t)t->desc.dtype,
                        (dfccl_op_t)t->desc.op, t->type != DFCCL_COLL_ALLGATHER);
        __syncthreads();   /* all threads past the chunk before its pointers move */
        if (threadIdx.x == 0) sh->direct.more = gpu_direct_continue(env, t, blk, sh);
        __syncthreads();
    } while (sh->direct.more);
}

#endif
