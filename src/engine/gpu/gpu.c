/*
 * gpu.c - the GPU backend's host side: the daemon kernel's queues, its
 * launches, the proxy thread that turns completion entries into engine
 * completions, and GPU communicators (FIFOs and inboxes in device memory,
 * shared with the peers through CUDA IPC).
 *
 * The proxy thread owns the kernel: it launches it when work is pending and
 * it is not running, and again after a short backoff when it left while a
 * collective still waited for a peer (its state stays in device memory).
 * Application threads only write submission entries into pinned memory.
 */
#include <pthread.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "clock.h"
#include "direct.h"
#include "exec_host.h"
#include "kernels.h"
#include "log.h"
#include "stage.h"
#include "state.h"
#include "trace.h"

/* A failed kernel is noticed within this (a normal exit at once). */
#define GPU_EXIT_CHECK_NS 100000ull
/* After the kernel left with work pending and nothing new arrived, launch
 * it again after this backoff, doubling up to the cap: a peer that is late
 * by milliseconds does not cost a launch every few microseconds, and the
 * application's cudaDeviceSynchronize gets its window. */
#define GPU_RELAUNCH_MIN_NS 20000ull
#define GPU_RELAUNCH_MAX_NS 1000000ull
/* The proxy thread polls while collectives are in flight, yielding between
 * polls (ranks may share cores); with nothing in flight it keeps polling for
 * GPU_PROXY_LINGER_NS (the next collective usually follows soon: a sleeping
 * thread takes tens of microseconds to wake), then sleeps. */
#define GPU_PROXY_IDLE_WAIT_NS 10000000ull
#define GPU_PROXY_LINGER_NS    2000000ull
/* Bytes of a collective per channel below which fewer channels are used:
 * each channel has a fixed cost per slice. */
#define GPU_BYTES_PER_CHANNEL (256u * 1024u)
#define GPU_FIFO_ALIGN 256

_Static_assert(sizeof(dfccl_gpu_inbox_ctrl_t) <= DFCCL_GPU_BOARD_OFFSET &&
               DFCCL_GPU_BOARD_OFFSET + sizeof(dfccl_gpu_board_t) <= DFCCL_GPU_INBOX_DATA_OFFSET,
               "inbox counters, board and data slots overlap");
/* Block 0 admits a submission by copying the whole entry, plan included,
 * in 16-byte loads: the entry must end with its plan, on 16 bytes. */
_Static_assert(sizeof(dfccl_gpu_desc_t) == offsetof(dfccl_gpu_desc_t, steps) +
                                          DFCCL_GPU_MAX_STEPS * sizeof(dfccl_step_t) &&
               sizeof(dfccl_gpu_desc_t) % 16 == 0,
               "a submission entry does not end with its plan on 16 bytes");

/* The direct path from direct_bytes of (whole vector) x (ranks - 1) on:
 * the ring's fixed cost grows with the ranks (n - 1 or 2 (n - 1) steps,
 * each a round of flags between channels), the direct path's handshake
 * hardly does (the default and its measurements: dfccl_config_init).
 * 0: never. */
static int gpu_direct_wanted(size_t direct_bytes, size_t total_bytes, int size)
{
    uint64_t others = size > 1 ? (uint64_t)(size - 1) : 0;

    if (direct_bytes == 0 || others == 0) return 0;
    if (total_bytes > UINT64_MAX / others) return 1;
    return (uint64_t)total_bytes * others >= direct_bytes;
}

typedef struct gpu_hello {
    int32_t            status;
    int32_t            device;
    uint32_t           nchannels;
    uint32_t           nslots;
    uint64_t           slot_bytes;
    uint64_t           direct_bytes;      /* these two decide the algorithm and who owns */
    uint64_t           direct_chunk_bytes; /* which elements: equal on all ranks */
    uint64_t           ll_bytes;          /* decides the algorithm too */
    uint64_t           region_bytes;
    char               uuid[16];
    cudaIpcMemHandle_t handle;
} gpu_hello_t;

int dfccl_gpu_max_ranks(void)
{
    return DFCCL_GPU_MAX_RANKS;
}

size_t dfccl_gpu_hello_bytes(void)
{
    return sizeof(gpu_hello_t);
}

int dfccl_gpu_available(char *why, size_t why_len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);

    if (e != cudaSuccess || n == 0) {
        if (why && why_len)
            snprintf(why, why_len, "no usable CUDA device: %s",
                     e != cudaSuccess ? gpu_err(e) : "none found");
        return 0;
    }
    return 1;
}

/* ---- completions --------------------------------------------------------- */

static void gpu_diagnose(const dfccl_coll_t *coll, const dfccl_gpu_desc_t *d,
                         const dfccl_gpu_diag_t *g)
{
    const dfccl_comm_t *comm = coll->comm;
    char who[256];   /* the collective, as every message below names it (its ")" open) */

    if (g->waiting == 0xffffffffu) {
        dfccl_error("rank %d of comm %#llx: %s #%llu fails at once: an earlier collective on this"
                    " communicator failed", comm->rank, (unsigned long long)comm->key,
                    dfccl_coll_type_name(coll->type), (unsigned long long)coll->seq);
        return;
    }
    snprintf(who, sizeof who, "rank %d of comm %#llx (size %d, GPU): %s #%llu (%zu x %s, op %s,"
             " priority %d", comm->rank, (unsigned long long)comm->key, comm->size,
             dfccl_coll_type_name(coll->type), (unsigned long long)coll->seq, coll->total_count,
             dfccl_dtype_name((dfccl_dtype_t)d->dtype), dfccl_op_name((dfccl_op_t)d->op),
             coll->priority);
    if (g->algo == DFCCL_GPU_ALGO_DIRECT) {
        static const char *const phases[] = { "publishing its buffers", "waiting for the peers'"
            " buffers", "mapping the peers' buffers", "agreeing on the mappings", "waiting for"
            " channel 0's mappings", "moving data", "waiting for the peers to finish with its"
            " buffers", "done" };
        dfccl_error("%s, direct #%llu) made no progress for %.1f s on channel %u while %s: waiting"
                    " for rank %u%s (a rank that passes host buffers takes the stock path: is"
                    " rank %u passing host memory?)", who,
                    (unsigned long long)g->tail, (double)g->blocked_ns / 1e9, g->channel,
                    g->phase < 8 ? phases[g->phase] : "?", g->peer,
                    (int)g->peer == comm->rank ? " (this rank's host or channel 0)" : "", g->peer);
        return;
    }
    if (d->algo == DFCCL_GPU_ALGO_LL && g->waiting == DFCCL_WAIT_HOST) {
        dfccl_error("%s) made no progress for %.1f s: this rank's host never released its inputs"
                    " (its wait for CUDA's legacy default stream did not return)", who,
                    (double)g->blocked_ns / 1e9);
        return;
    }
    if (d->algo == DFCCL_GPU_ALGO_ONESHOT || d->algo == DFCCL_GPU_ALGO_LL) {
        dfccl_error("%s) made no progress for %.1f s in its %sone-shot #%llu: waiting for the data"
                    " of rank %d (a rank that passes host buffers takes the stock path: is rank %d"
                    " passing host memory?)", who, (double)g->blocked_ns / 1e9,
                    d->algo == DFCCL_GPU_ALGO_LL ? "LL " : "", (unsigned long long)g->tail,
                    (int)g->peer, (int)g->peer);
        return;
    }
    dfccl_error("%s) made no progress for %.1f s on channel %u at round %llu of %llu, step %u of"
                " %u (element %llu): waiting for %s rank %u (fifo tail %llu, head %llu); a rank"
                " that passes host buffers takes the stock path: is rank %u passing host memory?",
                who, (double)g->blocked_ns / 1e9, g->channel,
                (unsigned long long)g->round + 1, (unsigned long long)g->nrounds, g->step + 1,
                g->nsteps, (unsigned long long)g->offset,
                g->waiting == DFCCL_WAIT_SEND ? "a free slot at" : "data from", g->peer,
                (unsigned long long)g->tail, (unsigned long long)g->head, g->peer);
}

