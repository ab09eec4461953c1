/*
 * gpu_schedule.cuh - the block's scheduler (thread 0): it walks the active
 * list in the global order with the policy of sched_policy.h, gives the
 * block to one collective at a time (a turn, with a budget), checks
 * whether the turn's next primitive can run, and sets the command all
 * threads run; it admits new work, fails collectives stuck past the
 * timeout, and decides (block 0) when the kernel leaves.
 * Included once, by daemon_kernel.cu, after the paths' steps and
 * admission, which it calls.
 */
#ifndef DFCCL_GPU_SCHEDULE_CUH
#define DFCCL_GPU_SCHEDULE_CUH

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
            if (gpu_admit_seen(env, blk, sh, s, now, clk_now)) return;   /* CMD_ADMIT */
            continue;   /* not this block's collective */
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
