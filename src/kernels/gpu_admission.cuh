/*
 * gpu_admission.cuh - how a block takes new submissions: the control
 * words, the queue's entries (block 0 from host memory, the others from
 * block 0's copies), the copy into the task, the task's executor state and
 * its place in the active list; and the block's scheduler state between
 * global and shared memory.
 */
#ifndef DFCCL_GPU_ADMISSION_CUH
#define DFCCL_GPU_ADMISSION_CUH

#include "kernels/gpu_device.cuh"
#include <stddef.h>
#include <stdint.h>
#include "core/exec.h"
#include "core/sched_policy.h"
#include "core/wait_policy.h"
#include "backends/gpu/gpu_shared.h"
#include "kernels/gpu_direct_move.cuh"
#include "kernels/gpu_block_state.cuh"
#include "kernels/gpu_trace.cuh"
#include "kernels/gpu_ll_early_admit.cuh"

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
 * (all of it when that read came too early). Copying only the part an LL
 * plan fills made the copy shorter on average and its slow tail much
 * shorter. */
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

/* Thread 0: the control words (as read at now; clk_now: the trace's clock
 * beside it) show a submission this block has not admitted. Returns 1 with
 * the admission command set, 0 when it is not this block's collective
 * (then it counts as admitted). */
__device__ static int gpu_admit_seen(const dfccl_gpu_env_t *env, dfccl_gpu_block_t *blk,
                                     gpu_shared_t *sh, gpu_sched_t *s, uint64_t now,
                                     long long clk_now)
{
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
        sh->nsteps = s->next.x == ticket && n <= DFCCL_GPU_INLINE_STEPS ? n : DFCCL_GPU_INLINE_STEPS;
        /* nothing else in hand: an LL collective's lines may go
         * first (gpu_ll_early.cuh), if warp 1 read its summary */
        sh->early.maybe = blk->nactive == 0 && sh->llh_ticket == ticket;
        sh->early.ticket = ticket;
    } else if (!gpu_takes_part(env, ticket, &sh->nsteps)) {
        /* block 0 takes part in everything: only others get here */
        blk->admitted = ticket + 1;
        return 0;
    }
    if (blockIdx.x != 0) sh->early.maybe = 0;
    sh->early.go = 0;
    sh->cmd = CMD_ADMIT;
    sh->slot = (int)(ticket % DFCCL_GPU_SQ_DEPTH);
    return 1;
}

/* 16-byte vectors admission copies of an entry whose plan has nsteps steps. */
__device__ static inline uint32_t gpu_admit_vecs(uint32_t nsteps)
{
    return (uint32_t)((offsetof(dfccl_gpu_desc_t, steps) + nsteps * sizeof(dfccl_step_t) + 15) / 16);
}

/* The admission copy's vector for this thread: the last threads take the
 * first vectors. A thread's later loads wait behind its load from host
 * memory (a trip over the bus); the LL send and receive work from the
 * first threads on, so the copy's trip delays neither (as measured). */
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

/* All threads: the admission command (CMD_ADMIT) for the slot's task t:
 * the copy's first loads, an LL send ahead of the copy where block 0 may
 * make one, then the copy. */
