/*
 * direct.c - the host side of the GPU backend's direct path: our
 * buffers exported for the peers (IPC handles in the descriptor), the
 * peers' buffers mapped when the kernel asks (cached per peer), and the
 * answers handed to the kernel, between launches when something new was
 * mapped.
 */
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "backends/gpu/direct.h"
#include "util/log.h"

_Static_assert(sizeof(dfccl_gpu_ipc_handle_t) == sizeof(cudaIpcMemHandle_t), "IPC handle size");

/* Our buffer as the peers map it: the handle of its allocation and where
 * in it the buffer starts. 0 when CUDA cannot export it (memory from a
 * pool or from the virtual memory API, for instance): then every rank
 * runs the ring. */
int gpu_direct_export(dfccl_gpu_t *g, const char *ptr, dfccl_gpu_ipc_handle_t *h, uint64_t *offset,
                      uint64_t *alloc)
{
    unsigned long long base = 0;
    size_t size = 0;
    int rc;

    if (g->fixed.get_range == NULL ||
        g->fixed.get_range(&base, &size, (unsigned long long)(uintptr_t)ptr) != 0)
        return 0;
    rc = g->fixed.get_handle(h, base);
    if (rc != 0) {
        dfccl_debug("buffer %p cannot be exported (CUDA driver error %d): direct collectives on"
                    " it use the ring", (const void *)ptr, rc);
        return 0;
    }
    *offset = (uint64_t)((uintptr_t)ptr - base);
    *alloc = base;
    return 1;
}

/* Unmapping may wait for the device: it happens while the kernel is out. */
static void gpu_close_later(dfccl_gpu_t *g, char *base)
{
    if (g->direct.nclose == g->direct.close_cap) {
        size_t cap = g->direct.close_cap ? 2 * g->direct.close_cap : 64;
        char **more = realloc(g->direct.to_close, cap * sizeof(*more));
        if (more == NULL) {
            cudaIpcCloseMemHandle(base);
            return;
        }
        g->direct.to_close = more;
        g->direct.close_cap = cap;
    }
    g->direct.to_close[g->direct.nclose++] = base;
}

void gpu_direct_close_pending(dfccl_gpu_t *g)
{
    for (size_t i = 0; i < g->direct.nclose; i++) cudaIpcCloseMemHandle(g->direct.to_close[i]);
    g->direct.nclose = 0;
}

/* Peer p's allocation (handle h, at address alloc in p's process), mapped
 * here; proxy thread. The job holds a reference until it completes.
 * NULL when it cannot be mapped or every entry is in use. */
static char *gpu_ipc_map(dfccl_gpu_t *g, dfccl_gpu_comm_t *gc, int p, const dfccl_gpu_ipc_handle_t *h,
                         uint64_t alloc, gpu_job_t *job, int *opened)
{
    gpu_ipc_map_t *row = gc->maps + (size_t)p * GPU_IPC_MAPS_PER_PEER, *e = NULL, *victim = NULL;
    cudaIpcMemHandle_t mh;
    cudaError_t err;
    void *base;

    for (int i = 0; i < GPU_IPC_MAPS_PER_PEER && e == NULL; i++) {
        gpu_ipc_map_t *m = &row[i];
        int busy = __atomic_load_n(&m->refs, __ATOMIC_ACQUIRE) > 0;
        if (m->base != NULL && memcmp(&m->handle, h, sizeof(*h)) == 0) {
            e = m;
        } else if (m->base != NULL && m->alloc == alloc && !busy) {
            /* the peer freed that allocation and made a new one there */
            gpu_close_later(g, m->base);
            m->base = NULL;
        }
        if (e == NULL && !busy && (victim == NULL || (victim->base != NULL &&
                                   (m->base == NULL || m->last_use < victim->last_use))))
            victim = m;
    }
    if (e == NULL) {
        if (victim == NULL) return NULL;
        /* a new mapping is used from the next launch on, but the running
         * kernel stays while an application stream waits for a
         * stream-ordered collective (stream.c): the ring takes this one */
        if (g->proxy.launched && gpu_kernel_held(g)) {
            dfccl_debug("a buffer of rank %d is not mapped while stream-ordered collectives"
                        " hold the kernel: the direct collective uses the ring", p);
            return NULL;
        }
        memcpy(&mh, h, sizeof(mh));
        err = cudaIpcOpenMemHandle(&base, mh, cudaIpcMemLazyEnablePeerAccess);
        if (err != cudaSuccess) {
            cudaGetLastError();
            dfccl_debug("cannot map a buffer of rank %d: %s: the direct collective uses the ring", p,
                        gpu_err(err));
            return NULL;
        }
        if (victim->base != NULL) gpu_close_later(g, victim->base);
        *opened = 1;
        e = victim;
        e->handle = *h;
        e->alloc = alloc;
        e->base = base;
    }
    e->last_use = ++g->direct.map_clock;
    __atomic_fetch_add(&e->refs, 1, __ATOMIC_ACQ_REL);
    job->maps[job->nmaps++] = e;
    return e->base;
}

/* Fills the answer to channel 0's request for one direct collective:
 * every peer's buffers the collective touches (allgather: their outputs;
 * reduce-scatter: their inputs; allreduce: both) mapped here, or ok = 0
 * (the ranks agree on the ring then). The job is pinned: it stays, even if
 * it completes meanwhile. Returns 1 when it mapped something new. */
