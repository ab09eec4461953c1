/*
 * peer_watch.c - the watch over a GPU communicator's peers (peer_watch.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "backends/gpu/ident_check.h"
#include "backends/gpu/net_side.h"
#include "backends/gpu/peer_watch.h"
#include "core/board.h"
#include "util/clock.h"
#include "util/log.h"

/* How often the proxy looks: a failure reaches a survivor within a few of
 * these per hop, far below the watchdog. */
#define GPU_WATCH_NS 50000000ull

typedef struct gpu_watched_proc {   /* rank: the watch's ranks[] at the same index */
    pid_t       pid;
    dfccl_shm_t board_seg;   /* its board, mapped */
} gpu_watched_proc_t;

typedef struct gpu_watched_region {
    int   rank;
    char *status;   /* its gpu_conn_status_t, mapped */
} gpu_watched_region_t;

struct gpu_watch {
    int                   nprocs, nregions;
    gpu_watched_proc_t   *procs;
    const dfccl_board_t **boards;     /* the procs' boards and ranks, for ident_check.h */
    int                  *ranks;
    uint64_t              checked;    /* our collectives compared with theirs so far */
    uint64_t              net_posted; /* ... told to the peers on other nodes so far */
    uint64_t              net_checked;/* ... compared with theirs so far */
    gpu_watched_region_t *regions;
    char                 *own;        /* our status */
    char                 *tell;       /* the next rank's status on our node, or NULL */
    char                  host[DFCCL_NET_HOST_MAX];   /* ours, which the node's peers share */
};

static char *gpu_watch_status_of(char *region, uint64_t region_bytes)
{
    return region + region_bytes - GPU_CONN_STATUS_BYTES;
}

dfccl_status_t gpu_watch_prepare(dfccl_comm_t *comm, const gpu_hello_t *all)
{
    dfccl_gpu_comm_t *gc = gpu_comm_of(comm);
    int me = comm->rank, n = comm->size, np = 0, nr = 0;
    gpu_watch_t *w = calloc(1, sizeof(*w));

    if (w == NULL) return DFCCL_ERR_NO_MEMORY;
    for (int r = 0; r < n; r++) {
        np += gpu_conn_plan_waits_on(&gc->conn, gc->node, me, r);
        nr += gpu_conn_plan_maps(&gc->conn, gc->node, me, r);
    }
    gc->watch = w;   /* gpu_watch_free undoes what follows, done or not */
    w->procs = calloc((size_t)np + 1, sizeof(*w->procs));
    w->regions = calloc((size_t)nr + 1, sizeof(*w->regions));
    w->boards = calloc((size_t)np + 1, sizeof(*w->boards));
    w->ranks = calloc((size_t)np + 1, sizeof(*w->ranks));
    if (w->procs == NULL || w->regions == NULL || w->boards == NULL || w->ranks == NULL)
        return DFCCL_ERR_NO_MEMORY;
    for (int r = 0; r < n; r++) {
        if (gpu_conn_plan_waits_on(&gc->conn, gc->node, me, r)) {
            gpu_watched_proc_t *p = &w->procs[w->nprocs];
            dfccl_status_t status = dfccl_shm_attach(&p->board_seg, all[r].board_name,
                                                     DFCCL_BOARD_BYTES);
            if (status != DFCCL_OK) return status;
            p->pid = (pid_t)all[r].pid;
            w->boards[w->nprocs] = p->board_seg.addr;
            w->ranks[w->nprocs++] = r;
        }
        if (gpu_conn_plan_maps(&gc->conn, gc->node, me, r) && gc->peer_base[r] != NULL)
            w->regions[w->nregions++] = (gpu_watched_region_t){
                r, gpu_watch_status_of(gc->peer_base[r], all[r].region_bytes) };
        if (gpu_conn_plan_tells(&gc->conn, gc->node, me, r) && gc->peer_base[r] != NULL)
            w->tell = gpu_watch_status_of(gc->peer_base[r], all[r].region_bytes);
    }
    w->own = gpu_watch_status_of(gc->region, gc->region_bytes);
    snprintf(w->host, sizeof(w->host), "%s", all[me].host);
    return DFCCL_OK;
}