/* Hands a finished job to the engine's completion queue; lock held. */
static void gpu_job_complete(dfccl_gpu_t *g, gpu_job_t *job, dfccl_status_t status)
{
    dfccl_coll_t *coll = job->coll;

    g->in_flight--;
    dfccl_stats_add_completed(coll->type, status);
    if (status == DFCCL_OK) {
        uint64_t bytes = coll->total_count * job->desc.esize;
        dfccl_stats_add_bytes(bytes);
    }
    if (dfccl_cqueue_push(&g->ctx->complete, coll->user, status) != DFCCL_OK)
        dfccl_error("completion of %s #%llu lost: out of memory", dfccl_coll_type_name(coll->type),
                    (unsigned long long)coll->seq);
    dfccl_comm_release(coll->comm);
    free(coll);
    job->coll = NULL;
    if (job->pinned) {
        job->finished = 1;   /* the proxy, answering for it, frees it */
        return;
    }
    gpu_job_free(job);
}

/* Can the kernel's early send (gpu_ll_early.cuh) take this LL collective
 * from its summary? Allreduce and allgather; reduce-scatter when every
 * rank's block has the same count (the summary carries one count), as
 * MPI_Reduce_scatter_block's always do. */
static int gpu_ll_early_takes(const dfccl_gpu_desc_t *d, int size)
{
    if (d->algo != DFCCL_GPU_ALGO_LL) return 0;
    if (d->type != DFCCL_COLL_REDUCE_SCATTER) return 1;
    for (int r = 1; r < size; r++)
        if (d->rs_counts[r] != d->rs_counts[0]) return 0;
    return 1;
}

/* The LL summary's KIND word's value, unmarked; a collective the early send
 * cannot take says algorithm 0 there, which the kernel passes by. */
static uint64_t gpu_ll_head_kind(const dfccl_gpu_desc_t *d, int size)
{
    uint64_t algo = gpu_ll_early_takes(d, size) ? d->algo : 0;

    return (uint64_t)d->type | (uint64_t)d->dtype << 8 | (uint64_t)d->op << 16 | algo << 24;
}

/* The slot's LL head (gpu_shared.h) for ticket: every word tagged, also for
 * collectives that do not use it, so that no older record can pass for the
 * ticket's. */
static void gpu_ll_head_write(dfccl_gpu_t *g, const gpu_job_t *job, uint64_t ticket, int slot)
{
    const dfccl_gpu_desc_t *d = &job->desc;
    const dfccl_comm_t *comm = job->coll->comm;
    uint64_t v[DFCCL_GPU_LLH_WORDS], tag = (uint32_t)ticket;

    v[DFCCL_GPU_LLH_COMM] = d->comm_index;
    v[DFCCL_GPU_LLH_KIND] = gpu_ll_head_kind(d, comm->size) | (d->held ? DFCCL_GPU_LLH_HELD : 0);
    /* LL: at most 16384 bytes; reduce-scatter: each block's (alike when taken) */
    v[DFCCL_GPU_LLH_COUNT] =
        (uint32_t)(d->type == DFCCL_COLL_REDUCE_SCATTER ? d->rs_counts[0] : d->count);
    v[DFCCL_GPU_LLH_SHAPE] = (uint64_t)(d->esize & 0xff) | (uint64_t)(comm->rank & 0xff) << 8 |
                             (uint64_t)(comm->size & 0xffff) << 16;
    v[DFCCL_GPU_LLH_IN_LO] = (uint32_t)(uintptr_t)job->in;
    v[DFCCL_GPU_LLH_IN_HI] = (uint64_t)(uintptr_t)job->in >> 32;
    v[DFCCL_GPU_LLH_OUT_LO] = (uint32_t)(uintptr_t)d->recvbuf;
    v[DFCCL_GPU_LLH_OUT_HI] = (uint64_t)(uintptr_t)d->recvbuf >> 32;
    for (int w = 0; w < DFCCL_GPU_LLH_WORDS; w++) g->ll_heads[slot].w[w] = v[w] << 32 | tag;
}

/* The host's wait for the legacy default stream returned: ticket's held LL
 * collective (in slot) may read its inputs. Its summary's KIND word again,
 * unmarked; lock held. */
static void gpu_ll_head_release(dfccl_gpu_t *g, const gpu_job_t *job, uint64_t ticket, int slot)
{
    __atomic_store_n(&g->ll_heads[slot].w[DFCCL_GPU_LLH_KIND],
                     gpu_ll_head_kind(&job->desc, job->coll->comm->size) << 32 | (uint32_t)ticket,
                     __ATOMIC_SEQ_CST);
}

/* Writes a job into its submission slot and publishes it; lock held. */
static void gpu_job_submit(dfccl_gpu_t *g, gpu_job_t *job)
{
    uint64_t ticket = g->next_ticket++;
    int slot = (int)(ticket % DFCCL_GPU_SQ_DEPTH);
    dfccl_gpu_desc_t *d = &g->descs[slot];
    size_t head = offsetof(dfccl_gpu_desc_t, steps);

    g->slot_job[slot] = job;
    job->ticket = ticket;
    d->ticket = UINT64_MAX;                 /* lagging blocks: not this one */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    memcpy((char *)d + sizeof(d->ticket), (char *)&job->desc + sizeof(d->ticket),
           head - sizeof(d->ticket));
    memcpy(d->steps, job->desc.steps, job->desc.nsteps * sizeof(dfccl_step_t));
    gpu_ll_head_write(g, job, ticket, slot);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    d->ticket = ticket;
    __atomic_store_n(&g->ctrl->sq_tail, ticket + 1, __ATOMIC_SEQ_CST);
    if (g->env.trace) job->published_ns = dfccl_now_ns();
}

/* A launch touches only memory mapped before it began (as with the direct
 * path's mappings; compute-sanitizer checks against that): a collective on a
 * communicator connected while the kernel runs waits for the next launch,
 * which asking the running kernel to leave brings at once. Lock held. */
static int gpu_job_may_enter(dfccl_gpu_t *g, const gpu_job_t *job)
{
    if (!g->kernel_running || g->env.launch_id >= job->coll->comm->gpu->first_launch) return 1;
    gpu_kernel_yield(g);
    return 0;
}

static void gpu_backlog_flush(dfccl_gpu_t *g)
{
    while (g->backlog != NULL && g->slot_job[g->next_ticket % DFCCL_GPU_SQ_DEPTH] == NULL &&
           gpu_job_may_enter(g, g->backlog)) {
        gpu_job_t *job = g->backlog;
        g->backlog = job->next;
        if (g->backlog == NULL) g->backlog_tail = NULL;
        gpu_job_submit(g, job);
    }
}

/* The next entry of block b's completion ring, once its marker is there. */
static dfccl_gpu_cqe_t *gpu_cq_next(dfccl_gpu_t *g, unsigned b)
{
    dfccl_gpu_cqe_t *e = &g->cq[b * DFCCL_GPU_SQ_DEPTH + g->cq_head[b] % DFCCL_GPU_SQ_DEPTH];
    return __atomic_load_n(&e->marker, __ATOMIC_ACQUIRE) == g->cq_head[b] + 1 ? e : NULL;
}

/* Moves completion entries to the engine's completion queue; returns how
 * many. Callers polling for completions drain too (one thread at a time),
 * so a completion does not wait for the proxy thread to be scheduled.
 * Every block has its own ring; block 0, which completes the small
 * collectives, is looked at first. */
