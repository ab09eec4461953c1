/*
 * comm_setup.c - a GPU communicator's set-up, the GPU backend's part of the
 * engine's protocol (backend_ops.h): begin (our FIFOs and inbox in device
 * memory, and the hello that describes them), connect (the ranks' nodes,
 * the regions of the peers on ours mapped through CUDA IPC, the
 * communicator's entry in the device table), where ranks are on several
 * nodes the addresses exchange and the links to ring neighbours there
 * (net_side.h), and finish (kept or undone, as all ranks agreed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "backends/gpu/backend.h"
#include "backends/gpu/comm_release.h"
#include "backends/gpu/setup_hello.h"
#include "util/log.h"
#include "backends/gpu/net_side.h"
#include "backends/gpu/peer_watch.h"
#include "backends/gpu/stage.h"
#include "backends/gpu/state.h"
#include "engine/plan_set.h"

#define GPU_FIFO_ALIGN 256

_Static_assert(sizeof(dfccl_gpu_inbox_ctrl_t) <= DFCCL_GPU_BOARD_OFFSET &&
               DFCCL_GPU_BOARD_OFFSET + sizeof(dfccl_gpu_board_t) <= DFCCL_GPU_INBOX_DATA_OFFSET,
               "inbox counters, board and data slots overlap");

int dfccl_gpu_built(void)
{
    return 1;
}

static size_t gpu_fifo_bytes(const dfccl_config_t *cfg)
{
    size_t b = dfccl_fifo_bytes(cfg->gpu_slot_bytes, cfg->gpu_fifo_slots);
    return (b + GPU_FIFO_ALIGN - 1) / GPU_FIFO_ALIGN * GPU_FIFO_ALIGN;
}

static size_t gpu_comm_hello_bytes(const dfccl_comm_t *comm)
{
    (void)comm;
    return sizeof(gpu_hello_t);
}

/* The senders of every plan file for the communicator's size, whose
 * FIFOs the ranks' regions hold (plan_files.h). */
static dfccl_status_t gpu_plan_senders(const dfccl_comm_t *comm, dfccl_gpu_comm_t *gc)
{
    const dfccl_plan_set_t *set = &comm->context->plans;
    const dfccl_plan_file_t **sized = NULL;
    dfccl_status_t status;
    int n = 0;

    if (set->n == 0) return DFCCL_OK;
    if ((sized = malloc(sizeof(*sized) * (size_t)set->n)) == NULL) return DFCCL_ERR_NO_MEMORY;
    for (int i = 0; i < set->n; i++)
        if (dfccl_plan_file_ranks(set->plans[i]) == comm->size) sized[n++] = set->plans[i];
    status = n > 0 ? gpu_plan_peers_make(sized, n, comm->size, &gc->plan_senders) : DFCCL_OK;
    free(sized);
    return status;
}

/* FIFOs rank's region holds for plan files' senders. */
static int gpu_plan_fifos(const dfccl_gpu_comm_t *gc, int rank)
{
    const gpu_plan_peers_t *pp = &gc->plan_senders;
    return pp->recv_at != NULL ? pp->recv_at[rank + 1] - pp->recv_at[rank] : 0;
}

