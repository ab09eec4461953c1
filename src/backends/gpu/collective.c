/*
 * collective.c - a GPU collective into a job (dfccl_gpu_submit): its
 * submission entry, the algorithm and channels every rank chooses alike,
 * the direct path's exported buffers, and the wait for CUDA's legacy
 * default stream, which an LL collective the early send takes overlaps by
 * entering the queue held. A prepared collective (persistent) has its
 * entry described once; each start copies it.
 */
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "util/clock.h"
#include "backends/gpu/direct.h"
#include "backends/gpu/jobs.h"
#include "backends/gpu/ll_head.h"
#include "util/log.h"
#include "backends/gpu/state.h"

/* Bytes of a collective per channel below which fewer channels are used:
 * each channel has a fixed cost per slice. */
#define GPU_BYTES_PER_CHANNEL (256u * 1024u)

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
    pthread_mutex_lock(&g->sq.lock);
    __atomic_store_n(&g->sq.broken, 1, __ATOMIC_RELEASE);
    if (g->sq.kernel_running) gpu_kernel_yield(g);
    pthread_cond_signal(&g->sq.wake);
    pthread_mutex_unlock(&g->sq.lock);
}

/* The plan of a collective that runs through the FIFOs: for allreduce the
 * hierarchical algorithm or the latency algorithm across nodes where the
 * communicator has their connections (conn_plan.h, as the engine's
 * algorithm knob asks), under auto the hierarchical one from
 * gpu_hier_min_bytes and the latency one up to rd_max_bytes; else the ring
 * node by node. Alike on every rank: it follows from the call and the
 * ranks' nodes alone. */
static dfccl_algo_t gpu_algo_across(const dfccl_comm_t *comm, dfccl_coll_type_t type,
                                    uint64_t bytes)
{
    const gpu_conn_plan_t *conn = &gpu_comm_of(comm)->conn;
    const dfccl_config_t *cfg = &comm->context->config;

    if (type != DFCCL_COLL_ALLREDUCE) return DFCCL_ALGO_RING;
    if (conn->hier && (cfg->algorithm == DFCCL_ALGO_HIER || bytes >= cfg->gpu_hier_min_bytes))
        return DFCCL_ALGO_HIER;
    if (conn->rd && (cfg->algorithm == DFCCL_ALGO_RD || bytes <= cfg->rd_max_bytes))
        return DFCCL_ALGO_RD;
    return DFCCL_ALGO_RING;
}

/* The first plan file of the communicator that serves the call, as this
 * rank's program in the job (plan_files.h): chosen alike on every rank,
 * which all run the same plans and see the same call. It runs on channel 0
 * alone, whose connections the plans' peers have. DFCCL_ERR_UNSUPPORTED
 * when none serves it (the built-in algorithms do). */
static dfccl_status_t gpu_job_plan_file(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                        uint64_t total_bytes, gpu_job_t *job)
{
    dfccl_gpu_comm_t *gc = gpu_comm_of(comm);
    dfccl_gpu_desc_t *d = &job->desc;
    dfccl_plan_call_t call = { args->type, args->sendbuf == DFCCL_IN_PLACE, args->count,
                               args->type == DFCCL_COLL_REDUCE_SCATTER ? args->counts : NULL };

    for (int i = 0; i < gc->nplans; i++) {
        gpu_plan_image_t img;
        dfccl_status_t status;
        if (dfccl_plan_file_type(gc->plans[i]) != args->type ||
            !dfccl_plan_file_serves_bytes(gc->plans[i], total_bytes))
            continue;
        status = gpu_plan_image_make(gc->plans[i], &gc->conn, &call, comm->rank, d->esize,
                                     d->chunk_elems, &img);
        if (status == DFCCL_ERR_UNSUPPORTED) continue;   /* e.g. in place, unequal counts */
        if (status != DFCCL_OK) return status;
        job->plan_steps = img.mem;
        job->plan_nsteps = (uint32_t)(img.bytes / sizeof(dfccl_step_t));
        job->plan_owned = 1;
        d->plan_file = 1;
        d->plan_nsteps = img.nsteps;
        d->plan_more_at = img.more_at;
        d->plan_deps_at = img.deps_at;
        d->plan_graph_at = img.graph_at;
        d->algo = DFCCL_GPU_ALGO_RING;
        d->nparts = 1;
        return DFCCL_OK;
    }
    return DFCCL_ERR_UNSUPPORTED;
}