static int gpu_drain(dfccl_gpu_t *g)
{
    int n = 0;

    if (pthread_mutex_trylock(&g->drain_lock) != 0) return 0;
    for (unsigned b = 0; b < g->blocks; b++) {
        dfccl_gpu_cqe_t *e;
        while ((e = gpu_cq_next(g, b)) != NULL) {
            int slot = (int)e->ticket;
            dfccl_status_t status = (dfccl_status_t)e->status;
            if (g->env.trace) gpu_trace_make_room(g);
            pthread_mutex_lock(&g->lock);
            gpu_job_t *job = (unsigned)slot < DFCCL_GPU_SQ_DEPTH ? g->slot_job[slot] : NULL;
            if (job != NULL) {
                g->slot_job[slot] = NULL;
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
            pthread_mutex_unlock(&g->lock);
            g->cq_head[b]++;
            n++;
        }
    }
    pthread_mutex_unlock(&g->drain_lock);
    return n;
}

void dfccl_gpu_poll(dfccl_context_t *ctx)
{
    dfccl_gpu_t *g = __atomic_load_n(&ctx->gpu, __ATOMIC_ACQUIRE);
    if (g != NULL) gpu_drain(g);
}

/* Everything still queued or running fails with status; lock held. */
static void gpu_fail_all(dfccl_gpu_t *g, dfccl_status_t status)
{
    for (int s = 0; s < DFCCL_GPU_SQ_DEPTH; s++) {
        if (g->slot_job[s] == NULL) continue;
        gpu_job_complete(g, g->slot_job[s], status);
        g->slot_job[s] = NULL;
    }
    while (g->backlog != NULL) {
        gpu_job_t *job = g->backlog;
        g->backlog = job->next;
        gpu_job_complete(g, job, status);
    }
    g->backlog_tail = NULL;
}

static void gpu_comm_free_resources(dfccl_gpu_t *g, dfccl_gpu_comm_t *gc, int size, int rank)
{
    for (int p = 0; p < size; p++)
        if (p != rank && gc->peer_base[p] != NULL) cudaIpcCloseMemHandle(gc->peer_base[p]);
    gpu_direct_maps_release(gc, size);
    if (gc->region != NULL) cudaFree(gc->region);
    if (gc->index >= 0) {
        pthread_mutex_lock(&g->lock);
        g->comm_used[gc->index] = 0;
        pthread_mutex_unlock(&g->lock);
    }
}

/* Released communicators: their memory goes while the kernel is out (a
 * cudaFree would wait for it anyway). */
typedef struct gpu_dead {
    dfccl_gpu_comm_t *gc;
    int size, rank;
} gpu_dead_t;

static void gpu_free_dead(dfccl_gpu_t *g)
{
    dfccl_gpu_comm_t *list;

    pthread_mutex_lock(&g->dead_lock);
    list = g->dead;
    g->dead = NULL;
    pthread_mutex_unlock(&g->dead_lock);
    while (list != NULL) {
        dfccl_gpu_comm_t *gc = list;
        gpu_dead_t *info = (gpu_dead_t *)(gc + 1);
        list = gc->next_dead;
        gpu_comm_free_resources(g, gc, info->size, info->rank);
        free(gc);
    }
}

/* The kernel cannot run (launch error, fault): everything pending fails and
 * later GPU collectives are refused. */
static void gpu_break(dfccl_gpu_t *g, const char *what, cudaError_t e)
{
    dfccl_error("GPU daemon %s: %s: GPU collectives fail", what, gpu_err(e));
    pthread_mutex_lock(&g->lock);
    __atomic_store_n(&g->broken, 1, __ATOMIC_RELEASE);
    gpu_fail_all(g, DFCCL_ERR_SYSTEM);
    pthread_mutex_unlock(&g->lock);
}

static void gpu_launch(dfccl_gpu_t *g)
{
    int rc;

    pthread_mutex_lock(&g->lock);
    if (g->broken) {   /* a submitter broke it since the proxy looked */
        pthread_mutex_unlock(&g->lock);
        return;
    }
    g->env.launch_id++;
    g->kernel_running = 1;
    g->launch_ticket = g->next_ticket;
    pthread_mutex_unlock(&g->lock);
    rc = dfccl_gpu_kernel_launch(&g->env, g->blocks, g->threads, g->stream);
    cudaError_t e = rc == 0 ? cudaEventRecord(g->exited, g->stream) : (cudaError_t)rc;

    if (e != cudaSuccess) {
        pthread_mutex_lock(&g->lock);
        g->kernel_running = 0;
        pthread_mutex_unlock(&g->lock);
        gpu_break(g, "launch failed", e);
        return;
    }
    g->launched = 1;
}

/* Whether the proxy asks the driver now if the kernel has ended: at once
 * when the kernel said it is leaving (ctrl->left), else at most every
 * GPU_EXIT_CHECK_NS, for a kernel that failed and said nothing. A query on
 * every loop of the proxy contends for the driver with the caller's own
 * CUDA calls: asking only then took the 8 B allreduce at 4 ranks from
 * 20.45/21.02 to 19.85/19.65 us (contrib/results/2026-11-30-gpu-latency-path.md). */
static int gpu_exit_check_due(dfccl_gpu_t *g)
{
    uint64_t now;

    if (__atomic_load_n(&g->ctrl->left, __ATOMIC_ACQUIRE) == g->env.launch_id) return 1;
    now = dfccl_now_ns();
    if (now - g->exit_checked_ns < GPU_EXIT_CHECK_NS) return 0;
    g->exit_checked_ns = now;
    return 1;
}

static void *gpu_proxy_main(void *arg)
{
    dfccl_gpu_t *g = arg;
    uint64_t idle_since = 0;

    cudaSetDevice(g->device);
    g->backoff_ns = GPU_RELAUNCH_MIN_NS;
    for (;;) {
        if (gpu_drain(g) > 0) g->backoff_ns = GPU_RELAUNCH_MIN_NS;
        gpu_direct_service(g);
        if (g->launched && gpu_exit_check_due(g)) {
            cudaError_t e = cudaEventQuery(g->exited);
            if (e != cudaErrorNotReady) {
                g->launched = 0;
                g->exit_ns = dfccl_now_ns();
                /* collectives held for the next launch may enter now */
                pthread_mutex_lock(&g->lock);
                g->kernel_running = 0;
                gpu_backlog_flush(g);
                pthread_mutex_unlock(&g->lock);
                gpu_drain(g);   /* what it completed on its way out */
                if (g->nheld > 0) gpu_direct_release_held(g);
                if (e != cudaSuccess) gpu_break(g, "kernel failed", e);
            }
        }
        pthread_mutex_lock(&g->lock);
        int stop = g->stop;
        uint64_t in_flight = g->in_flight, fresh = g->next_ticket > g->launch_ticket;
        int dead = __atomic_load_n(&g->dead, __ATOMIC_ACQUIRE) != NULL;
        pthread_mutex_unlock(&g->lock);
        if (!g->launched) {
            if (dead) gpu_free_dead(g);
            if (g->nclose > 0) gpu_direct_close_pending(g);
            if (__atomic_load_n(&g->stage_trim, __ATOMIC_ACQUIRE)) gpu_stage_trim(g);
            if (stop) break;
            if (in_flight > 0 && __atomic_load_n(&g->broken, __ATOMIC_ACQUIRE)) {
                /* broken by a submitter (gpu_legacy_wait_failed) and no
                 * kernel runs: what it completed first, then the rest fails */
                gpu_drain(g);
                pthread_mutex_lock(&g->lock);
                gpu_fail_all(g, DFCCL_ERR_SYSTEM);
                pthread_mutex_unlock(&g->lock);
            } else if (in_flight > 0) {
                uint64_t now = dfccl_now_ns();
                /* relaunch_now: set by this thread, or by a submitter
                 * releasing a held collective (gpu.c) */
                if (__atomic_exchange_n(&g->relaunch_now, 0, __ATOMIC_ACQ_REL) || fresh) {
                    gpu_launch(g);
                } else if (now - g->exit_ns >= g->backoff_ns) {
                    gpu_launch(g);
                    g->backoff_ns = 2 * g->backoff_ns < GPU_RELAUNCH_MAX_NS ? 2 * g->backoff_ns
                                                                           : GPU_RELAUNCH_MAX_NS;
                }
            }
        }
        if (in_flight > 0 || stop) {
            idle_since = 0;
        } else if (idle_since == 0) {
            idle_since = dfccl_now_ns();
        }
        if (in_flight == 0 && !stop && dfccl_now_ns() - idle_since > GPU_PROXY_LINGER_NS) {
            pthread_mutex_lock(&g->lock);
            if (g->in_flight == 0 && !g->stop && __atomic_load_n(&g->dead, __ATOMIC_ACQUIRE) == NULL) {
                struct timespec until;
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_nsec += (long)(GPU_PROXY_IDLE_WAIT_NS % 1000000000ull);
                if (until.tv_nsec >= 1000000000L) {
                    until.tv_sec++;
                    until.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&g->wake, &g->lock, &until);
            }
            pthread_mutex_unlock(&g->lock);
        } else {
            sched_yield();
        }
    }
    /* shutting down: the kernel has left */
    gpu_drain(g);
    pthread_mutex_lock(&g->lock);
    gpu_fail_all(g, DFCCL_ERR_SHUTDOWN);
    pthread_mutex_unlock(&g->lock);
    gpu_free_dead(g);
    gpu_direct_close_pending(g);
    return NULL;
}

/* ---- the backend ----------------------------------------------------------- */

static void gpu_release_resources(dfccl_gpu_t *g)
{
    if (g->env.state) cudaFree(g->env.state);
    if (g->env.comms) cudaFree(g->env.comms);
    if (g->ctrl) cudaFreeHost(g->ctrl);
    if (g->descs) cudaFreeHost(g->descs);
    if (g->ll_heads) cudaFreeHost(g->ll_heads);
    if (g->cq) cudaFreeHost(g->cq);
    if (g->direct_req) cudaFreeHost(g->direct_req);
    if (g->direct_reply) cudaFreeHost(g->direct_reply);
    free(g->to_close);
    if (g->exited) cudaEventDestroy(g->exited);
    if (g->stream) cudaStreamDestroy(g->stream);
    if (g->copy_stream) cudaStreamDestroy(g->copy_stream);
    gpu_stage_release(g);
}

static void gpu_sync_fini(dfccl_gpu_t *g)
{
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->dead_lock);
    pthread_mutex_destroy(&g->drain_lock);
    pthread_mutex_destroy(&g->lock);
    pthread_mutex_destroy(&g->stage_lock);
}