static dfccl_status_t gpu_comm_begin(dfccl_comm_t *comm, void *hello_out)
{
    dfccl_context_t *ctx = comm->context;
    gpu_hello_t hello;
    dfccl_gpu_comm_t *gc;
    dfccl_gpu_t *g = NULL;
    dfccl_status_t status;
    struct cudaDeviceProp prop;
    cudaError_t e;

    memset(&hello, 0, sizeof(hello));
    gpu_hello_settings(&hello, &ctx->config);
    hello.node_label = dfccl_node_label(hello.host, sizeof(hello.host));
    hello.pid = (int32_t)getpid();
    if (comm->node_label != 0) hello.node_label = comm->node_label;   /* the caller knows best */
    gc = calloc(1, sizeof(*gc) + sizeof(gpu_dead_t));
    if (gc == NULL) {
        hello.status = DFCCL_ERR_NO_MEMORY;
        memcpy(hello_out, &hello, sizeof(hello));
        return DFCCL_ERR_NO_MEMORY;
    }
    comm->backend = gc;
    gc->index = -1;
    gc->failed = DFCCL_ERR_UNSUPPORTED;
    /* what every rank is told of the others: O(size) words on the host;
     * device memory and mappings grow with the peers the ring uses */
    /* the ranks' nodes, then the topology derived from them (gpu_net_nodes) */
    gc->node = calloc(4 * (size_t)comm->size, sizeof(*gc->node));
    gc->peer_base = calloc((size_t)comm->size, sizeof(*gc->peer_base));
    gc->setup_scratch = malloc((size_t)comm->size * (sizeof(uint64_t) + sizeof(int)));
    if (gc->node == NULL || gc->peer_base == NULL || gc->setup_scratch == NULL) {
        status = DFCCL_ERR_NO_MEMORY;
        goto out;
    }
    /* our board, which the node's peers map to compare calls */
    status = dfccl_shm_create(&gc->board_seg, DFCCL_BOARD_BYTES);
    if (status != DFCCL_OK) goto out;
    gc->board = gc->board_seg.addr;
    dfccl_board_init(gc->board);
    snprintf(hello.board_name, sizeof(hello.board_name), "%s", gc->board_seg.name);
    status = gpu_get(ctx, &g);
    if (status != DFCCL_OK) goto out;
    hello.device = g->fixed.device;
    hello.nchannels = g->fixed.blocks;
    if ((e = cudaGetDeviceProperties(&prop, g->fixed.device)) != cudaSuccess) goto err_cuda;
    memcpy(hello.uuid, &prop.uuid, sizeof(hello.uuid));
    /* room for a FIFO from each rank that may send to us under a plan
     * file (the nodes, which decide which plans fit, are not known yet) */
    status = gpu_plan_senders(comm, gc);
    if (status != DFCCL_OK) goto out;
    hello.plans = dfccl_plan_set_digest(&ctx->plans, comm->size);
    hello.plan_fifos = gpu_plan_fifos(gc, comm->rank);
    gc->region_bytes = gpu_conn_region_bytes(comm->size, g->fixed.blocks + (unsigned)hello.plan_fifos,
                                             gpu_fifo_bytes(&ctx->config), GPU_FIFO_ALIGN);
    hello.region_bytes = gc->region_bytes;
    {
        int previous = gpu_device_enter(g);
        e = cudaMalloc((void **)&gc->region, gc->region_bytes);
        if (e == cudaSuccess)
            e = cudaMemsetAsync(gc->region, 0, gc->region_bytes, g->fixed.copy_stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(g->fixed.copy_stream);
        if (e == cudaSuccess) e = cudaIpcGetMemHandle(&gc->handle, gc->region);
        gpu_device_leave(g, previous);
    }
    if (e != cudaSuccess) goto err_cuda;
    hello.handle = gc->handle;
    status = DFCCL_OK;
    goto out;

err_cuda:
    dfccl_error("comm %#llx: GPU set-up on rank %d failed: %s", (unsigned long long)comm->key,
                comm->rank, gpu_err(e));
    status = DFCCL_ERR_SYSTEM;
out:
    hello.status = (int32_t)status;
    memcpy(hello_out, &hello, sizeof(hello));
    gc->failed = status;
    return status;
}

/* The daemon kernels of all ranks on one GPU must be resident together:
 * blocks that wait for an SM wait for others to leave, and a large
 * allreduce whose kernels did not all fit on the GPU took several times as
 * long as one whose kernels did. Said once per process, when a communicator
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
    capacity = gpu_block_capacity(g->fixed.device, g->fixed.threads, &sms);
    if (capacity == 0 || blocks <= capacity) return;
    g->crowd_warned = 1;
    if (me != first) return;   /* one rank per device says it */
    dfccl_error("%d ranks share GPU %d, their daemon kernels %ld blocks of %u threads together,"
                " but its %d SMs hold %d such blocks at once: the kernels wait for each other and"
                " collectives slow down; lower the knobs gpu_channels or gpu_threads so that the"
                " ranks' channels add up to at most %d", sharing, g->fixed.device,
                blocks, g->fixed.threads, sms, capacity, capacity);
}

/* Writes the communicator's entry into the device table; the kernel may use
 * it from the next launch on. */
