/*
 * jobs.c - a job's way through the daemon kernel's queues (jobs.h).
 * Application threads write submission entries into pinned memory under
 * sq.lock; a job that finds its slot taken, or that may not enter the
 * running launch, waits in the backlog. Completions come back through one
 * ring per kernel block, drained by the proxy thread or by a thread
 * polling for completions.
 */
#include <stdlib.h>
#include <string.h>
#include "util/clock.h"
#include "backends/gpu/direct.h"
#include "backends/gpu/diagnose.h"
#include "backends/gpu/jobs.h"
#include "backends/gpu/ll_head.h"
#include "util/log.h"
#include "backends/gpu/trace.h"

/* Block 0 admits a submission by copying the whole entry, plan included,
 * in 16-byte loads: the entry must end with its plan, on 16 bytes. */
_Static_assert(sizeof(dfccl_gpu_desc_t) == offsetof(dfccl_gpu_desc_t, steps) +
                                          DFCCL_GPU_INLINE_STEPS * sizeof(dfccl_step_t) &&
               sizeof(dfccl_gpu_desc_t) % 16 == 0,
               "a submission entry does not end with its plan on 16 bytes");

/* Hands a finished job to the engine's completion queue; sq.lock held. */
static void gpu_job_complete(dfccl_gpu_t *g, gpu_job_t *job, dfccl_status_t status)
{
    dfccl_call_t *coll = job->coll;

    g->sq.in_flight--;
    __atomic_sub_fetch(&gpu_comm_of(coll->comm)->in_flight, 1, __ATOMIC_RELAXED);
    dfccl_stats_add_completed(coll->type, status);
    if (status == DFCCL_OK) {
        uint64_t bytes = coll->total_count * job->desc.esize;
        dfccl_stats_add_bytes(bytes);
        /* its ring went through a link to another node */
        if (gpu_comm_of(coll->comm)->net != NULL) dfccl_stats_add_net();
    }
    dfccl_coll_complete(g->fixed.ctx, coll, status);
    dfccl_comm_release(coll->comm);
    free(coll);
    job->coll = NULL;
    if (job->pinned) {
        job->finished = 1;   /* the proxy, answering for it, frees it */
        return;
    }
    gpu_job_free(job);
}

/* Writes a job into its submission slot and publishes it; sq.lock held. */
static void gpu_job_submit(dfccl_gpu_t *g, gpu_job_t *job)
{
    uint64_t ticket = g->sq.next_ticket++;
    int slot = (int)(ticket % DFCCL_GPU_SQ_DEPTH);
    dfccl_gpu_desc_t *d = &g->fixed.descs[slot];
    size_t head = offsetof(dfccl_gpu_desc_t, steps);

    g->sq.slot_job[slot] = job;
    job->ticket = ticket;
    d->ticket = UINT64_MAX;                 /* lagging blocks: not this one */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    memcpy((char *)d + sizeof(d->ticket), (char *)&job->desc + sizeof(d->ticket),
           head - sizeof(d->ticket));
    memcpy(d->steps, job->desc.steps, job->desc.nsteps * sizeof(dfccl_step_t));
    gpu_ll_head_write(g, job, ticket, slot);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    d->ticket = ticket;
    __atomic_store_n(&g->fixed.ctrl->sq_tail, ticket + 1, __ATOMIC_SEQ_CST);
    if (g->env.trace) job->published_ns = dfccl_now_ns();
}

/* A launch touches only memory mapped before it began (as with the direct
 * path's mappings; compute-sanitizer checks against that): a collective on a
 * communicator connected while the kernel runs waits for the next launch,
 * which asking the running kernel to leave brings at once. Not while an
 * application stream waits for a stream-ordered collective: the kernel
 * must stay then (stream.c), and the communicator's memory, allocated
 * before the collective entered, is mapped for the device already. The
 * same holds for a long plan's buffer made for the job. Lock held. */
static int gpu_job_may_enter(dfccl_gpu_t *g, const gpu_job_t *job)
{
    uint64_t first = gpu_comm_of(job->coll->comm)->first_launch;

    if (job->min_launch > first) first = job->min_launch;   /* its long plan's buffer */
    if (!g->sq.kernel_running || g->env.launch_id >= first || gpu_kernel_held(g))
        return 1;
    gpu_kernel_yield(g);
    return 0;
}

void gpu_backlog_flush(dfccl_gpu_t *g)
{
    while (g->sq.backlog != NULL &&
           g->sq.slot_job[g->sq.next_ticket % DFCCL_GPU_SQ_DEPTH] == NULL &&
           gpu_job_may_enter(g, g->sq.backlog)) {
        gpu_job_t *job = g->sq.backlog;
        g->sq.backlog = job->next;
        if (g->sq.backlog == NULL) g->sq.backlog_tail = NULL;
        gpu_job_submit(g, job);
    }
}