__device__ static void gpu_admit_command(const dfccl_gpu_env_t *env, gpu_shared_t *sh,
                                         dfccl_gpu_task_t *t)
{
    uint4 first = gpu_admit_copy_first(env, sh->slot, sh->nsteps);
    if (sh->early.maybe)   /* warp 1 read the LL summary beside the control words */
        gpu_ll_early_admit(env, sh, t);
    gpu_admit_copy(env, sh->slot, sh->nsteps, sh->head, first);
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
 * times per pass (each read of global memory that bypasses L1 is a trip to
 * memory): loaded at launch, saved at the exit. */
__device__ static void gpu_block_copy(dfccl_gpu_block_t *to, const dfccl_gpu_block_t *from)
{
    to->admitted = from->admitted;
    to->cq_next = from->cq_next;
    to->busy_ns = from->busy_ns;
    to->nactive = from->nactive;
    for (uint32_t i = 0; i < from->nactive; i++) to->active[i] = from->active[i];
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
    /* a long plan (more ranks than the all-peer paths serve) waits in
     * device memory, which every channel reads in place */
    x->steps = d->plan != NULL ? d->plan : t->desc.steps;
    x->nsteps = d->plan != NULL ? d->plan_nsteps : d->nsteps;
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
    x->recv_fifo = gpu_comm_conns(c, 0, blockIdx.x);
    x->send_fifo = gpu_comm_conns(c, 1, blockIdx.x);
    x->waiting = DFCCL_WAIT_NONE;
    x->nrounds = 0;
    x->vec_lo = x->vec_hi = 0;
    x->graph = NULL;   /* a chain unless a plan file's image says otherwise */
    x->more_conns = NULL;
    x->deps = NULL;
    if (t->algo == DFCCL_GPU_ALGO_RING && d->plan != NULL && d->plan_file) {
        /* a plan file's program (channel 0 alone): its graph, made by the
         * host in the image, moves each step as soon as it may */
        gpu_plan_image_point(x, (char *)d->plan, d->plan_more_at, d->plan_deps_at,
                             d->plan_graph_at);
    } else if (t->algo == DFCCL_GPU_ALGO_RING) {
        if (d->vector_parts) dfccl_exec_cut_vector(x, d->count);
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
            gpu_ll_early_trace(env, t, sh, s, done);
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

/* Thread 0, after the admission command: the slot's task filled and in the
 * list (or completed already, or not this block's after all), the block
 * published; whether an LL collective starts at once is gpu_express's to
 * say, next. */
__device__ static void gpu_admit_after(const dfccl_gpu_env_t *env, dfccl_gpu_block_t *blk,
                                       gpu_shared_t *sh, gpu_sched_t *s, dfccl_gpu_task_t *t,
                                       const gpu_cmd_times_t *tm)
{
    gpu_trace_admit_cmd(env, s, &sh->early, tm);
    /* a new collective in the slot: not the LL context's,
     * unless the early send just filled it */
    if (sh->ll.ctx.task == t && !(sh->early.go && sh->early.sent)) sh->ll.ctx.task = NULL;
    /* sent and received in this command: completed first */
    const dfccl_gpu_desc_t *copied = (const dfccl_gpu_desc_t *)sh->head;
    int done = gpu_ll_early_sent_for(sh, copied) && sh->early.received &&
               copied->ticket == blk->admitted;
    if (done) gpu_ll_early_post(env, blk, sh, s, t);
    /* another block finding a newer ticket there lagged behind
     * a reused slot: not its collective. Block 0 takes part in
     * all and never lags: a mismatch would be a copy read too
     * early, so it copies again on the next pass */
    if (gpu_admit_finish(env, blk, sh->slot, sh, blk->admitted, s, done)) {
        gpu_trace_admit_filled(env, t, done, tm->clk_end);
        blk->admitted++;
        if (done) {
            blk->busy_ns = gpu_now_ns();
            s->relax_ns = 32;
        }
    } else if (blockIdx.x != 0) {
        blk->admitted++;
    }
    gpu_block_publish(env, blk);
    s->mirror_due = blockIdx.x == 0;
}

/* Thread 0 of block 0, after each command: the mirror raised for the
 * other blocks after the admission, or, when an LL collective starts at
 * once, after its first attempt: it takes no other block, and the fence
 * before the mirror would delay its send. */
__device__ static inline void gpu_mirror_raise(const dfccl_gpu_env_t *env,
                                               const dfccl_gpu_block_t *blk, gpu_sched_t *s)
{
    if (s->mirror_due && !s->express) {
        __threadfence();   /* the copies before the mirror */
        env->state->sq_mirror = blk->admitted;
        s->mirror_due = 0;
    }
}

#endif