static dfccl_status_t gpu_comm_publish(dfccl_comm_t *comm, dfccl_gpu_t *g,
                                       const dfccl_gpu_comm_dev_t *dev)
{
    dfccl_gpu_comm_t *gc = gpu_comm_of(comm);
    cudaError_t e;
    int current;

    pthread_mutex_lock(&g->sq.lock);
    for (int i = 0; i < DFCCL_GPU_MAX_COMMS; i++) {
        if (!g->sq.comm_used[i]) {
            g->sq.comm_used[i] = 1;
            gc->index = i;
            break;
        }
    }
    pthread_mutex_unlock(&g->sq.lock);
    if (gc->index < 0) {
        dfccl_error("comm %#llx: more than %d GPU communicators in this process",
                    (unsigned long long)comm->key, DFCCL_GPU_MAX_COMMS);
        return DFCCL_ERR_NO_MEMORY;
    }
    current = gpu_device_enter(g);
    e = gpu_copy_now(g, &g->env.comms[gc->index], dev, sizeof(*dev), cudaMemcpyHostToDevice);
    gpu_device_leave(g, current);
    if (e != cudaSuccess) {
        dfccl_error("comm %#llx: rank %d cannot write its GPU communicator table entry: %s",
                    (unsigned long long)comm->key, comm->rank, gpu_err(e));
        return DFCCL_ERR_SYSTEM;
    }
    pthread_mutex_lock(&g->sq.lock);
    gc->first_launch = g->env.launch_id + 1;   /* see gpu_job_may_enter */
    pthread_mutex_unlock(&g->sq.lock);
    return DFCCL_OK;
}

/* A FIFO whose control block and slots lie at mem, to or from peer. */
static void gpu_fifo_at(dfccl_fifo_t *f, char *mem, const dfccl_config_t *cfg, int peer)
{
    f->ctrl = (dfccl_fifo_ctrl_t *)mem;
    f->slots = mem + sizeof(dfccl_fifo_ctrl_t);
    f->slot_bytes = cfg->gpu_slot_bytes;
    f->nslots = cfg->gpu_fifo_slots;
    f->peer = peer;
}

/* Channel c's FIFOs to its neighbours on our node (conn_plan.h: node_prev,
 * node_next): ours receives in our region, and we send into the next one's,
 * mapped, each at its connection's index. Neighbours on other nodes get
 * their FIFOs from the network side instead (gpu_net_connect). */
static void gpu_local_fifos(dfccl_comm_t *comm, const gpu_hello_t *all, dfccl_gpu_comm_dev_t *dev)
{
    dfccl_gpu_comm_t *gc = gpu_comm_of(comm);
    const dfccl_config_t *cfg = &comm->context->config;
    const gpu_conn_plan_t *conn = &gc->conn;
    int n = comm->size, me = comm->rank, next = conn->node_next, prev = conn->node_prev;
    int rk = gpu_conn_plan_recv_index(conn, prev), sk = gpu_conn_plan_send_index(conn, next);
    size_t inbox = gpu_conn_inbox_bytes(n, GPU_FIFO_ALIGN), fifo = gpu_fifo_bytes(cfg);

    for (unsigned c = 0; c < gc->nchannels; c++) {
        if (prev >= 0 && rk >= 0)
            gpu_fifo_at(&gpu_comm_conns(dev, 0, c)[rk], gc->region + inbox + c * fifo, cfg, prev);
        if (next >= 0 && sk >= 0)
            gpu_fifo_at(&gpu_comm_conns(dev, 1, c)[sk], gc->peer_base[next] + inbox + c * fifo,
                        cfg, next);
    }
    /* the plan files' connections on our node (channel 0): a FIFO lies in
     * the receiver's region at the sender's place among its plan senders */
    for (int k = conn->nrecv_all; k < conn->nrecv; k++) {
        int p = conn->recv_peer[k], at = gpu_plan_peers_recv_index(&gc->plan_senders, me, p);
        if (gc->node[p] != gc->node[me] || at < 0) continue;
        gpu_fifo_at(&gpu_comm_conns(dev, 0, 0)[k],
                    gc->region + gpu_conn_plan_fifo_at(n, all[me].nchannels, fifo, GPU_FIFO_ALIGN, at),
                    cfg, p);
    }
    for (int k = conn->nsend_all; k < conn->nsend; k++) {
        int p = conn->send_peer[k], at = gpu_plan_peers_recv_index(&gc->plan_senders, p, me);
        if (gc->node[p] != gc->node[me] || at < 0) continue;
        gpu_fifo_at(&gpu_comm_conns(dev, 1, 0)[k],
                    gc->peer_base[p] + gpu_conn_plan_fifo_at(n, all[p].nchannels, fifo,
                                                             GPU_FIFO_ALIGN, at),
                    cfg, p);
    }
}

/* The plan files the communicator runs (plan_files.h), and its
 * connections remade with their peers: alike on every rank, since every
 * rank sees the same hellos and the same plans. Rank 0 says at verbose 1
 * which serve it, or why none can. Fails only when memory runs out. */
