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
 *   memory shared by CUDA IPC, every channel moving its part of each step;
 * - one-shot, for small messages: each rank writes its contribution into
 *   every peer's inbox, then reduces (or gathers) all of them in rank order,
 *   so every rank computes bit-identical results;
 * - LL, the one-shot for the smallest: lines that carry their own flags, so
 *   the send and the wait for the peers' lines are one command of all
 *   threads, without counters or fences;
 * - direct, for large messages: every rank reads and writes its peers'
 *   buffers, mapped for the call.
 * The movers live in gpu_movers.cuh, the one-shot path in gpu_oneshot.cuh,
 * LL in gpu_ll.cuh, the direct path in gpu_direct_move.cuh and gpu_direct_steps.cuh,
 * the command the block shares and thread 0's state in gpu_block_state.cuh,
 * the latency trace's stamps in gpu_trace.cuh; all are included here (one
 * translation unit).
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

#include "gpu_shared.h"
#include "kernels.h"
#include "reduce.h"
#include "sched_policy.h"

__device__ static inline uint64_t gpu_now_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

#include "gpu_movers.cuh"
#include "gpu_direct_move.cuh"
#include "gpu_oneshot.cuh"
#include "gpu_ll.cuh"
#include "gpu_ll_early.cuh"
#include "gpu_block_state.cuh"
#include "gpu_trace.cuh"

/* ---- the scheduler (thread 0) --------------------------------------------- */

/* Block 0 reads the control words over the bus (1.3 us per read on an
 * H200, contrib/results): while it has collectives in hand it reuses a read
 * younger than this, so that admitting, checking peers and moving are not
 * paced by the bus; new work then waits at most this much longer to be
 * seen. An idle block reads them on every pass. */
#define GPU_CTRL_MAX_AGE_NS 4000

/* Block 0 asks whether the kernel should leave (gpu_should_quit: reads of
 * every block's published state) at most this often, 2 % of the idle
 * bound: asked on every idle pass, it delayed the next look for new work. */
#define GPU_QUIT_CHECK_NS 10000

/* 16 bytes of host memory in one uncached load (the host rewrites them). */
__device__ static inline ulonglong2 gpu_host_load16(const void *p)
{
    uint4 v = __ldcv((const uint4 *)p);
    ulonglong2 r;
    r.x = (unsigned long long)v.x | (unsigned long long)v.y << 32;
    r.y = (unsigned long long)v.z | (unsigned long long)v.w << 32;
    return r;
}

/* Submissions published to this block (x) and the stop flag (y): block 0
 * reads the host's words, the others block 0's mirror in device memory
 * (stop reaches them through quit_launch). */
__device__ static inline ulonglong2 gpu_ctrl_read(const dfccl_gpu_env_t *env)
{
    if (blockIdx.x == 0) return gpu_host_load16(env->ctrl);
    ulonglong2 v;
    v.x = env->state->sq_mirror;
    v.y = 0;
    __threadfence();   /* acquire: block 0's copies before the mirror */
    return v;
}

/* Where this block reads submission entries: block 0 from host memory, the
 * others from block 0's copies. */
__device__ static inline const dfccl_gpu_desc_t *gpu_desc_src(const dfccl_gpu_env_t *env, int slot)
{
    return blockIdx.x == 0 ? &env->descs[slot] : &env->state->descs[slot];
}

/* The control words; block 0 with collectives in hand reuses a read younger
 * than GPU_CTRL_MAX_AGE_NS (the other blocks read device memory). Block 0
 * reads the first 16 bytes of the next ticket's entry in the same trip: a
 * published entry's plan length tells how much of it admission must copy
 * (all of it when that read came too early). Copying 33 of its 163 vectors
 * for LL made the copy 2.0 us on average instead of 2.4 (90th percentile
 * 2.5 instead of 3.6; contrib/results/2026-11-30-gpu-kernel-parts.md). */