/* Daemon blocks of `threads` threads the device holds at once (its *sms
 * SMs times the blocks per SM); 0 when CUDA cannot say. */
static int gpu_block_capacity(int device, unsigned threads, int *sms)
{
    int per_sm = 0;

    *sms = 0;
    if (cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        dfccl_gpu_kernel_per_sm(threads, &per_sm) != 0 || *sms < 1 || per_sm < 1) {
        cudaGetLastError();
        return 0;
    }
    return *sms * per_sm;
}

/* Blocks of the daemon kernel under gpu_channels 0: as many as let the
 * kernels of all the job's ranks on this node be resident together on one
 * GPU (gpu_warn_crowded says why they must), at most DFCCL_GPU_MAX_CHANNELS;
 * unknown ranks count as 8. Which GPU another rank uses is not known before
 * its first communicator, and ranks that never choose one all share device
 * 0, so the count does not assume they are spread over the GPUs. More
 * blocks move large collectives faster while they fit: a 256 MiB allreduce
 * at 4 ranks on one H200 took 614-659 us with 32 blocks and 710-718 us with
 * 16 (contrib/results/2026-11-30-gpu-channels.md). The device is current on
 * this thread. */
static unsigned gpu_auto_channels(const dfccl_config_t *cfg, int device, unsigned threads)
{
    int sms, capacity = gpu_block_capacity(device, threads, &sms);
    unsigned sharing = cfg->gpu_local_ranks > 0 ? cfg->gpu_local_ranks : 8, fit;

    if (capacity == 0) return 16;
    fit = (unsigned)capacity / sharing;
    return fit < 1 ? 1 : fit > DFCCL_GPU_MAX_CHANNELS ? DFCCL_GPU_MAX_CHANNELS : fit;
}

static dfccl_status_t gpu_create(dfccl_context_t *ctx, dfccl_gpu_t **gpu_p)
{
    const dfccl_config_t *cfg = &ctx->config;
    dfccl_gpu_t *g = calloc(1, sizeof(*g));
    cudaError_t e;
    void *dev;
    int rc;

    if (g == NULL) return DFCCL_ERR_NO_MEMORY;
    g->ctx = ctx;
    e = cudaGetDevice(&g->device);
    if (e != cudaSuccess) goto err_cuda;
    g->threads = cfg->gpu_threads;
    g->blocks = cfg->gpu_channels ? cfg->gpu_channels
                                  : gpu_auto_channels(cfg, g->device, g->threads);
    if ((e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&g->copy_stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (e = cudaEventCreateWithFlags(&g->exited, cudaEventDisableTiming)) != cudaSuccess ||
        (e = cudaHostAlloc((void **)&g->ctrl, sizeof(*g->ctrl), cudaHostAllocMapped)) !=
            cudaSuccess ||
        (e = cudaHostAlloc((void **)&g->descs, sizeof(*g->descs) * DFCCL_GPU_SQ_DEPTH,
                           cudaHostAllocMapped)) != cudaSuccess ||
        (e = cudaHostAlloc((void **)&g->ll_heads, sizeof(*g->ll_heads) * DFCCL_GPU_SQ_DEPTH,
                           cudaHostAllocMapped)) != cudaSuccess ||
        (e = cudaHostAlloc((void **)&g->cq, sizeof(*g->cq) * DFCCL_GPU_SQ_DEPTH * g->blocks,
                           cudaHostAllocMapped)) != cudaSuccess ||
        (e = cudaHostAlloc((void **)&g->direct_req, sizeof(*g->direct_req) * DFCCL_GPU_SQ_DEPTH,
                           cudaHostAllocMapped)) != cudaSuccess ||
        (e = cudaHostAlloc((void **)&g->direct_reply,
                           sizeof(*g->direct_reply) * DFCCL_GPU_SQ_DEPTH, cudaHostAllocMapped)) !=
            cudaSuccess ||
        (e = cudaMalloc((void **)&g->env.state, sizeof(dfccl_gpu_state_t))) != cudaSuccess ||
        (e = cudaMalloc((void **)&g->env.comms, sizeof(dfccl_gpu_comm_dev_t) * DFCCL_GPU_MAX_COMMS)) !=
            cudaSuccess)
        goto err_cuda;
    memset(g->ctrl, 0, sizeof(*g->ctrl));
    memset(g->descs, 0, sizeof(*g->descs) * DFCCL_GPU_SQ_DEPTH);
    for (int s = 0; s < DFCCL_GPU_SQ_DEPTH; s++) g->descs[s].ticket = UINT64_MAX;
    /* tags of ticket 0 in slot 0, but of no LL collective (kind 0) */
    memset((void *)g->ll_heads, 0, sizeof(*g->ll_heads) * DFCCL_GPU_SQ_DEPTH);
    memset(g->cq, 0, sizeof(*g->cq) * DFCCL_GPU_SQ_DEPTH * g->blocks);
    memset(g->direct_req, 0, sizeof(*g->direct_req) * DFCCL_GPU_SQ_DEPTH);
    memset(g->direct_reply, 0, sizeof(*g->direct_reply) * DFCCL_GPU_SQ_DEPTH);
    if ((e = cudaMemsetAsync(g->env.state, 0, sizeof(dfccl_gpu_state_t), g->copy_stream)) !=
            cudaSuccess ||
        (e = cudaStreamSynchronize(g->copy_stream)) != cudaSuccess)
        goto err_cuda;
    if ((e = cudaHostGetDevicePointer(&dev, g->ctrl, 0)) != cudaSuccess) goto err_cuda;
    g->env.ctrl = dev;
    if ((e = cudaHostGetDevicePointer(&dev, g->descs, 0)) != cudaSuccess) goto err_cuda;
    g->env.descs = dev;
    if ((e = cudaHostGetDevicePointer(&dev, g->ll_heads, 0)) != cudaSuccess) goto err_cuda;
    g->env.ll_heads = dev;
    if ((e = cudaHostGetDevicePointer(&dev, g->cq, 0)) != cudaSuccess) goto err_cuda;
    g->env.cq = dev;
    if ((e = cudaHostGetDevicePointer(&dev, g->direct_req, 0)) != cudaSuccess) goto err_cuda;
    g->env.direct_req = dev;
    if ((e = cudaHostGetDevicePointer(&dev, g->direct_reply, 0)) != cudaSuccess) goto err_cuda;
    g->env.direct_reply = dev;
    g->env.direct_chunk_bytes = cfg->gpu_direct_chunk_bytes;
    {
        enum cudaDriverEntryPointQueryResult found1 = cudaDriverEntryPointSymbolNotFound, found2 = found1;
        void *fn1 = NULL, *fn2 = NULL;
        cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn1, 12000, cudaEnableDefault,
                                         &found1);
        cudaGetDriverEntryPointByVersion("cuIpcGetMemHandle", &fn2, 12000, cudaEnableDefault,
                                         &found2);
        if (found1 == cudaDriverEntryPointSuccess && found2 == cudaDriverEntryPointSuccess) {
            g->get_range = (gpu_get_range_fn_t)fn1;
            g->get_handle = (gpu_get_handle_fn_t)fn2;
        } else {
            dfccl_info("cuMemGetAddressRange or cuIpcGetMemHandle not found: large GPU collectives"
                       " use the ring");
        }
        cudaGetLastError();
    }
    g->env.budget_head_ns = cfg->budget_head_ns;
    g->env.budget_ns = cfg->budget_ns;
    g->env.budget_min_ns = cfg->budget_min_ns;
    g->env.budget_max_ns = cfg->budget_max_ns;
    g->env.timeout_ns = (uint64_t)(cfg->timeout_sec * 1e9);
    g->env.idle_quit_ns = cfg->gpu_idle_quit_ns;
    g->env.stuck_quit_ns = cfg->gpu_stuck_quit_ns;
    g->env.poll_max_ns = cfg->gpu_poll_max_ns;
    g->env.trace = cfg->gpu_trace != 0;
    g->env.ll_wait_ns = cfg->gpu_ll_wait_ns;
    g->env.ll_early_send = cfg->gpu_ll_early_send != 0;
    if (g->env.trace) gpu_trace_start(g);
    pthread_mutex_init(&g->lock, NULL);
    pthread_mutex_init(&g->drain_lock, NULL);
    pthread_mutex_init(&g->dead_lock, NULL);
    pthread_mutex_init(&g->stage_lock, NULL);
    pthread_cond_init(&g->wake, NULL);
    rc = pthread_create(&g->proxy, NULL, gpu_proxy_main, g);
    if (rc != 0) {
        dfccl_error("cannot start the GPU proxy thread: %s", strerror(rc));
        gpu_trace_stop(g);
        gpu_sync_fini(g);
        gpu_release_resources(g);
        free(g);
        return DFCCL_ERR_SYSTEM;
    }
    dfccl_info("GPU backend started on device %d: %u channels%s x %u threads, FIFOs %u x %zu bytes",
               g->device, g->blocks, cfg->gpu_channels ? "" : " (as many as fit)", g->threads,
               cfg->gpu_fifo_slots, cfg->gpu_slot_bytes);
    *gpu_p = g;
    return DFCCL_OK;

err_cuda:
    dfccl_error("GPU backend not started: %s", gpu_err(e));
    gpu_release_resources(g);
    free(g);
    return DFCCL_ERR_SYSTEM;
}