static dfccl_status_t gpu_plans_take(dfccl_comm_t *comm, const gpu_hello_t *all)
{
    dfccl_gpu_comm_t *gc = gpu_comm_of(comm);
    const dfccl_plan_file_t **fit = NULL;
    unsigned wants = gpu_conn_plan_wants(&gc->conn);
    unsigned long long key = (unsigned long long)comm->key;
    dfccl_status_t status;
    char why[160];
    int n = 0, quiet = comm->rank != 0;

    if (all[0].plans == 0) return DFCCL_OK;
    for (int r = 1; r < comm->size; r++)
        if (all[r].plans != all[0].plans) {
            if (!quiet)
                dfccl_error("comm %#llx: rank %d offers other plan files (plan_dir) than rank 0:"
                            " its GPU collectives use the built-in algorithms", key, r);
            return DFCCL_OK;
        }
    status = dfccl_plan_set_select(&comm->context->plans, comm->size, gc->node, &fit, &n);
    if (status != DFCCL_OK || n == 0) return status;
    status = gpu_plan_peers_make(fit, n, comm->size, &gc->plan_peers);
    if (status != DFCCL_OK) {
        free(fit);
        return status;
    }
    if (!gpu_conn_plan_files_fit(&gc->topo, wants, &gc->plan_peers, why, sizeof(why))) {
        if (!quiet)
            dfccl_info("comm %#llx: %d plan file%s of plan_dir fit its %d ranks, but the GPU side"
                       " cannot run them: %s (channel 0 holds %d); its collectives use the"
                       " built-in algorithms", key, n, n == 1 ? "" : "s", comm->size, why,
                       GPU_CONN0_MAX);
        gpu_plan_peers_free(&gc->plan_peers);
        free(fit);
        return DFCCL_OK;
    }
    gc->plans = fit;
    gc->nplans = n;
    gpu_conn_plan_make(&gc->topo, comm->rank, wants, &gc->plan_peers, &gc->conn);
    for (int i = 0; i < n && !quiet; i++)
        dfccl_info("comm %#llx: plan file %s (%s) serves it on the GPU (channel 0)", key,
                   dfccl_plan_file_name(fit[i]), dfccl_coll_type_name(dfccl_plan_file_type(fit[i])));
    return DFCCL_OK;
}

static dfccl_status_t gpu_comm_connect(dfccl_comm_t *comm, const void *hellos)
{
    const gpu_hello_t *all = hellos;
    dfccl_gpu_comm_t *gc = gpu_comm_of(comm);
    dfccl_context_t *ctx = comm->context;
    dfccl_gpu_t *g = gpu_ctx_of(ctx)->gpu;
    dfccl_gpu_comm_dev_t dev;
    int me = comm->rank, n = comm->size, current = -1;
    const int *node = gc->node;
    cudaError_t e = cudaSuccess;
    dfccl_status_t status, agreed = gpu_hello_agree(comm, all);

    if (agreed != DFCCL_OK) return agreed;
    if (gc->failed != DFCCL_OK || g == NULL) return gc->failed;
    /* channels: every rank's kernel has this many blocks, and its region
     * as many FIFOs */
    gc->nchannels = all[0].nchannels;
    for (int r = 1; r < n; r++)
        if (all[r].nchannels < gc->nchannels) gc->nchannels = all[r].nchannels;
    /* first, and without a way to fail: whether an addresses exchange
     * follows must be known alike on every rank */
    gpu_net_nodes(comm, all);
    if ((status = gpu_plans_take(comm, all)) != DFCCL_OK) return status;
    current = gpu_device_enter(g);
    for (int r = 0; r < n && e == cudaSuccess; r++) {
        /* CUDA IPC reaches this node's ranks; where only the ring runs
         * (across nodes, or more ranks than the all-peer paths serve) it
         * needs the next rank's region alone */
        if (!gpu_conn_plan_maps(&gc->conn, node, me, r)) continue;
        e = cudaIpcOpenMemHandle((void **)&gc->peer_base[r], all[r].handle,
                                 cudaIpcMemLazyEnablePeerAccess);
        if (e != cudaSuccess)
            dfccl_error("comm %#llx: rank %d cannot map the GPU memory of rank %d (device %d):"
                        " %s", (unsigned long long)comm->key, me, r, all[r].device, gpu_err(e));
    }
    if (e == cudaSuccess) gpu_warn_crowded(g, all, me, n);
    gpu_device_leave(g, current);
    if (e != cudaSuccess) return DFCCL_ERR_SYSTEM;
    memset(&dev, 0, sizeof(dev));
    dev.rank = me;
    dev.size = n;
    dev.nchannels = gc->nchannels;
    dev.key = comm->key;
    /* one GPU for all: GPU-scope fences order the one-shot's inbox traffic
     * (a communicator across nodes runs none) */
    gc->one_device = !gc->conn.spans;
    for (int r = 0; r < n; r++) {
        if (gc->conn.all_peers) dev.inbox[r] = r == me ? gc->region : gc->peer_base[r];
        if (!gpu_hello_same_device(&all[r], &all[me])) gc->one_device = 0;
    }
    dev.one_device = (uint32_t)gc->one_device;
    gpu_local_fifos(comm, all, &dev);
    if ((status = gpu_watch_prepare(comm, all)) != DFCCL_OK) return status;
    if (!gc->conn.spans) return gpu_comm_publish(comm, g, &dev);
    /* the entry waits for the links' FIFOs (gpu_comm_connect_addresses) */
    status = gpu_net_begin(comm, g, all);
    if (status != DFCCL_OK) return status;
    gc->dev_pending = malloc(sizeof(dev));
    if (gc->dev_pending == NULL) return DFCCL_ERR_NO_MEMORY;
    memcpy(gc->dev_pending, &dev, sizeof(dev));
    return DFCCL_OK;
}