void gpu_watch_free(dfccl_gpu_comm_t *gc)
{
    gpu_watch_t *w = gc->watch;

    if (w == NULL) return;
    for (int i = 0; w->procs != NULL && i < w->nprocs; i++) dfccl_shm_release(&w->procs[i].board_seg);
    free(w->procs);
    free(w->regions);
    free(w->boards);
    free(w->ranks);
    free(w);
    gc->watch = NULL;
}

void gpu_watch_add(dfccl_gpu_t *g, dfccl_comm_t *comm)
{
    dfccl_gpu_comm_t *gc = gpu_comm_of(comm);

    gc->comm = comm;
    pthread_mutex_lock(&g->dead.lock);
    gc->watch_next = g->watch.live;
    __atomic_store_n(&g->watch.live, gc, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g->dead.lock);
}

void gpu_watch_remove(dfccl_gpu_t *g, dfccl_gpu_comm_t *gc)
{
    pthread_mutex_lock(&g->dead.lock);
    for (dfccl_gpu_comm_t **at = &g->watch.live; *at != NULL; at = &(*at)->watch_next)
        if (*at == gc) {
            *at = gc->watch_next;
            break;
        }
    pthread_mutex_unlock(&g->dead.lock);
    gc->comm = NULL;
}

/* Copies n bytes between host and device memory (ours or a peer's, mapped);
 * 1 when it worked. */
static int gpu_watch_copy(dfccl_gpu_t *g, void *to, const void *from, size_t n,
                          enum cudaMemcpyKind kind)
{
    return gpu_copy_now(g, to, from, n, kind) == cudaSuccess;
}

/* Why gc's communicator must fail (DFCCL_ERR_PEER_FAILED or MISMATCH), or
 * DFCCL_OK: a link across nodes, a watched process gone, calls that do not
 * match the node's peers' or (told over the links) those of the peers on
 * other nodes, a status that says a peer failed. */
static dfccl_status_t gpu_watch_failed(dfccl_gpu_t *g, dfccl_gpu_comm_t *gc, char *why, size_t len)
{
    gpu_watch_t *w = gc->watch;
    gpu_conn_status_t st;

    if (gc->net != NULL && gpu_net_side_failed(gc->net, why, len)) return DFCCL_ERR_PEER_FAILED;
    if (w == NULL) return DFCCL_OK;
    for (int i = 0; i < w->nprocs; i++)
        if (!dfccl_process_alive(w->procs[i].pid)) {
            snprintf(why, len, "rank %d (pid %d on host %s) is gone", w->ranks[i],
                     (int)w->procs[i].pid, w->host);
            return DFCCL_ERR_PEER_FAILED;
        }
    if (gc->board != NULL &&
        gpu_ident_check(gc->board, gc->comm->rank, w->boards, w->ranks, w->nprocs, &w->checked,
                        why, len))
        return DFCCL_ERR_MISMATCH;
    if (gc->board != NULL && gc->net != NULL) {   /* the peers on other nodes: over the links */
        const dfccl_board_t *boards[2 * GPU_CONN_NET_MAX];
        int ranks[2 * GPU_CONN_NET_MAX], nb;
        nb = gpu_net_side_boards(gc->net, boards, ranks, 2 * GPU_CONN_NET_MAX);
        if (nb > 0 && gpu_ident_check(gc->board, gc->comm->rank, boards, ranks, nb,
                                      &w->net_checked, why, len))
            return DFCCL_ERR_MISMATCH;
    }
    for (int i = 0; i < w->nregions; i++) {
        if (!gpu_watch_copy(g, &st, w->regions[i].status, sizeof(st), cudaMemcpyDeviceToHost) ||
            !st.broken)
            continue;
        st.why[sizeof(st.why) - 1] = '\0';
        snprintf(why, len, "rank %d on host %s failed: %s", w->regions[i].rank, w->host, st.why);
        return DFCCL_ERR_PEER_FAILED;
    }
    if (gpu_watch_copy(g, &st, w->own, sizeof(st), cudaMemcpyDeviceToHost) && st.prev_broken) {
        snprintf(why, len, "rank %d on host %s failed", (int)st.prev_rank, w->host);
        return DFCCL_ERR_PEER_FAILED;
    }
    return DFCCL_OK;
}

/* Fails gc's communicator on this rank and tells its peers. Proxy thread,
 * under dead.lock (gc stays). */