dfccl_status_t gpu_get(dfccl_context_t *ctx, dfccl_gpu_t **gpu_p)
{
    dfccl_status_t status = DFCCL_OK;

    pthread_mutex_lock(&ctx->gpu_lock);
    if (ctx->gpu == NULL) {
        const dfccl_config_t *cfg = &ctx->config;
        if (cfg->gpu_channels > DFCCL_GPU_MAX_CHANNELS ||
            cfg->gpu_threads < 64 || cfg->gpu_threads > 512 || cfg->gpu_threads % 32 != 0 ||
            cfg->gpu_slot_bytes < 1024 || cfg->gpu_slot_bytes % 16 != 0 || cfg->gpu_fifo_slots < 2 ||
            cfg->gpu_direct_chunk_bytes < 4096 || cfg->gpu_ll_bytes > DFCCL_GPU_LL_MAX_BYTES) {
            dfccl_error("invalid GPU configuration: channels %u (0..%d), threads %u (64..512, a"
                        " multiple of 32), slot bytes %zu (>= 1024, a multiple of 16), slots %u"
                        " (>= 2), direct chunk bytes %zu (>= 4096), LL bytes %zu (<= %d)",
                        cfg->gpu_channels, DFCCL_GPU_MAX_CHANNELS, cfg->gpu_threads,
                        cfg->gpu_slot_bytes, cfg->gpu_fifo_slots, cfg->gpu_direct_chunk_bytes,
                        cfg->gpu_ll_bytes, DFCCL_GPU_LL_MAX_BYTES);
            status = DFCCL_ERR_INVALID_PARAM;
        } else {
            status = gpu_create(ctx, &ctx->gpu);
        }
    }
    *gpu_p = ctx->gpu;
    pthread_mutex_unlock(&ctx->gpu_lock);
    return status;
}

void dfccl_gpu_destroy(dfccl_context_t *ctx)
{
    dfccl_gpu_t *g = ctx->gpu;

    if (g == NULL) return;
    __atomic_store_n(&g->ctrl->stop, UINT64_MAX, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&g->lock);
    g->stop = 1;
    pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->lock);
    pthread_join(g->proxy, NULL);
    __atomic_store_n(&ctx->gpu, NULL, __ATOMIC_RELEASE);   /* pollers stop looking first */
    pthread_mutex_lock(&g->drain_lock);   /* a poller that looked before is done */
    gpu_trace_stop(g);
    pthread_mutex_unlock(&g->drain_lock);
    gpu_sync_fini(g);
    gpu_release_resources(g);
    free(g);
}

/* Lends a staging block (stage.c), creating the backend first where it
 * does not exist yet. */
dfccl_status_t dfccl_gpu_stage_alloc(dfccl_context_t *ctx, size_t bytes, void **buf_p)
{
    dfccl_gpu_t *g;
    dfccl_status_t status;

    *buf_p = NULL;
    status = gpu_get(ctx, &g);
    if (status != DFCCL_OK) return status;
    return gpu_stage_take(g, bytes, buf_p);
}

/* ---- communicators ----------------------------------------------------------- */

static size_t gpu_fifo_bytes(const dfccl_config_t *cfg)
{
    size_t b = dfccl_fifo_bytes(cfg->gpu_slot_bytes, cfg->gpu_fifo_slots);
    return (b + GPU_FIFO_ALIGN - 1) / GPU_FIFO_ALIGN * GPU_FIFO_ALIGN;
}

static size_t gpu_inbox_bytes(int size)
{
    size_t b = DFCCL_GPU_INBOX_BYTES(size);
    return (b + GPU_FIFO_ALIGN - 1) / GPU_FIFO_ALIGN * GPU_FIFO_ALIGN;
}