/* What a call's submission entry holds that follows from its arguments
 * alone: the algorithm, channels and ring plan every rank chooses alike.
 * Not the run's sequence number, priority or (direct) exported buffers. */
static dfccl_status_t gpu_job_describe(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                       gpu_job_t *job)
{
    dfccl_gpu_comm_t *gc = gpu_comm_of(comm);
    const dfccl_config_t *cfg = &comm->context->config;
    size_t esize = dfccl_dtype_size(args->dtype), slot_bytes = 0, total_bytes;
    dfccl_gpu_desc_t *d = &job->desc;
    unsigned parts;

    d->comm_index = (uint32_t)gc->index;
    d->type = (uint8_t)args->type;
    d->dtype = (uint8_t)args->dtype;
    d->op = (uint8_t)(args->op == DFCCL_OP_NONE ? 0 : args->op);
    d->comm_key = comm->key;
    d->count = args->count;
    d->esize = esize;
    d->sendbuf = args->sendbuf == DFCCL_IN_PLACE ? NULL : (char *)args->sendbuf;
    d->recvbuf = args->recvbuf;
    d->slice_elems = cfg->gpu_slot_bytes / esize;
    d->chunk_elems = dfccl_plan_chunk_elems(cfg->gpu_slot_bytes, cfg->gpu_fifo_slots, esize);
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
            /* the all-peer paths read them from the entry (the ring's
             * steps carry their own counts) */
            if (gc->conn.all_peers) d->rs_counts[r] = args->counts[r];
            if (args->counts[r] * esize > slot_bytes) slot_bytes = args->counts[r] * esize;
            total_bytes += args->counts[r] * esize;
        }
        break;
    }
    job->in = args->sendbuf != DFCCL_IN_PLACE ? (char *)args->sendbuf
            : args->type == DFCCL_COLL_ALLGATHER ? (char *)args->recvbuf + (size_t)comm->rank * slot_bytes
            : (char *)args->recvbuf;
    if (gc->nplans > 0) {
        dfccl_status_t filed = gpu_job_plan_file(comm, args, total_bytes, job);
        if (filed != DFCCL_ERR_UNSUPPORTED) return filed;
    }
    /* LL, the one-shot and the direct path reach every peer's memory
     * through CUDA IPC: on a communicator that spans nodes, or has more
     * ranks than they serve, only the ring runs, its FIFOs to other nodes
     * moved by the proxy (net_side.h) */
    if (gc->conn.all_peers && cfg->gpu_ll_bytes != 0 && slot_bytes <= cfg->gpu_ll_bytes) {
        d->algo = DFCCL_GPU_ALGO_LL;
        d->nparts = 1;   /* no plan: the kernel copies less of the entry over the bus */
    } else if (gc->conn.all_peers && slot_bytes <= DFCCL_GPU_SMALL_BYTES) {
        d->algo = DFCCL_GPU_ALGO_ONESHOT;
        d->nparts = 1;
    } else {
        int parts_allowed = dfccl_plan_parts_allowed(args->type, args->sendbuf == DFCCL_IN_PLACE,
                                                     args->counts, comm->size);
        uint64_t max_block;
        dfccl_step_t *steps = d->steps;
        uint32_t nsteps = 0;
        dfccl_plan_call_t call = { args->type, args->sendbuf == DFCCL_IN_PLACE, args->count,
                                   args->type == DFCCL_COLL_REDUCE_SCATTER ? args->counts : NULL };
        dfccl_algo_t algo = gpu_algo_across(comm, args->type, total_bytes);
        dfccl_status_t planned;
        /* the ring's plan (the direct path falls back to it): in the entry,
         * or for more ranks than it holds, beside it (plan_pool.h) */
        if (dfccl_plan_max_steps(comm->size) > DFCCL_GPU_INLINE_STEPS) {
            steps = malloc(sizeof(*steps) * dfccl_plan_max_steps(comm->size));
            if (steps == NULL) return DFCCL_ERR_NO_MEMORY;
        }
        planned = gpu_conn_plan_program(&gc->conn, &gc->topo, comm->rank, algo, &call, steps,
                                        &nsteps, &max_block);
        /* its steps read what others wrote in blocks cut otherwise */
        d->vector_parts = algo == DFCCL_ALGO_HIER;
        if (planned != DFCCL_OK) {
            if (steps != d->steps) free(steps);
            return planned;
        }
        if (steps == d->steps) {
            d->nsteps = nsteps;
        } else {
            job->plan_steps = steps;
            job->plan_nsteps = nsteps;
            job->plan_owned = 1;
        }
        d->algo = DFCCL_GPU_ALGO_RING;
        parts = (unsigned)(total_bytes / GPU_BYTES_PER_CHANNEL);
        d->nparts = parts < 1 ? 1 : parts > gc->nchannels ? gc->nchannels : parts;
        if (!parts_allowed || algo == DFCCL_ALGO_RD) {
            /* RD's partners are connections of channel 0 alone */
            d->nparts = 1;
        } else if (gc->conn.all_peers &&
                   gpu_direct_wanted(cfg->gpu_direct_bytes, total_bytes, comm->size)) {
            /* chosen alike on every rank; whether the buffers can be
             * mapped is agreed in the kernel (the ring otherwise) */
            d->algo = DFCCL_GPU_ALGO_DIRECT;
        }
    }
    return DFCCL_OK;
}