static void gpu_watch_fail(dfccl_gpu_t *g, dfccl_gpu_comm_t *gc, dfccl_status_t status,
                           const char *why)
{
    const int32_t broken = status == DFCCL_ERR_MISMATCH ? DFCCL_GPU_BROKEN_MISMATCH
                                                        : DFCCL_GPU_BROKEN_PEER;
    dfccl_comm_t *comm = gc->comm;
    gpu_conn_status_t st;
    int told = 1;

    dfccl_error("rank %d of comm %#llx (size %d, GPU): its collectives fail: %s", comm->rank,
                (unsigned long long)comm->key, comm->size, why);
    __atomic_store_n(&gc->watch_status, (int)status, __ATOMIC_RELEASE);
    __atomic_store_n(&comm->broken, 1, __ATOMIC_RELEASE);
    if (gc->index >= 0)
        told = gpu_watch_copy(g, (char *)&g->env.comms[gc->index] +
                                     offsetof(dfccl_gpu_comm_dev_t, broken),
                              &broken, sizeof(broken), cudaMemcpyHostToDevice);
    if (!told)   /* the watchdog still ends them */
        dfccl_error("comm %#llx: rank %d cannot tell its daemon kernel", (unsigned long long)comm->key,
                    comm->rank);
    /* a kernel that left while they waited comes back to fail them */
    __atomic_store_n(&g->proxy.relaunch_now, 1, __ATOMIC_RELEASE);
    if (gc->watch != NULL) {
        memset(&st, 0, sizeof(st));
        st.rank = comm->rank;
        snprintf(st.why, sizeof(st.why), "%.*s", (int)sizeof(st.why) - 1, why);
        /* the reason before the word that peers look at */
        gpu_watch_copy(g, gc->watch->own + offsetof(gpu_conn_status_t, rank), &st.rank,
                       sizeof(st) - offsetof(gpu_conn_status_t, rank), cudaMemcpyHostToDevice);
        st.broken = 1;
        gpu_watch_copy(g, gc->watch->own, (const void *)&st.broken, sizeof(st.broken),
                       cudaMemcpyHostToDevice);
        if (gc->watch->tell != NULL) {
            st.prev_rank = comm->rank;
            st.prev_broken = 1;
            gpu_watch_copy(g, gc->watch->tell + offsetof(gpu_conn_status_t, prev_rank),
                           &st.prev_rank, sizeof(st.prev_rank), cudaMemcpyHostToDevice);
            gpu_watch_copy(g, gc->watch->tell + offsetof(gpu_conn_status_t, prev_broken),
                           (const void *)&st.prev_broken, sizeof(st.prev_broken),
                           cudaMemcpyHostToDevice);
        }
    }
    if (gc->net != NULL) gpu_net_side_break(gc->net, comm->rank, why);
}

void gpu_watch(dfccl_gpu_t *g)
{
    char why[DFCCL_BOARD_WHY + 96];
    uint64_t now;

    if (__atomic_load_n(&g->watch.live, __ATOMIC_ACQUIRE) == NULL) return;
    now = dfccl_now_ns();
    if (now - g->watch.watched_ns < GPU_WATCH_NS) return;
    g->watch.watched_ns = now;
    pthread_mutex_lock(&g->dead.lock);
    for (dfccl_gpu_comm_t *gc = g->watch.live; gc != NULL; gc = gc->watch_next) {
        /* what it posted, for the peers on other nodes to compare: also
         * when nothing is in flight here, as a peer's may wait */
        if (gc->net != NULL && gc->board != NULL && gc->watch != NULL)
            gpu_net_side_post_idents(gc->net, gc->board, &gc->watch->net_posted);
        /* one with nothing in flight has nothing waiting: its next post
         * brings it back within a period */
        if (__atomic_load_n(&gc->watch_status, __ATOMIC_ACQUIRE) ||
            __atomic_load_n(&gc->in_flight, __ATOMIC_RELAXED) <= 0)
            continue;
        int previous = gpu_device_enter(g);
        dfccl_status_t status = gpu_watch_failed(g, gc, why, sizeof(why));
        if (status != DFCCL_OK) gpu_watch_fail(g, gc, status, why);
        gpu_device_leave(g, previous);
    }
    pthread_mutex_unlock(&g->dead.lock);
}