static size_t gpu_comm_address_bytes(const dfccl_comm_t *comm)
{
    return gpu_net_address_bytes(comm);
}

static void gpu_comm_address(dfccl_comm_t *comm, dfccl_status_t connected, void *out)
{
    gpu_net_address(comm, connected, out);
}

static dfccl_status_t gpu_comm_connect_addresses(dfccl_comm_t *comm, const void *addresses)
{
    dfccl_gpu_comm_t *gc = gpu_comm_of(comm);
    dfccl_status_t status;

    /* every rank's outcome of connect travels here: any failure fails all */
    status = gpu_net_connect(comm, addresses, gc->dev_pending);
    if (status == DFCCL_OK) status = gpu_comm_publish(comm, gpu_ctx_of(comm->context)->gpu, gc->dev_pending);
    free(gc->dev_pending);
    gc->dev_pending = NULL;
    return status;
}

static dfccl_status_t gpu_comm_finish(dfccl_comm_t *comm, dfccl_status_t agreed)
{
    dfccl_gpu_comm_t *gc = gpu_comm_of(comm);

    if (gc == NULL) return agreed != DFCCL_OK ? agreed : DFCCL_ERR_NO_MEMORY;
    dfccl_shm_unlink(&gc->board_seg);   /* mapped by whoever needs it, either way */
    gpu_plan_peers_free(&gc->plan_senders);   /* the regions are laid out */
    if (agreed == DFCCL_OK) {
        gc->ready = 1;
        gc->failed = DFCCL_OK;
        gpu_watch_add(gpu_ctx_of(comm->context)->gpu, comm);
        return DFCCL_OK;
    }
    gc->failed = agreed;
    free(gc->dev_pending);
    gc->dev_pending = NULL;
    if (gpu_ctx_of(comm->context)->gpu != NULL) {
        gpu_comm_free_resources(gpu_ctx_of(comm->context)->gpu, gc, comm->size, comm->rank);
    } else if (gc->region != NULL) {
        cudaFree(gc->region);
    }
    if (gc->peer_base != NULL) memset(gc->peer_base, 0, sizeof(*gc->peer_base) * (size_t)comm->size);
    gc->region = NULL;
    gc->index = -1;
    return agreed;
}

const dfccl_backend_ops_t dfccl_gpu_backend = {
    .name        = "GPU",
    .memory      = DFCCL_BUFFERS_DEVICE,
    .stage_alloc = dfccl_gpu_stage_alloc,
    .stage_free  = dfccl_gpu_stage_free,
    .copy        = dfccl_gpu_copy,
    .context_open  = dfccl_gpu_context_open,
    .context_close = dfccl_gpu_context_close,
    .poll        = dfccl_gpu_poll,
    .hello_bytes = gpu_comm_hello_bytes,
    .begin       = gpu_comm_begin,
    .connect     = gpu_comm_connect,
    .address_bytes = gpu_comm_address_bytes,
    .address     = gpu_comm_address,
    .connect_addresses = gpu_comm_connect_addresses,
    .finish      = gpu_comm_finish,
    .release     = dfccl_gpu_comm_release,
    .post        = dfccl_gpu_post,
    .prepare     = dfccl_gpu_prepare,
    .start       = dfccl_gpu_start,
};