static int gpu_direct_answer(dfccl_gpu_t *g, gpu_job_t *job, dfccl_gpu_comm_t *gc, int me, int n,
                             const dfccl_gpu_direct_req_t *req, dfccl_gpu_direct_reply_t *rep)
{
    int ok = job->desc.exported.ok != 0, opened = 0;
    int need_in = job->desc.type != DFCCL_COLL_ALLGATHER;
    int need_out = job->desc.type != DFCCL_COLL_REDUCE_SCATTER;

    if (ok && gc->maps == NULL) {
        gc->maps = calloc((size_t)n * GPU_IPC_MAPS_PER_PEER, sizeof(*gc->maps));
        ok = gc->maps != NULL;
    }
    for (int p = 0; p < n && ok; p++) {
        const dfccl_gpu_export_t *x = &req->peer[p];
        char *in = NULL, *out = NULL;
        if (p == me) {
            rep->in[p] = job->in;
            rep->out[p] = job->desc.recvbuf;
            continue;
        }
        ok = x->ok != 0;
        if (ok && need_in) {
            in = gpu_ipc_map(g, gc, p, &x->in_handle, x->in_alloc, job, &opened);
            ok = in != NULL;
        }
        if (ok && need_out) {
            out = gpu_ipc_map(g, gc, p, &x->out_handle, x->out_alloc, job, &opened);
            ok = out != NULL;
        }
        rep->in[p] = in ? in + x->in_offset : NULL;
        rep->out[p] = out ? out + x->out_offset : NULL;
    }
    rep->ok = (uint32_t)ok;
    return opened;
}

static void gpu_direct_publish(dfccl_gpu_t *g, int slot, uint64_t tag)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&g->fixed.direct_reply[slot].tag, tag, __ATOMIC_RELEASE);
    /* should the kernel have left meanwhile: no backoff */
    __atomic_store_n(&g->proxy.relaunch_now, 1, __ATOMIC_RELEASE);
}

/* Is slot s still held by the collective whose request carried tag? */
static int gpu_direct_current(dfccl_gpu_t *g, int s, uint64_t tag)
{
    int current;

    pthread_mutex_lock(&g->sq.lock);
    current = g->sq.slot_job[s] != NULL && g->sq.slot_job[s]->ticket + 1 == tag;
    pthread_mutex_unlock(&g->sq.lock);
    return current;
}

/* Proxy thread: requests from the kernel's channel 0. An answer that needed
 * new mappings is published only once the running kernel has left: a
 * launch then uses only memory mapped before it began (what the CUDA tools
 * check against, and the conservative reading of the programming model);
 * the kernel's state waits in device memory meanwhile. A collective that
 * fails while we answer (its communicator broke) is not answered. */
void gpu_direct_service(dfccl_gpu_t *g)
{
    for (int s = 0; s < DFCCL_GPU_SQ_DEPTH; s++) {
        uint64_t tag = __atomic_load_n(&g->fixed.direct_req[s].tag, __ATOMIC_ACQUIRE);
        gpu_job_t *job;
        dfccl_gpu_comm_t *gc = NULL;
        int me = 0, n = 0, opened, gone, yielded;
        if (tag == 0 || tag == g->direct.served[s]) continue;
        pthread_mutex_lock(&g->sq.lock);
        job = g->sq.slot_job[s];
        if (job != NULL && job->ticket + 1 == tag) {
            job->pinned = 1;
            gc = gpu_comm_of(job->coll->comm);   /* freed by this thread only, later */
            me = job->coll->comm->rank;
            n = job->coll->comm->size;
        } else {
            job = NULL;
        }
        pthread_mutex_unlock(&g->sq.lock);
        if (job == NULL) continue;
        g->direct.served[s] = tag;
        opened = gpu_direct_answer(g, job, gc, me, n, &g->fixed.direct_req[s],
                                   &g->fixed.direct_reply[s]);
        yielded = 0;
        pthread_mutex_lock(&g->sq.lock);
        job->pinned = 0;
        gone = job->finished;
        /* not while stream-ordered collectives hold the kernel (stream.c
         * takes its hold under this lock): a hold that began after the
         * mapping was opened keeps the kernel running, and the answer goes
         * out at once */
        if (!gone && opened && g->fixed.direct_reply[s].ok && g->proxy.launched &&
            !gpu_kernel_held(g)) {
            if (g->direct.held[s] == 0) g->direct.nheld++;
            g->direct.held[s] = tag;   /* replaces a stale one of a failed collective */
            gpu_kernel_yield(g);
            yielded = 1;
        }
        pthread_mutex_unlock(&g->sq.lock);
        if (gone) {
            gpu_job_free(job);
            continue;
        }
        if (!yielded) gpu_direct_publish(g, s, tag);
    }
}

/* The kernel has left: the held answers go out (to collectives that are
 * still there). */
void gpu_direct_release_held(dfccl_gpu_t *g)
{
    for (int s = 0; s < DFCCL_GPU_SQ_DEPTH && g->direct.nheld > 0; s++) {
        if (g->direct.held[s] == 0) continue;
        if (gpu_direct_current(g, s, g->direct.held[s]))
            gpu_direct_publish(g, s, g->direct.held[s]);
        g->direct.held[s] = 0;
        g->direct.nheld--;
    }
    __atomic_store_n(&g->proxy.relaunch_now, 1, __ATOMIC_RELEASE);
}

/* A job is done with: the peer mappings it used may be evicted again. */
void gpu_job_free(gpu_job_t *job)
{
    for (int i = 0; i < job->nmaps; i++) __atomic_fetch_sub(&job->maps[i]->refs, 1, __ATOMIC_RELEASE);
    gpu_plan_release(job);
    free(job);
}

/* A communicator's mappings, when it is freed (the kernel is out). */
void gpu_direct_maps_release(dfccl_gpu_comm_t *gc, int size)
{
    for (size_t i = 0; gc->maps != NULL && i < (size_t)size * GPU_IPC_MAPS_PER_PEER; i++)
        if (gc->maps[i].base != NULL) cudaIpcCloseMemHandle(gc->maps[i].base);
    free(gc->maps);
    gc->maps = NULL;
}