/* A described job of coll into the submission queue: the run's own
 * fields, the direct path's exported buffers (looked up at every run: an
 * allocation may have been freed and made anew at the same address), and
 * the wait for the legacy default stream. The job is the queue's (or
 * freed) whatever the outcome. */
static dfccl_status_t gpu_job_submit(dfccl_gpu_t *g, dfccl_call_t *coll, gpu_job_t *job,
                                     int sync_legacy, uint64_t posted_ns)
{
    dfccl_comm_t *comm = coll->comm;
    dfccl_gpu_desc_t *d = &job->desc;
    uint64_t ticket = 0;

    job->coll = coll;
    job->posted_ns = posted_ns;
    d->priority = coll->priority;
    d->seq = coll->seq;
    if (d->algo == DFCCL_GPU_ALGO_DIRECT) {
        dfccl_gpu_export_t *x = &d->exported;
        /* the driver calls need the engine's device current on this thread */
        int previous = gpu_device_enter(g);
        x->ok = gpu_direct_export(g, job->in, &x->in_handle, &x->in_offset, &x->in_alloc) &&
                gpu_direct_export(g, d->recvbuf, &x->out_handle, &x->out_offset, &x->out_alloc);
        gpu_device_leave(g, previous);
    }
    /* An LL collective that the early send can take is published first,
     * held, and released once the wait returned: the kernel's look at the
     * queue, over the bus, overlaps the wait, and its early send polls for
     * the release (gpu_ll_early.cuh). The others wait first: held, one that
     * the early send does not take was measured slower, because admission
     * does not start a held task at once (gpu_express) and the scheduler's
     * attempt reads the release in a trip of its own. */
    int hold = sync_legacy && gpu_ll_early_takes(d, comm->size);
    int entered = hold ? gpu_job_enqueue(g, job, 1, &ticket) : 0;
    if (entered > 0) {
        int slot = (int)(ticket % DFCCL_GPU_SQ_DEPTH);

        if (!gpu_legacy_wait(g, comm)) {
            gpu_legacy_wait_failed(g);   /* fails it too */
            return DFCCL_OK;
        }
        pthread_mutex_lock(&g->sq.lock);
        /* still ours (else a failure completed it meanwhile): the job is
         * read only once the slot shows it is alive */
        if (g->sq.slot_job[slot] == job && job->ticket == ticket) {
            gpu_ll_head_release(g, job, ticket, slot);
            /* a kernel that left while it was held (stuck for
             * gpu_stuck_quit_ns), seen to have left or not yet, comes
             * back without the backoff (the proxy takes the flag only
             * when none runs) */
            __atomic_store_n(&g->proxy.relaunch_now, 1, __ATOMIC_RELEASE);
            if (!g->sq.kernel_running) pthread_cond_signal(&g->sq.wake);
        }
        pthread_mutex_unlock(&g->sq.lock);
        return DFCCL_OK;
    }
    if (entered == 0 && sync_legacy && !gpu_legacy_wait(g, comm)) {
        gpu_job_free(job);
        return DFCCL_ERR_SYSTEM;
    }
    if (entered < 0 || gpu_job_enqueue(g, job, 0, NULL) < 0) {
        gpu_job_free(job);
        return DFCCL_ERR_SYSTEM;   /* the backend broke meanwhile (its error was logged) */
    }
    return DFCCL_OK;
}