__device__ static inline ulonglong2 gpu_ctrl_poll(const dfccl_gpu_env_t *env, gpu_sched_t *s,
                                                  uint64_t now, int busy, uint64_t admitted)
{
    if (blockIdx.x != 0 || !busy || now - s->ctrl_ns >= GPU_CTRL_MAX_AGE_NS) {
        long long c0 = gpu_trace_clock(env);
        if (blockIdx.x == 0) {
            /* both loads, then the stores: s is behind a generic pointer,
             * and a store to it between two loads would make the second
             * wait for the first (a trip over the bus each) */
            ulonglong2 next = gpu_host_load16(&env->descs[admitted % DFCCL_GPU_SQ_DEPTH]);
            s->ctrl = gpu_host_load16(env->ctrl);
            s->next = next;
        } else {
            s->ctrl = gpu_ctrl_read(env);
        }
        s->ctrl_ns = now;
        gpu_trace_cycles(env, &s->ctrl_cyc, c0);
    }
    return s->ctrl;
}

#include "gpu_direct_steps.cuh"

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

/* Thread 0: slot's completion entry, in this block's own ring (only this
 * block writes it: no atomic for the index), its marker last, after a
 * system fence, so that the host sees the outputs before it. t: the task
 * whose stamps a trace copies; why: the diagnosis when worst is an error;
 * c0: clock64 when completing began (trace). */
__device__ static void gpu_cq_post(const dfccl_gpu_env_t *env, dfccl_gpu_block_t *blk, int slot,
                                   int32_t worst, const volatile uint64_t *why,
                                   const dfccl_gpu_task_t *t, uint32_t nparts, long long c0)
{
    dfccl_gpu_state_t *st = env->state;
    uint64_t n = blk->cq_next++;
    dfccl_gpu_cqe_t *e = &env->cq[blockIdx.x * DFCCL_GPU_SQ_DEPTH + n % DFCCL_GPU_SQ_DEPTH];

    e->ticket = (uint64_t)slot;
    e->status = worst;
    if (worst != DFCCL_OK) {   /* the diagnosis crosses the bus only when needed */
        uint64_t *to = (uint64_t *)&e->diag;
        for (unsigned w = 0; w < sizeof(dfccl_gpu_diag_t) / 8; w++) to[w] = why ? why[w] : 0;
    }
    gpu_trace_cqe(env, st, e, slot, t, nparts, c0);
    __threadfence_system();
    e->marker = n + 1;
}

/* Thread 0: takes entry idx out of the block's active list. */
__device__ static void gpu_active_remove(dfccl_gpu_block_t *blk, int idx)
{
    for (uint32_t j = (uint32_t)idx; j + 1 < blk->nactive; j++) blk->active[j] = blk->active[j + 1];
    blk->nactive--;
}

/* The channel's part of a collective is over: the last channel completes it
 * (a collective of one channel at once, without the channels' counters).
 * parts: its channels where the caller knows them (LL: 1; the task's copy
 * is a trip away, before the completion's own), else 0. */
__device__ static void gpu_finish(const dfccl_gpu_env_t *env, dfccl_gpu_block_t *blk, int idx,
                                  int32_t status, const dfccl_gpu_diag_t *diag, uint32_t parts)
{
    int slot = blk->active[idx];
    dfccl_gpu_state_t *st = env->state;
    const dfccl_gpu_task_t *t = gpu_task(env, slot);
    uint32_t nparts = parts ? parts : t->nparts;
    int32_t worst = status;
    const volatile uint64_t *why = (const volatile uint64_t *)diag;
    long long c0 = gpu_trace_clock(env);

    gpu_active_remove(blk, idx);
    if (nparts > 1) {
        gpu_trace_part_done(env, st, slot, t);
        if (status != DFCCL_OK) {
            atomicMin(&st->status[slot], status);
            if (diag && atomicExch(&st->diag_taken[slot], 1u) == 0) st->diag[slot] = *diag;
        }
        __threadfence();
        if (atomicAdd(&st->done[slot], 1u) + 1 < nparts) return;
        /* last channel: the other channels' status and diagnosis are read
         * past L1 after an acquire fence */
        __threadfence();
        worst = atomicAdd(&st->status[slot], 0);
        why = (const volatile uint64_t *)&st->diag[slot];
        /* the slot's counters ready for its next collective: read above,
         * and no other channel touches them again for this one */
        st->done[slot] = 0;
        st->status[slot] = DFCCL_OK;
        st->diag_taken[slot] = 0;
    }
    gpu_cq_post(env, blk, slot, worst, why, t, nparts, c0);
}