/* The next entry of block b's completion ring, once its marker is there. */
static dfccl_gpu_cqe_t *gpu_cq_next(dfccl_gpu_t *g, unsigned b)
{
    dfccl_gpu_cqe_t *e =
        &g->fixed.cq[b * DFCCL_GPU_SQ_DEPTH + g->drain.cq_head[b] % DFCCL_GPU_SQ_DEPTH];
    return __atomic_load_n(&e->marker, __ATOMIC_ACQUIRE) == g->drain.cq_head[b] + 1 ? e : NULL;
}

/* Moves completion entries to the engine's completion queue; returns how
 * many. Callers polling for completions drain too (one thread at a time),
 * so a completion does not wait for the proxy thread to be scheduled.
 * Every block has its own ring; block 0, which completes the small
 * collectives, is looked at first. */
int gpu_drain(dfccl_gpu_t *g)
{
    int n = 0;

    if (pthread_mutex_trylock(&g->drain.lock) != 0) return 0;
    for (unsigned b = 0; b < g->fixed.blocks; b++) {
        dfccl_gpu_cqe_t *e;
        while ((e = gpu_cq_next(g, b)) != NULL) {
            int slot = (int)e->ticket;
            dfccl_status_t status = (dfccl_status_t)e->status;
            if (g->env.trace) gpu_trace_make_room(g);
            pthread_mutex_lock(&g->sq.lock);
            gpu_job_t *job = (unsigned)slot < DFCCL_GPU_SQ_DEPTH ? g->sq.slot_job[slot] : NULL;
            if (job != NULL) {
                g->sq.slot_job[slot] = NULL;
                if (g->env.trace) gpu_trace_record(g, job, e);
                if (status != DFCCL_OK) {
                    gpu_diagnose(job->coll, &job->desc, &e->diag);
                    job->coll->comm->broken = 1;
                }
                gpu_job_complete(g, job, status);
            } else {
                dfccl_error("GPU completion for an empty slot %d ignored", slot);
            }
            gpu_backlog_flush(g);
            pthread_mutex_unlock(&g->sq.lock);
            g->drain.cq_head[b]++;
            n++;
        }
    }
    pthread_mutex_unlock(&g->drain.lock);
    return n;
}

void dfccl_gpu_poll(dfccl_context_t *ctx)
{
    dfccl_gpu_t *g = __atomic_load_n(&gpu_ctx_of(ctx)->gpu, __ATOMIC_ACQUIRE);
    if (g != NULL) gpu_drain(g);
}

/* Everything still queued or running fails with status; sq.lock held. */
void gpu_fail_all(dfccl_gpu_t *g, dfccl_status_t status)
{
    for (int s = 0; s < DFCCL_GPU_SQ_DEPTH; s++) {
        if (g->sq.slot_job[s] == NULL) continue;
        gpu_job_complete(g, g->sq.slot_job[s], status);
        g->sq.slot_job[s] = NULL;
    }
    while (g->sq.backlog != NULL) {
        gpu_job_t *job = g->sq.backlog;
        g->sq.backlog = job->next;
        gpu_job_complete(g, job, status);
    }
    g->sq.backlog_tail = NULL;
}

/* Into the submission queue behind the backlog, which enters as far as it
 * may now. held: only if it enters at once, as an LL collective whose
 * inputs the host releases later (desc.held); then *ticket is its ticket,
 * read under sq.lock (the job may complete, and be freed, as soon as the
 * lock is released: on a failed communicator). Returns 1 when it entered
 * (always, unless held), 0 when it did not, -1 when the backend broke. */
int gpu_job_enqueue(dfccl_gpu_t *g, gpu_job_t *job, int held, uint64_t *ticket)
{
    int wake;

    pthread_mutex_lock(&g->sq.lock);
    if (g->sq.broken) {   /* gpu_fail_all may have run already: it would not be failed */
        pthread_mutex_unlock(&g->sq.lock);
        return -1;
    }
    if (held && (g->sq.backlog != NULL ||
                 g->sq.slot_job[g->sq.next_ticket % DFCCL_GPU_SQ_DEPTH] != NULL ||
                 !gpu_job_may_enter(g, job))) {
        pthread_mutex_unlock(&g->sq.lock);
        return 0;
    }
    /* the proxy sleeps while nothing is in flight: wake it for the first */
    wake = g->sq.in_flight++ == 0;
    job->next = NULL;
    job->desc.held = (uint32_t)held;
    if (g->sq.backlog_tail) g->sq.backlog_tail->next = job;
    else g->sq.backlog = job;
    g->sq.backlog_tail = job;
    gpu_backlog_flush(g);
    if (held) *ticket = job->ticket;   /* it entered: published */
    if (wake || !g->sq.kernel_running) pthread_cond_signal(&g->sq.wake);
    pthread_mutex_unlock(&g->sq.lock);
    return 1;
}