dfccl_status_t dfccl_gpu_comm_begin(dfccl_context_t *ctx, const dfccl_comm_params_t *p,
                                    dfccl_comm_t **comm_p, void *hello_out)
{
    gpu_hello_t hello;
    dfccl_comm_t *comm;
    dfccl_gpu_comm_t *gc;
    dfccl_gpu_t *g = NULL;
    dfccl_status_t status;
    struct cudaDeviceProp prop;
    cudaError_t e;

    memset(&hello, 0, sizeof(hello));
    if (ctx == NULL || p == NULL || comm_p == NULL || p->size < 1 || p->rank < 0 ||
        p->rank >= p->size)
        return DFCCL_ERR_INVALID_PARAM;
    comm = calloc(1, sizeof(*comm));
    gc = calloc(1, sizeof(*gc) + sizeof(gpu_dead_t));
    if (comm == NULL || gc == NULL) {
        free(comm);
        free(gc);
        return DFCCL_ERR_NO_MEMORY;
    }
    comm->context = ctx;
    comm->rank = p->rank;
    comm->size = p->size;
    comm->key = p->key;
    comm->refs = 1;
    comm->gpu = gc;
    gc->index = -1;
    gc->failed = DFCCL_ERR_UNSUPPORTED;
    *comm_p = comm;

    hello.nslots = ctx->config.gpu_fifo_slots;
    hello.slot_bytes = ctx->config.gpu_slot_bytes;
    hello.direct_bytes = ctx->config.gpu_direct_bytes;
    hello.direct_chunk_bytes = ctx->config.gpu_direct_chunk_bytes;
    hello.ll_bytes = ctx->config.gpu_ll_bytes;
    if (p->size > DFCCL_GPU_MAX_RANKS) {
        dfccl_info("comm %#llx: %d ranks, the GPU backend carries at most %d",
                   (unsigned long long)p->key, p->size, DFCCL_GPU_MAX_RANKS);
        status = DFCCL_ERR_UNSUPPORTED;
        goto out;
    }
    status = gpu_get(ctx, &g);
    if (status != DFCCL_OK) goto out;
    hello.device = g->device;
    hello.nchannels = g->blocks;
    if ((e = cudaGetDeviceProperties(&prop, g->device)) != cudaSuccess) goto err_cuda;
    memcpy(hello.uuid, &prop.uuid, sizeof(hello.uuid));
    gc->region_bytes = gpu_inbox_bytes(p->size) + (size_t)g->blocks * gpu_fifo_bytes(&ctx->config);
    hello.region_bytes = gc->region_bytes;
    {
        int previous = gpu_device_enter(g);
        e = cudaMalloc((void **)&gc->region, gc->region_bytes);
        if (e == cudaSuccess) e = cudaMemsetAsync(gc->region, 0, gc->region_bytes, g->copy_stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(g->copy_stream);
        if (e == cudaSuccess) e = cudaIpcGetMemHandle(&gc->handle, gc->region);
        gpu_device_leave(g, previous);
    }
    if (e != cudaSuccess) goto err_cuda;
    hello.handle = gc->handle;
    status = DFCCL_OK;
    goto out;

err_cuda:
    dfccl_error("comm %#llx: GPU set-up on rank %d failed: %s", (unsigned long long)p->key,
                p->rank, gpu_err(e));
    status = DFCCL_ERR_SYSTEM;
out:
    hello.status = (int32_t)status;
    memcpy(hello_out, &hello, sizeof(hello));
    gc->failed = status;
    return DFCCL_OK;
}

/* Are ranks a and b on the same GPU (by the device's UUID)? */
static int gpu_hello_same_device(const gpu_hello_t *a, const gpu_hello_t *b)
{
    return memcmp(a->uuid, b->uuid, sizeof(a->uuid)) == 0;
}

/* The daemon kernels of all ranks on one GPU must be resident together:
 * blocks that wait for an SM wait for others to leave, and a 256 MiB
 * allreduce of 8 ranks with 32 blocks each on one H200 took 6.7 ms instead
 * of 2.3 (contrib/results). Said once per process, when a communicator
 * shows more ranks on our device than its SMs hold kernels, by the first
 * of them; the device is current on this thread. */
static void gpu_warn_crowded(dfccl_gpu_t *g, const gpu_hello_t *all, int me, int n)
{
    int sharing = 0, first = me, sms, capacity;
    long blocks = 0;   /* the kernels of all ranks on our device (their own counts) */

    if (g->crowd_warned) return;
    for (int r = 0; r < n; r++) {
        if (!gpu_hello_same_device(&all[r], &all[me])) continue;
        sharing++;
        blocks += all[r].nchannels;
        if (r < first) first = r;
    }
    capacity = gpu_block_capacity(g->device, g->threads, &sms);
    if (capacity == 0 || blocks <= capacity) return;
    g->crowd_warned = 1;
    if (me != first) return;   /* one rank per device says it */
    dfccl_error("%d ranks share GPU %d, their daemon kernels %ld blocks of %u threads together,"
                " but its %d SMs hold %d such blocks at once: the kernels wait for each other and"
                " collectives slow down; lower coll_dfccl_gpu_channels or coll_dfccl_gpu_threads"
                " so that the ranks' channels add up to at most %d", sharing, g->device, blocks,
                g->threads, sms, capacity, capacity);
}

dfccl_status_t dfccl_gpu_comm_connect(dfccl_comm_t *comm, const void *hellos)
{
    const gpu_hello_t *all = hellos;
    dfccl_gpu_comm_t *gc = comm->gpu;
    dfccl_context_t *ctx = comm->context;
    dfccl_gpu_t *g = ctx->gpu;
    const dfccl_config_t *cfg = &ctx->config;
    dfccl_gpu_comm_dev_t dev;
    int me = comm->rank, n = comm->size, next = (me + 1) % n, prev = (me + n - 1) % n, current = -1;
    size_t inbox = gpu_inbox_bytes(n), fifo = gpu_fifo_bytes(cfg);
    cudaError_t e = cudaSuccess;

    for (int r = 0; r < n; r++) {
        if (all[r].status != DFCCL_OK) return (dfccl_status_t)all[r].status;
        if (all[r].nslots != all[me].nslots || all[r].slot_bytes != all[me].slot_bytes) {
            if (me == 0)
                dfccl_error("comm %#llx: rank %d has GPU FIFOs of %u x %llu bytes, rank 0 %u x"
                            " %llu: these settings must be equal on all ranks",
                            (unsigned long long)comm->key, r, all[r].nslots,
                            (unsigned long long)all[r].slot_bytes, all[me].nslots,
                            (unsigned long long)all[me].slot_bytes);
            return DFCCL_ERR_INVALID_PARAM;
        }
        if (all[r].direct_bytes != all[me].direct_bytes ||
            all[r].direct_chunk_bytes != all[me].direct_chunk_bytes) {
            if (me == 0)
                dfccl_error("comm %#llx: rank %d takes the direct path from %llu bytes in chunks"
                            " of %llu, rank 0 from %llu in chunks of %llu: these settings must"
                            " be equal on all ranks", (unsigned long long)comm->key, r,
                            (unsigned long long)all[r].direct_bytes,
                            (unsigned long long)all[r].direct_chunk_bytes,
                            (unsigned long long)all[me].direct_bytes,
                            (unsigned long long)all[me].direct_chunk_bytes);
            return DFCCL_ERR_INVALID_PARAM;
        }
        if (all[r].ll_bytes != all[me].ll_bytes) {
            if (me == 0)
                dfccl_error("comm %#llx: rank %d takes the LL one-shot up to %llu bytes, rank 0"
                            " up to %llu: this setting must be equal on all ranks",
                            (unsigned long long)comm->key, r, (unsigned long long)all[r].ll_bytes,
                            (unsigned long long)all[me].ll_bytes);
            return DFCCL_ERR_INVALID_PARAM;
        }
    }
    if (gc->failed != DFCCL_OK || g == NULL) return gc->failed;
    /* channels: every rank's kernel has this many blocks, and its region
     * as many FIFOs */
    gc->nchannels = all[0].nchannels;
    for (int r = 1; r < n; r++)
        if (all[r].nchannels < gc->nchannels) gc->nchannels = all[r].nchannels;
    current = gpu_device_enter(g);
    for (int r = 0; r < n && e == cudaSuccess; r++) {
        if (r == me) continue;
        e = cudaIpcOpenMemHandle((void **)&gc->peer_base[r], all[r].handle,
                                 cudaIpcMemLazyEnablePeerAccess);
        if (e != cudaSuccess)
            dfccl_error("comm %#llx: rank %d cannot map the GPU memory of rank %d (device %d):"
                        " %s", (unsigned long long)comm->key, me, r, all[r].device, gpu_err(e));
    }
    if (e == cudaSuccess) {
        memset(&dev, 0, sizeof(dev));
        dev.rank = me;
        dev.size = n;
        dev.nchannels = gc->nchannels;
        dev.key = comm->key;
        dev.one_device = !cfg->gpu_fence_system;
        for (int r = 0; r < n; r++) {
            dev.inbox[r] = r == me ? gc->region : gc->peer_base[r];
            if (!gpu_hello_same_device(&all[r], &all[me])) dev.one_device = 0;
        }
        for (unsigned c = 0; c < gc->nchannels; c++) {
            char *mine = gc->region + inbox + c * fifo;
            char *theirs = (n > 1 ? gc->peer_base[next] : gc->region) + inbox + c * fifo;
            dev.recv_fifo[c].ctrl = (dfccl_fifo_ctrl_t *)mine;
            dev.recv_fifo[c].slots = mine + sizeof(dfccl_fifo_ctrl_t);
            dev.recv_fifo[c].slot_bytes = cfg->gpu_slot_bytes;
            dev.recv_fifo[c].nslots = cfg->gpu_fifo_slots;
            dev.recv_fifo[c].peer = prev;
            dev.send_fifo[c].ctrl = (dfccl_fifo_ctrl_t *)theirs;
            dev.send_fifo[c].slots = theirs + sizeof(dfccl_fifo_ctrl_t);
            dev.send_fifo[c].slot_bytes = cfg->gpu_slot_bytes;
            dev.send_fifo[c].nslots = cfg->gpu_fifo_slots;
            dev.send_fifo[c].peer = next;
        }
        pthread_mutex_lock(&g->lock);
        for (int i = 0; i < DFCCL_GPU_MAX_COMMS; i++) {
            if (!g->comm_used[i]) {
                g->comm_used[i] = 1;
                gc->index = i;
                break;
            }
        }
        pthread_mutex_unlock(&g->lock);
        if (gc->index < 0) {
            dfccl_error("comm %#llx: more than %d GPU communicators in this process",
                        (unsigned long long)comm->key, DFCCL_GPU_MAX_COMMS);
            gpu_device_leave(g, current);
            return DFCCL_ERR_NO_MEMORY;
        }
        e = cudaMemcpyAsync(&g->env.comms[gc->index], &dev, sizeof(dev), cudaMemcpyHostToDevice,
                            g->copy_stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(g->copy_stream);
        pthread_mutex_lock(&g->lock);
        gc->first_launch = g->env.launch_id + 1;   /* see gpu_job_may_enter */
        pthread_mutex_unlock(&g->lock);
    }
    if (e == cudaSuccess) gpu_warn_crowded(g, all, me, n);
    gpu_device_leave(g, current);
    return e == cudaSuccess ? DFCCL_OK : DFCCL_ERR_SYSTEM;
}

dfccl_status_t dfccl_gpu_comm_finish(dfccl_comm_t *comm, dfccl_status_t agreed)
{
    dfccl_gpu_comm_t *gc = comm->gpu;

    if (agreed == DFCCL_OK) {
        gc->ready = 1;
        gc->failed = DFCCL_OK;
        dfccl_stats_add_comm();
        dfccl_debug("comm %#llx: rank %d of %d connected on the GPU", (unsigned long long)comm->key,
                    comm->rank, comm->size);
        return DFCCL_OK;
    }
    gc->failed = agreed;
    if (comm->context->gpu != NULL) {
        gpu_comm_free_resources(comm->context->gpu, gc, comm->size, comm->rank);
    } else if (gc->region != NULL) {
        cudaFree(gc->region);
    }
    memset(gc->peer_base, 0, sizeof(gc->peer_base));
    gc->region = NULL;
    gc->index = -1;
    return agreed;
}

dfccl_status_t dfccl_gpu_comm_create(dfccl_context_t *ctx, const dfccl_comm_params_t *p,
                                     dfccl_comm_t **comm_p)
{
    size_t hb = dfccl_gpu_hello_bytes();
    char *mine, *all;
    dfccl_comm_t *comm = NULL;
    dfccl_status_t status, worst = DFCCL_OK;
    int32_t me, *every;

    if (p == NULL || p->allgather == NULL) return DFCCL_ERR_INVALID_PARAM;
    mine = malloc(hb);
    all = malloc(hb * (size_t)p->size);
    every = malloc(sizeof(int32_t) * (size_t)p->size);
    if (mine == NULL || all == NULL || every == NULL) {
        status = DFCCL_ERR_NO_MEMORY;
        goto out;
    }
    status = dfccl_gpu_comm_begin(ctx, p, &comm, mine);
    if (status != DFCCL_OK) goto out;
    if (p->allgather(mine, all, hb, p->allgather_arg) != 0) {
        status = DFCCL_ERR_BOOTSTRAP;
        goto out;
    }
    me = (int32_t)dfccl_gpu_comm_connect(comm, all);
    if (p->allgather(&me, every, sizeof(me), p->allgather_arg) != 0) {
        status = DFCCL_ERR_BOOTSTRAP;
        goto out;
    }
    for (int r = 0; r < p->size; r++)
        if (every[r] != DFCCL_OK) worst = (dfccl_status_t)every[r];
    status = dfccl_gpu_comm_finish(comm, worst);
out:
    if (status != DFCCL_OK && comm != NULL) {
        if (comm->gpu->ready || comm->gpu->region) dfccl_gpu_comm_finish(comm, status);
        dfccl_comm_destroy(comm);
        comm = NULL;
    }
    *comm_p = comm;
    free(mine);
    free(all);
    free(every);
    return status;
}

void dfccl_gpu_comm_release(dfccl_comm_t *comm)
{
    dfccl_gpu_comm_t *gc = comm->gpu;
    dfccl_gpu_t *g = comm->context->gpu;
    gpu_dead_t *info = (gpu_dead_t *)(gc + 1);

    if (g == NULL || (!gc->ready && gc->region == NULL && gc->index < 0)) {
        free(gc);
        return;
    }
    info->size = comm->size;
    info->rank = comm->rank;
    /* not g->lock: the last reference may go inside a completion, which
     * holds it; the proxy finds the list within its 10 ms idle wait */
    pthread_mutex_lock(&g->dead_lock);
    gc->next_dead = g->dead;
    __atomic_store_n(&g->dead, gc, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g->dead_lock);
}

/* ---- collectives ---------------------------------------------------------------- */

/* Work the application queued on CUDA's legacy default stream is done
 * (cudaMemcpy from pageable memory returns before its data landed; the
 * daemon's stream is not ordered with it). Returns 0 when the wait failed,
 * which it reports for comm's collective. */
static int gpu_legacy_wait(dfccl_gpu_t *g, const dfccl_comm_t *comm)
{
    /* the calling thread may be the progress hook's, its current device another */
    int previous = gpu_device_enter(g);
    cudaError_t e = cudaStreamSynchronize(cudaStreamLegacy);

    gpu_device_leave(g, previous);
    if (e != cudaSuccess)
        dfccl_error("comm %#llx: waiting for the legacy default stream failed: %s",
                    (unsigned long long)comm->key, gpu_err(e));
    return e == cudaSuccess;
}

/* A held collective is in the queue already when its wait fails (an
 * earlier kernel of the application faulted, which leaves the context
 * unusable): the backend breaks. Nothing more enters or is launched; a
 * running kernel is asked to leave, and the proxy, once none runs, drains
 * what it completed and fails the rest, so that no buffer of a failed
 * call is still in use. */
static void gpu_legacy_wait_failed(dfccl_gpu_t *g)
{
    dfccl_error("GPU collectives fail: a held collective's inputs can never be released");
    pthread_mutex_lock(&g->lock);
    __atomic_store_n(&g->broken, 1, __ATOMIC_RELEASE);
    if (g->kernel_running) gpu_kernel_yield(g);
    pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->lock);
}

/* Into the submission queue behind the backlog, which enters as far as it
 * may now. held: only if it enters at once, as an LL collective whose
 * inputs the host releases later (desc.held); then *ticket is its ticket,
 * read under the lock (the job may complete, and be freed, as soon as the
 * lock is released: on a failed communicator). Returns 1 when it entered
 * (always, unless held), 0 when it did not, -1 when the backend broke. */
static int gpu_job_enqueue(dfccl_gpu_t *g, gpu_job_t *job, int held, uint64_t *ticket)
{
    int wake;

    pthread_mutex_lock(&g->lock);
    if (g->broken) {   /* gpu_fail_all may have run already: it would not be failed */
        pthread_mutex_unlock(&g->lock);
        return -1;
    }
    if (held && (g->backlog != NULL || g->slot_job[g->next_ticket % DFCCL_GPU_SQ_DEPTH] != NULL ||
                 !gpu_job_may_enter(g, job))) {
        pthread_mutex_unlock(&g->lock);
        return 0;
    }
    /* the proxy sleeps while nothing is in flight: wake it for the first */
    wake = g->in_flight++ == 0;
    job->next = NULL;
    job->desc.held = (uint32_t)held;
    if (g->backlog_tail) g->backlog_tail->next = job;
    else g->backlog = job;
    g->backlog_tail = job;
    gpu_backlog_flush(g);
    if (held) *ticket = job->ticket;   /* it entered: published */
    if (wake || !g->kernel_running) pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->lock);
    return 1;
}