/* The backend and the communicator can take a collective now. */
static dfccl_status_t gpu_usable(const dfccl_gpu_comm_t *gc, dfccl_gpu_t *g)
{
    if (!gc->ready || g == NULL) return gc->failed != DFCCL_OK ? gc->failed : DFCCL_ERR_UNSUPPORTED;
    if (__atomic_load_n(&g->sq.broken, __ATOMIC_ACQUIRE)) return DFCCL_ERR_SYSTEM;
    return DFCCL_OK;
}

/* A prepared collective (backend_ops.h): the described job, which every
 * start copies, the call's size, and a plan too long for the entry (each
 * start uploads it: plan_pool.h), job.plan_nsteps steps. */
typedef struct gpu_prepared {
    size_t       total;
    gpu_job_t    job;
    dfccl_step_t plan[];
} gpu_prepared_t;

static size_t gpu_prepared_bytes(uint32_t plan_nsteps)
{
    return sizeof(gpu_prepared_t) + (size_t)plan_nsteps * sizeof(dfccl_step_t);
}

/* coll's job into the queue: a copy of the prepared job p's, or (p NULL)
 * one described from args. */
static dfccl_status_t gpu_submit(dfccl_call_t *coll, const dfccl_coll_args_t *args,
                                 const gpu_prepared_t *p, int sync_legacy)
{
    dfccl_comm_t *comm = coll->comm;
    dfccl_gpu_t *g = gpu_ctx_of(comm->context)->gpu;
    dfccl_status_t status = gpu_usable(gpu_comm_of(comm), g);
    uint64_t posted_ns;
    gpu_job_t *job;

    if (status != DFCCL_OK) return status;
    posted_ns = g->env.trace ? dfccl_now_ns() : 0;
    if ((job = calloc(1, sizeof(*job))) == NULL) return DFCCL_ERR_NO_MEMORY;
    if (p != NULL) {
        memcpy(job, &p->job, sizeof(*job));
        if (job->plan_nsteps > 0) job->plan_steps = (dfccl_step_t *)p->plan;   /* not owned */
    } else if ((status = gpu_job_describe(comm, args, job)) != DFCCL_OK) {
        free(job);
        return status;
    }
    if ((status = gpu_plan_upload(g, job)) != DFCCL_OK) {
        gpu_job_free(job);
        return status;
    }
    if (job->desc.plan_file) dfccl_stats_add_algorithm(DFCCL_STATS_PLAN_FILE);
    return gpu_job_submit(g, coll, job, sync_legacy, posted_ns);
}

dfccl_status_t dfccl_gpu_submit(dfccl_call_t *coll, const dfccl_coll_args_t *args,
                                int sync_legacy)
{
    return gpu_submit(coll, args, NULL, sync_legacy);
}

/* The collective's record, its place in the communicator's order, and its
 * submission: the prepared job p's copy, or (p NULL) one described from
 * args. */