__device__ static void gpu_diag_fill(const dfccl_gpu_task_t *t, const dfccl_gpu_comm_dev_t *c,
                                     uint32_t peer, uint64_t blocked_ns, dfccl_gpu_diag_t *g)
{
    const dfccl_exec_t *x = &t->exec;
    const dfccl_fifo_t *f = x->waiting == DFCCL_WAIT_SEND ? x->send_fifo : x->recv_fifo;

    g->channel = blockIdx.x;
    g->algo = t->algo;
    g->phase = t->phase;
    g->step = x->step;
    g->nsteps = x->nsteps;
    g->waiting = x->waiting;
    g->round = x->round;
    g->nrounds = x->nrounds;
    g->offset = x->offset;
    g->blocked_ns = blocked_ns;
    if (t->algo == DFCCL_GPU_ALGO_RING && f != NULL) {
        g->peer = (uint32_t)f->peer;
        g->tail = f->ctrl->tail;
        g->head = f->ctrl->head;
    } else {
        g->peer = peer;
        g->tail = t->algo == DFCCL_GPU_ALGO_DIRECT ? t->direct_k : t->small_k;
        g->head = 0;
    }
}

/* Thread 0: does this block take part in ticket's collective? The host
 * reuses a slot once its collective completed, which needs every channel
 * that takes part: a block that lags behind may find a newer submission
 * there. The first 16 bytes (ticket, nparts, nsteps) come in one load; the
 * ticket is checked again in the copy (a seqlock). */
__device__ static int gpu_takes_part(const dfccl_gpu_env_t *env, uint64_t ticket, uint32_t *nsteps)
{
    ulonglong2 v = gpu_host_load16(gpu_desc_src(env, (int)(ticket % DFCCL_GPU_SQ_DEPTH)));
    *nsteps = (uint32_t)(v.y >> 32);
    return v.x == ticket && blockIdx.x < (uint32_t)v.y;
}

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

/* Thread 0: did this admission command send lines early (gpu_ll_early.cuh)
 * for the copied submission d's communicator? Then the send's number is
 * the one admission gives it. */
__device__ static inline int gpu_ll_early_sent_for(const gpu_shared_t *sh, const dfccl_gpu_desc_t *d)
{
    return sh->early.go && sh->early.sent && sh->early.comm == d->comm_index;
}

/* Thread 0, after the other threads copied the submission: executor state
 * and a place in the active list, in the global order. d: the copy's first
 * fields in shared memory (read here one by one; global memory would cost
 * a trip each). Returns 0 when the copy shows the slot was reused
 * meanwhile (not ours after all). done: its completion entry is out
 * already (gpu_ll_early_post): the task keeps the communicator's count
 * only, outside the list. */