dfccl_status_t dfccl_gpu_submit(dfccl_coll_t *coll, const dfccl_coll_args_t *args)
{
    dfccl_comm_t *comm = coll->comm;
    dfccl_gpu_comm_t *gc = comm->gpu;
    dfccl_gpu_t *g = comm->context->gpu;
    const dfccl_config_t *cfg = &comm->context->config;
    size_t esize = dfccl_dtype_size(args->dtype), slot_bytes = 0, total_bytes;
    gpu_job_t *job;
    dfccl_gpu_desc_t *d;
    unsigned parts;
    uint64_t posted_ns, ticket = 0;

    if (!gc->ready || g == NULL) return gc->failed != DFCCL_OK ? gc->failed : DFCCL_ERR_UNSUPPORTED;
    if (__atomic_load_n(&g->broken, __ATOMIC_ACQUIRE)) return DFCCL_ERR_SYSTEM;
    posted_ns = g->env.trace ? dfccl_now_ns() : 0;
    job = calloc(1, sizeof(*job));
    if (job == NULL) return DFCCL_ERR_NO_MEMORY;
    job->coll = coll;
    job->posted_ns = posted_ns;
    d = &job->desc;
    d->comm_index = (uint32_t)gc->index;
    d->type = (uint8_t)args->type;
    d->dtype = (uint8_t)args->dtype;
    d->op = (uint8_t)(args->op == DFCCL_OP_NONE ? 0 : args->op);
    d->priority = coll->priority;
    d->nsteps = coll->exec.nsteps;
    d->comm_key = comm->key;
    d->seq = coll->seq;
    d->count = args->count;
    d->esize = esize;
    d->sendbuf = args->sendbuf == DFCCL_IN_PLACE ? NULL : (char *)args->sendbuf;
    d->recvbuf = args->recvbuf;
    d->slice_elems = cfg->gpu_slot_bytes / esize;
    d->chunk_elems = dfccl_plan_chunk_elems(cfg->gpu_slot_bytes, cfg->gpu_fifo_slots, esize);
    memcpy(d->steps, coll->steps, coll->exec.nsteps * sizeof(dfccl_step_t));
    /* The algorithm and the channels follow from what every rank knows
     * alike (type, counts, element size): all ranks choose the same. */
    switch (args->type) {
    case DFCCL_COLL_ALLREDUCE:
        slot_bytes = args->count * esize;
        total_bytes = slot_bytes;
        break;
    case DFCCL_COLL_ALLGATHER:
        slot_bytes = args->count * esize;
        total_bytes = slot_bytes * (size_t)comm->size;
        break;
    default:
        total_bytes = 0;
        for (int r = 0; r < comm->size; r++) {
            d->rs_counts[r] = args->counts[r];
            if (args->counts[r] * esize > slot_bytes) slot_bytes = args->counts[r] * esize;
            total_bytes += args->counts[r] * esize;
        }
        break;
    }
    job->in = args->sendbuf != DFCCL_IN_PLACE ? (char *)args->sendbuf
            : args->type == DFCCL_COLL_ALLGATHER ? (char *)args->recvbuf + (size_t)comm->rank * slot_bytes
            : (char *)args->recvbuf;
    if (cfg->gpu_ll_bytes != 0 && slot_bytes <= cfg->gpu_ll_bytes) {
        d->algo = DFCCL_GPU_ALGO_LL;
        d->nparts = 1;
        d->nsteps = 0;   /* no plan: the kernel copies less of the entry over the bus */
    } else if (slot_bytes <= DFCCL_GPU_SMALL_BYTES) {
        d->algo = DFCCL_GPU_ALGO_ONESHOT;
        d->nparts = 1;
        d->nsteps = 0;
    } else {
        int parts_allowed = dfccl_plan_parts_allowed(args->type, args->sendbuf == DFCCL_IN_PLACE,
                                                     args->counts, comm->size);
        d->algo = DFCCL_GPU_ALGO_RING;
        parts = (unsigned)(total_bytes / GPU_BYTES_PER_CHANNEL);
        d->nparts = parts < 1 ? 1 : parts > gc->nchannels ? gc->nchannels : parts;
        if (!parts_allowed) {
            d->nparts = 1;
        } else if (gpu_direct_wanted(cfg->gpu_direct_bytes, total_bytes, comm->size)) {
            /* chosen alike on every rank; whether the buffers can be
             * mapped is agreed in the kernel (the ring otherwise) */
            dfccl_gpu_export_t *x = &d->exported;
            int previous;
            d->algo = DFCCL_GPU_ALGO_DIRECT;
            /* the driver calls need the engine's device current on this thread */
            previous = gpu_device_enter(g);
            x->ok = gpu_direct_export(g, job->in, &x->in_handle, &x->in_offset, &x->in_alloc) &&
                    gpu_direct_export(g, d->recvbuf, &x->out_handle, &x->out_offset, &x->out_alloc);
            gpu_device_leave(g, previous);
        }
    }
    /* An LL collective that the early send can take is published first,
     * held, and released once the wait returned: the kernel's look at the
     * queue, over the bus, overlaps the wait, and its early send polls for
     * the release (gpu_ll_early.cuh). The others wait first: held, one that
     * the early send does not take lost 2 us at 4 ranks and 3.7 at 8
     * (reduce-scatter before the early send took it, run 77): admission
     * does not start a held task at once (gpu_express), and the scheduler's
     * attempt reads the release in a trip of its own
     * (contrib/results/2026-12-01-gpu-legacy-stream.md). */
    int hold = cfg->gpu_sync_legacy_stream && cfg->gpu_ll_early_send &&
               gpu_ll_early_takes(d, comm->size);
    int entered = hold ? gpu_job_enqueue(g, job, 1, &ticket) : 0;
    if (entered > 0) {
        int slot = (int)(ticket % DFCCL_GPU_SQ_DEPTH);

        if (!gpu_legacy_wait(g, comm)) {
            gpu_legacy_wait_failed(g);   /* fails it too */
            return DFCCL_OK;
        }
        pthread_mutex_lock(&g->lock);
        /* still ours (else a failure completed it meanwhile): the job is
         * read only once the slot shows it is alive */
        if (g->slot_job[slot] == job && job->ticket == ticket) {
            gpu_ll_head_release(g, job, ticket, slot);
            /* a kernel that left while it was held (stuck for
             * gpu_stuck_quit_ns), seen to have left or not yet, comes
             * back without the backoff (the proxy takes the flag only
             * when none runs) */
            __atomic_store_n(&g->relaunch_now, 1, __ATOMIC_RELEASE);
            if (!g->kernel_running) pthread_cond_signal(&g->wake);
        }
        pthread_mutex_unlock(&g->lock);
        return DFCCL_OK;
    }
    if (entered == 0 && cfg->gpu_sync_legacy_stream && !gpu_legacy_wait(g, comm)) {
        gpu_job_free(job);
        return DFCCL_ERR_SYSTEM;
    }
    if (entered < 0 || gpu_job_enqueue(g, job, 0, NULL) < 0) {
        gpu_job_free(job);
        return DFCCL_ERR_SYSTEM;   /* the backend broke meanwhile (its error was logged) */
    }
    return DFCCL_OK;
}