static dfccl_status_t gpu_enter(dfccl_comm_t *comm, const dfccl_coll_args_t *args, size_t total,
                                const gpu_prepared_t *p, int sync_legacy)
{
    dfccl_call_t *coll = calloc(1, sizeof(*coll));
    dfccl_gpu_comm_t *gc = gpu_comm_of(comm);
    dfccl_status_t status;

    if (coll == NULL) return DFCCL_ERR_NO_MEMORY;
    dfccl_call_init(coll, args, total);
    dfccl_coll_enter(comm, coll, args);
    if (gc->board != NULL) {   /* what it is, for the node's peers (ident_check.h) */
        dfccl_ident_make(&coll->ident, args, comm->size, DFCCL_OK);
        dfccl_board_post(gc->board, coll->seq, &coll->ident);
    }
    if (comm->broken) {   /* see the earlier failure's diagnosis */
        int why = __atomic_load_n(&gc->watch_status, __ATOMIC_ACQUIRE);
        status = why != 0 ? (dfccl_status_t)why : DFCCL_ERR_TIMEOUT;
    } else {
        __atomic_add_fetch(&gc->in_flight, 1, __ATOMIC_RELAXED);   /* the watch looks */
        status = gpu_submit(coll, args, p, sync_legacy);
        if (status != DFCCL_OK) __atomic_sub_fetch(&gc->in_flight, 1, __ATOMIC_RELAXED);
    }
    if (status != DFCCL_OK) {
        dfccl_comm_release(comm);
        free(coll);
        return status;
    }
    dfccl_stats_add_posted(args->type);
    return DFCCL_OK;
}

dfccl_status_t dfccl_gpu_prepare(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                 struct dfccl_coll **tmpl_p, size_t *bytes_p)
{
    dfccl_status_t status;
    gpu_prepared_t *p;
    size_t total;

    if ((status = dfccl_coll_check_args(comm, args, &total)) != DFCCL_OK) return status;
    if ((status = gpu_usable(gpu_comm_of(comm), gpu_ctx_of(comm->context)->gpu)) != DFCCL_OK)
        return status;
    if ((p = calloc(1, sizeof(*p))) == NULL) return DFCCL_ERR_NO_MEMORY;
    p->total = total;
    if ((status = gpu_job_describe(comm, args, &p->job)) != DFCCL_OK) {
        free(p);
        return status;
    }
    if (p->job.plan_steps != NULL) {
        /* the long plan into the record, which the engine frees whole */
        gpu_prepared_t *q = realloc(p, gpu_prepared_bytes(p->job.plan_nsteps));
        if (q == NULL) {
            gpu_plan_release(&p->job);
            free(p);
            return DFCCL_ERR_NO_MEMORY;
        }
        p = q;
        memcpy(p->plan, p->job.plan_steps, p->job.plan_nsteps * sizeof(dfccl_step_t));
        gpu_plan_release(&p->job);   /* the described copy: the job owned it */
    }
    /* the engine keeps the record as bytes and hands it back to start */
    *tmpl_p = (struct dfccl_coll *)(void *)p;
    *bytes_p = gpu_prepared_bytes(p->job.plan_nsteps);
    return DFCCL_OK;
}

dfccl_status_t dfccl_gpu_start(dfccl_comm_t *comm, const struct dfccl_coll *tmpl, size_t bytes,
                               const dfccl_coll_args_t *args)
{
    const gpu_prepared_t *p = (const gpu_prepared_t *)(const void *)tmpl;

    if (p == NULL || bytes < sizeof(*p) || bytes != gpu_prepared_bytes(p->job.plan_nsteps))
        return DFCCL_ERR_INVALID_PARAM;
    return gpu_enter(comm, args, p->total, p, comm->context->config.gpu_sync_legacy_stream);
}

/* The GPU backend's post (backend_ops.h): the collective's record, its place
 * in the communicator's order, and its submission; a stream-ordered one
 * (stream.c) skips the wait for the legacy default stream, since its stream
 * already ordered it (and that stream may be the one waiting for it). */
static dfccl_status_t gpu_post(dfccl_comm_t *comm, const dfccl_coll_args_t *args, int ordered)
{
    size_t total;
    dfccl_status_t status = dfccl_coll_check_args(comm, args, &total);

    if (status != DFCCL_OK) return status;
    return gpu_enter(comm, args, total, NULL,
                     !ordered && comm->context->config.gpu_sync_legacy_stream);
}

dfccl_status_t dfccl_gpu_post(dfccl_comm_t *comm, const dfccl_coll_args_t *args)
{
    return gpu_post(comm, args, 0);
}

dfccl_status_t dfccl_gpu_post_ordered(dfccl_comm_t *comm, const dfccl_coll_args_t *args)
{
    return gpu_post(comm, args, 1);
}