__device__ static int gpu_admit_finish(const dfccl_gpu_env_t *env, dfccl_gpu_block_t *blk, int slot,
                                       gpu_shared_t *sh, uint64_t ticket, const gpu_sched_t *s,
                                       int done)
{
    const dfccl_gpu_desc_t *d = (const dfccl_gpu_desc_t *)sh->head;
    dfccl_gpu_task_t *t = gpu_task(env, slot);
    dfccl_gpu_comm_dev_t *c = &env->comms[d->comm_index];
    dfccl_exec_t *x = &t->exec;
    /* the communicator's words in one trip, before the task's stores: a
     * load after a store through another pointer waits for the loads
     * before it (only block 0 counts one-shots). Sent early in this
     * command: the send read them (broken: it would not have sent) and set
     * ll_early_k, and nothing else changed the count since, so the trip
     * after the receive is saved. */
    int early = gpu_ll_early_sent_for(sh, d);
    int broken = early ? 0 : c->broken;
    uint64_t small = early ? sh->early.k - 1 : c->small_count;
    uint64_t early_k = early ? sh->early.k : c->ll_early_k;

    if (*(const uint64_t *)&d->ticket != ticket) return 0;   /* our copy: no need for volatile */
    sh->admit_broken = broken;   /* for gpu_express */
    sh->admit_sent = 0;
    t->held = d->held && !early;   /* sent early: the host had released it */
    t->algo = d->algo;
    t->type = d->type;
    t->comm_index = d->comm_index;
    t->nparts = d->nparts;
    t->phase = 0;
    t->budget_ns = env->budget_ns;
    t->blocked_since = 0;
    gpu_trace_admitted(env, t, s, done);
    t->key.priority = d->priority;
    t->key.comm_key = d->comm_key;
    t->key.seq = d->seq;
    x->steps = t->desc.steps;
    x->nsteps = d->nsteps;
    x->step = 0;
    x->round = 0;
    x->offset = 0;
    x->part = blockIdx.x;
    x->nparts = d->nparts;
    x->chunk_elems = d->chunk_elems;
    x->slice_elems = d->slice_elems;
    x->slices = 0;
    x->sent_bytes = 0;
    x->sendbuf = d->sendbuf;
    x->recvbuf = d->recvbuf;
    x->esize = d->esize;
    x->dtype = (dfccl_dtype_t)d->dtype;
    x->op = (dfccl_op_t)d->op;
    x->recv_fifo = &c->recv_fifo[blockIdx.x];
    x->send_fifo = &c->send_fifo[blockIdx.x];
    x->waiting = DFCCL_WAIT_NONE;
    x->nrounds = 0;
    if (t->algo == DFCCL_GPU_ALGO_RING) {
        x->nrounds = dfccl_exec_part_rounds(x);
    } else if (t->algo == DFCCL_GPU_ALGO_DIRECT) {
        /* admitted in order on a communicator, alike on every rank */
        t->direct_k = ++c->direct_count[blockIdx.x];
        t->phase = blockIdx.x == 0 ? DIRECT_PUBLISH : DIRECT_TABLE;
    } else {
        t->small_k = c->small_count = small + 1;   /* admitted in order on a communicator */
        sh->admit_k = t->small_k;
        /* sent early, in this command or before an admission that did
         * not finish: its lines are out (gpu_ll_early.cuh) */
        if (t->algo == DFCCL_GPU_ALGO_LL && early_k == t->small_k) {
            t->phase = 1;
            sh->admit_sent = 1;
        }
        if (early) {   /* small_k is the send's number (small above) */
            if (env->trace && !done) gpu_ll_early_stamp(t, sh, s);
        } else if (sh->early.go && sh->early.sent) {
            /* sent for another communicator's summary: cannot be (see
             * gpu_ll_early.cuh); the attempt sends */
            sh->early.sent = 0;
            sh->ll.ctx.task = NULL;
        }
    }
    if (done) {
        t->phase = 2;
        return 1;
    }
    uint32_t i = blk->nactive;
    while (i > 0 && dfccl_sched_before(&t->key, &gpu_task(env, blk->active[i - 1])->key)) {
        blk->active[i] = blk->active[i - 1];
        i--;
    }
    blk->active[i] = (uint16_t)slot;
    blk->nactive++;
    return 1;
}

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

/* Thread 0: can the task's next primitive run now? Fills the shared command:
 * 1 it moves, 2 an attempt whose command tells (LL), 0 it cannot. */
__device__ static int gpu_try_move(const dfccl_gpu_env_t *env, dfccl_gpu_task_t *t, int slot,
                                   gpu_shared_t *sh, gpu_sched_t *s)
{
    dfccl_gpu_comm_dev_t *c = &env->comms[t->comm_index];

    if (t->algo == DFCCL_GPU_ALGO_RING) {
        if (!dfccl_exec_slice_begin(&t->exec, &sh->slice)) return 0;
        sh->cmd = CMD_RING_SLICE;
    } else if (t->algo == DFCCL_GPU_ALGO_DIRECT) {
        if (!gpu_direct_try(env, t, slot, c, sh, &s->wait_peer)) return 0;
    } else if (t->algo == DFCCL_GPU_ALGO_LL) {
        if (t->phase == 0 && t->held) {   /* its inputs are not to be read yet */
            if (!gpu_ll_released(env, t->desc.ticket)) {
                t->exec.waiting = DFCCL_WAIT_HOST;
                return 0;
            }
            t->held = 0;
        }
        gpu_ll_prepare(env, t, slot, sh, s, t->phase == 0, t->comm_index, t->small_k);
        return 2;
    } else {
        if (!gpu_oneshot_ready(t, c, &s->wait_peer)) return 0;
        sh->cmd = t->phase == 0 ? CMD_ONESHOT_SEND : CMD_ONESHOT_RECV;
    }
    sh->slot = slot;
    gpu_trace_move(env, t);
    return 1;
}

__device__ static int gpu_task_done(dfccl_gpu_task_t *t)
{
    if (t->algo == DFCCL_GPU_ALGO_RING) return dfccl_exec_done(&t->exec);
    return t->phase >= (t->algo == DFCCL_GPU_ALGO_DIRECT ? (uint32_t)DIRECT_DONE : 2u);
}

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
     * check made the 8 B allreduce grow 0.35 us per block (27.4 us at 32
     * blocks), without it 21-24 us (contrib/results/2026-11-30-gpu-channels.md,
     * 2026-11-30-gpu-latency-path.md) */
    if (now - blk->busy_ns <= nearer) return 0;
    for (unsigned b = 0; b < gridDim.x; b++) {   /* ours as it is, the others' as published */
        const dfccl_gpu_block_t *o = b == 0 ? blk : &env->state->blocks[b];
        if (o->busy_ns > last) last = o->busy_ns;
        active |= o->nactive != 0;
    }
    if (ctrl.x > blk->admitted) return 0;
    /* a block may have stamped after our clock was read */
    return now > last && now - last > (active ? env->stuck_quit_ns : env->idle_quit_ns);
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
            if (gpu_task_done(t)) {
                gpu_finish(env, blk, s->turn, DFCCL_OK, NULL, 0);
                s->turn = -1;
                s->pos = 0;
                blk->busy_ns = now;
                continue;
            }
            int moves = gpu_try_move(env, t, slot, sh, s);
            if (moves == 2) return;   /* LL: the command tells (gpu_ll_after) */
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
            uint64_t ticket = blk->admitted;
            blk->busy_ns = now;
            s->seen_ns = now;
            gpu_trace_seen(env, s, clk_now);
            if (blockIdx.x == 0) {
                /* block 0 takes part in every collective, and the host
                 * rewrites a slot only after block 0 admitted its ticket:
                 * no need to look first (one read of host memory less);
                 * the copy takes the plan as long as the entry's head,
                 * read with the control words, says (LL and one-shot
                 * have none), or the whole plan when that read was of an
                 * older ticket */
                uint32_t n = (uint32_t)(s->next.y >> 32);
                sh->nsteps = s->next.x == ticket && n <= DFCCL_GPU_MAX_STEPS ? n : DFCCL_GPU_MAX_STEPS;
                /* nothing else in hand: an LL collective's lines may go
                 * first (gpu_ll_early.cuh), if warp 1 read its summary */
                sh->early.maybe = blk->nactive == 0 && env->ll_early_send && sh->llh_ticket == ticket;
                sh->early.ticket = ticket;
            } else if (!gpu_takes_part(env, ticket, &sh->nsteps)) {
                /* block 0 takes part in everything: only others get here */
                blk->admitted = ticket + 1;
                continue;
            }
            if (blockIdx.x != 0) sh->early.maybe = 0;
            sh->early.go = 0;
            sh->cmd = CMD_ADMIT;
            sh->slot = (int)(ticket % DFCCL_GPU_SQ_DEPTH);
            return;
        }
        /* the next runnable collective of this pass */
        while (s->pos < (int)blk->nactive && !gpu_runnable(env, blk, s->pos)) s->pos++;
        if (s->pos < (int)blk->nactive) {
            dfccl_gpu_task_t *t = gpu_task(env, blk->active[s->pos]);
            if (env->comms[t->comm_index].broken) {
                dfccl_gpu_diag_t g = {};
                g.channel = blockIdx.x;
                g.waiting = 0xffffffffu;   /* failed because an earlier one did */
                gpu_finish(env, blk, s->pos, DFCCL_ERR_TIMEOUT, &g, 0);
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

/* 16-byte vectors admission copies of an entry whose plan has nsteps steps. */
__device__ static inline uint32_t gpu_admit_vecs(uint32_t nsteps)
{
    return (uint32_t)((offsetof(dfccl_gpu_desc_t, steps) + nsteps * sizeof(dfccl_step_t) + 15) / 16);
}

/* The admission copy's vector for this thread: the last threads take the
 * first vectors. A thread's later loads wait behind its load from host
 * memory (about 1.3 us over the bus); the LL send and receive work from
 * the first threads on, so the copy's trip delays neither (measured:
 * contrib/results/2026-11-30-gpu-copy-lanes.md). */
__device__ static inline uint32_t gpu_admit_lane(void)
{
    return blockDim.x - 1 - threadIdx.x;
}

/* All threads: the first vector each copies, loaded ahead, so that its trip
 * over the bus overlaps an LL send made before gpu_admit_copy. */
__device__ static inline uint4 gpu_admit_copy_first(const dfccl_gpu_env_t *env, int slot,
                                                    uint32_t nsteps)
{
    uint4 v = make_uint4(0, 0, 0, 0);
    uint32_t lane = gpu_admit_lane();

    if (lane < gpu_admit_vecs(nsteps))
        v = __ldcv((const uint4 *)gpu_desc_src(env, slot) + lane);
    return v;
}

/* All threads: the submission into device memory, in one parallel pass over
 * the bus (the header, the reduce-scatter counts and the plan's steps); its
 * first fields also into head (shared). first: gpu_admit_copy_first's. */
__device__ static void gpu_admit_copy(const dfccl_gpu_env_t *env, int slot, uint32_t nsteps,
                                      uint4 *head, uint4 first)
{
    const uint4 *from = (const uint4 *)gpu_desc_src(env, slot);
    uint4 *to = (uint4 *)&gpu_task(env, slot)->desc;
    uint4 *mirror = (uint4 *)&env->state->descs[slot];
    uint32_t n = gpu_admit_vecs(nsteps), lane = gpu_admit_lane();

    for (uint32_t i = lane; i < n; i += blockDim.x) {
        uint4 v = i == lane ? first : __ldcv(from + i);
        to[i] = v;
        if (i < GPU_DESC_HEAD_VECS) head[i] = v;
        if (blockIdx.x == 0) mirror[i] = v;
    }
}

/* Thread 0: what block 0's quit decision reads of this block (cheap stores;
 * the scheduler itself works on the copy in shared memory). */
__device__ static inline void gpu_block_publish(const dfccl_gpu_env_t *env, const dfccl_gpu_block_t *blk)
{
    dfccl_gpu_block_t *pub = &env->state->blocks[blockIdx.x];
    pub->busy_ns = blk->busy_ns;
    pub->nactive = blk->nactive;
}

/* Thread 0: the block's scheduler state between the global copy, which
 * outlives the launch, and the shared one, which the scheduler reads many
 * times per pass (a read of global memory that bypasses L1 costs a quarter
 * of a microsecond, contrib/results): loaded at launch, saved at the exit. */
__device__ static void gpu_block_copy(dfccl_gpu_block_t *to, const dfccl_gpu_block_t *from)
{
    to->admitted = from->admitted;
    to->cq_next = from->cq_next;
    to->busy_ns = from->busy_ns;
    to->nactive = from->nactive;
    for (uint32_t i = 0; i < from->nactive; i++) to->active[i] = from->active[i];
}

/* Thread 0, after a chunk of a direct collective: go on with the channel's
 * next chunk within the same command? Only while this collective is all
 * the block has: then a pass of the scheduler could only pick it again,
 * and the pass costs about 12 us of dependent global-memory reads (64 KiB
 * chunks at 8 ranks: 388 us of a call outside the moves before, 105 us
 * with this; contrib/results/2026-11-30-gpu-moving.md). New submissions
 * and requests to leave need no look here: the scheduler keeps a turn that
 * can move, and a direct move always can, so they wait for the turn's end
 * either way. */
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

    if (env->trace) {
        gpu_admit_stamp(t, s);
        gpu_ll_early_stamp(t, sh, s);
        t->algo = DFCCL_GPU_ALGO_LL;
    }
    gpu_cq_post(env, blk, sh->slot, DFCCL_OK, NULL, t, 1, c0);   /* LL: channel 0 alone */
}

/* Thread 0, right after an admission: an LL collective that is all the
 * block has starts at once, without a pass of the scheduler, which would
 * pick it anyway when no newer submission is known (the control words as
 * last read) and its communicator has not failed. What it needs comes
 * from the admission, in shared memory: reading back the task in global
 * memory would cost a trip per field. */
__device__ static int gpu_express(const dfccl_gpu_env_t *env, dfccl_gpu_block_t *blk,
                                  gpu_shared_t *sh, gpu_sched_t *s)
{
    const dfccl_gpu_desc_t *d = (const dfccl_gpu_desc_t *)sh->head;
    dfccl_gpu_task_t *t;

    if (blk->nactive != 1 || s->turn >= 0 || d->algo != DFCCL_GPU_ALGO_LL ||
        blk->active[0] != (uint16_t)sh->slot || s->ctrl.x > blk->admitted ||
        s->ctrl.y >= env->launch_id || sh->admit_broken || (d->held && !sh->admit_sent))
        return 0;   /* held: gpu_try_move asks the host first */
    t = gpu_task(env, sh->slot);
    s->pos = 0;
    gpu_turn_begin(env, s, 0, env->budget_ns);   /* as admission set it */
    gpu_ll_prepare(env, t, sh->slot, sh, s, !sh->admit_sent, d->comm_index, sh->admit_k);
    return 1;
}

__global__ void __launch_bounds__(512) dfccl_daemon_kernel(dfccl_gpu_env_t env)
{
    __shared__ gpu_shared_t sh;
    __shared__ dfccl_gpu_block_t blk_state;
    dfccl_gpu_block_t *blk = &blk_state;
    gpu_sched_t s;

    if (threadIdx.x == 0) {
        uint64_t now = gpu_now_ns();
        gpu_block_copy(blk, &env.state->blocks[blockIdx.x]);
        s.turn = -1;
        s.pos = 0;
        s.first_of_pass = 1;
        s.turn_budget = s.turn_blocked_since = 0;
        s.turn_moved = 0;
        blk->busy_ns = now;   /* a launch starts the bounds afresh */
        s.relax_ns = 32;
        s.wait_peer = 0;
        s.seen_ns = 0;
        s.express = 0;
        s.ctrl = make_ulonglong2(0, 0);
        s.next = make_ulonglong2(UINT64_MAX, 0);
        s.ctrl_ns = now - GPU_CTRL_MAX_AGE_NS;   /* read at once */
        s.quit_check_ns = now;
        s.clk_seen = 0;
        s.ctrl_cyc = s.seen_cyc = s.issue_cyc = s.copy_cyc = 0;
        s.mirror_due = 0;
        gpu_block_publish(&env, blk);   /* block 0's quit decision sees the fresh start */
        sh.ll.ctx.task = NULL;
        sh.early.maybe = sh.early.go = 0;
        sh.llh_ticket = blockIdx.x == 0 && env.ll_early_send ? blk->admitted : UINT64_MAX;
    }
    for (;;) {
        gpu_cmd_times_t tm = { 0, 0, 0 };   /* thread 0, trace */
        if (blockIdx.x == 0 && env.ll_early_send) {
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
        case CMD_ADMIT: {
            uint4 first = gpu_admit_copy_first(&env, sh.slot, sh.nsteps);
            if (sh.early.maybe) {   /* warp 1 read the LL summary beside the control words */
                if (threadIdx.x == 0) {
                    sh.early.go = gpu_ll_head_take(sh.llh, sh.early.ticket, &sh.early);
                    sh.early.received = 0;
                    /* the receive's wait: as the express attempt's would be */
                    sh.early.deadline = gpu_now_ns() + (env.ll_wait_ns < env.budget_head_ns
                                                        ? env.ll_wait_ns : env.budget_head_ns);
                    sh.ll.lagging = -1;
                    /* published before the host's wait for the legacy
                     * stream returned: no input is read before its word
                     * (gpu_ll_early.cuh). Four staggered pollers (warps)
                     * instead of thread 0, and the context filled before
                     * the word, were slower (runs 70 and 71) */
                    while (sh.early.go && sh.early.held) {
                        if (gpu_ll_released(&env, sh.early.ticket)) sh.early.held = 0;
                        else if (gpu_now_ns() >= sh.early.deadline) sh.early.go = 0;
                    }
                }
                __syncthreads();
                gpu_trace_clock0(&env, &sh.early.clk_took);
                if (sh.early.go) {
                    gpu_ll_early_send(&env, &sh.early, &sh.ll.ctx, t);
                    /* and its receive, while the copy's loads are under way */
                    if (sh.early.sent) {
                        int ok = gpu_ll_recv(&sh.ll.ctx, sh.early.deadline, &sh.ll.lagging,
                                             &sh.ll.first_clk, &sh.ll.done_clk, &sh.ll.polls);
                        if (threadIdx.x == 0) {
                            sh.early.received = ok;
                            gpu_trace_stamp(&env, &sh.early.received_ns, &sh.early.clk_received);
                        }
                    }
                }
            }
            gpu_admit_copy(&env, sh.slot, sh.nsteps, sh.head, first);
            break;
        }
        case CMD_RING_SLICE:
            gpu_slice_move(&t->exec, &sh.slice);
            break;
        case CMD_ONESHOT_SEND:
            gpu_oneshot_send(t, &env.comms[t->comm_index]);
            break;
        case CMD_ONESHOT_RECV:
            gpu_oneshot_recv(t, &env.comms[t->comm_index]);
            break;
        case CMD_LL: {
            int ok;
            long long clk_recv = tm.clk;   /* thread 0, trace: the receive began */
            gpu_trace_ll_attempt(&env, t, &sh, tm.clk);
            if (sh.ll.fill) {
                gpu_ll_fill(&sh.ll.ctx, t, &env.comms[sh.ll.comm], sh.ll.k);
                __syncthreads();
            }
            if (sh.ll.send) {
                gpu_ll_send(&sh.ll.ctx, 0, 0);
                __syncthreads();   /* in place: everything read before outputs are written */
                gpu_trace_ll_sent(&env, t, &clk_recv, tm.clk);
            }
            ok = gpu_ll_recv(&sh.ll.ctx, sh.ll.deadline, &sh.ll.lagging, &sh.ll.first_clk,
                             &sh.ll.done_clk, &sh.ll.polls);
            if (threadIdx.x == 0) {
                sh.ll.ok = ok;
                gpu_trace_ll_received(&env, t, &sh, ok, clk_recv);
            }
            break;
        }
        case CMD_DIRECT_GATHER:
        case CMD_DIRECT_TABLE:
            gpu_direct_exchange(&env, t, sh.slot, cmd);
            break;
        case CMD_DIRECT_MOVE:
            do {
                gpu_direct_move(sh.direct.ins, sh.direct.nin, sh.direct.outs, sh.direct.nout,
                                sh.direct.count, t->desc.esize, (dfccl_dtype_t)t->desc.dtype,
                                (dfccl_op_t)t->desc.op, t->type != DFCCL_COLL_ALLGATHER);
                __syncthreads();   /* all threads past the chunk before its pointers move */
                if (threadIdx.x == 0) sh.direct.more = gpu_direct_continue(&env, t, blk, &sh);
                __syncthreads();
            } while (sh.direct.more);
            break;
        default:
            break;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            gpu_trace_cmd_end(&env, &tm, t, cmd);
            switch (cmd) {
            case CMD_ADMIT: {
                gpu_trace_admit_cmd(&env, &s, &sh.early, &tm);
                /* a new collective in the slot: not the LL context's,
                 * unless the early send just filled it */
                if (sh.ll.ctx.task == t && !(sh.early.go && sh.early.sent)) sh.ll.ctx.task = NULL;
                /* sent and received in this command: completed first */
                const dfccl_gpu_desc_t *copied = (const dfccl_gpu_desc_t *)sh.head;
                int done = gpu_ll_early_sent_for(&sh, copied) && sh.early.received &&
                           copied->ticket == blk->admitted;
                if (done) gpu_ll_early_post(&env, blk, &sh, &s, t);
                /* another block finding a newer ticket there lagged behind
                 * a reused slot: not its collective. Block 0 takes part in
                 * all and never lags: a mismatch would be a copy read too
                 * early, so it copies again on the next pass */
                if (gpu_admit_finish(&env, blk, sh.slot, &sh, blk->admitted, &s, done)) {
                    gpu_trace_admit_filled(&env, t, done, tm.clk_end);
                    blk->admitted++;
                    if (done) {
                        blk->busy_ns = gpu_now_ns();
                        s.relax_ns = 32;
                    }
                } else if (blockIdx.x != 0) {
                    blk->admitted++;
                }
                gpu_block_publish(&env, blk);
                s.mirror_due = blockIdx.x == 0;
                s.express = gpu_express(&env, blk, &sh, &s);
                break;
            }
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
            /* block 0 raises the mirror for the other blocks after the
             * admission, or, when an LL collective starts at once, after
             * its first attempt: it takes no other block, and the fence
             * before the mirror would delay its send */
            if (s.mirror_due && !s.express) {
                __threadfence();   /* the copies before the mirror */
                env.state->sq_mirror = blk->admitted;
                s.mirror_due = 0;
            }
            if (blockIdx.x == 0 && env.ll_early_send)
                sh.llh_ticket = blk->nactive == 0 && !s.express ? blk->admitted : UINT64_MAX;
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
