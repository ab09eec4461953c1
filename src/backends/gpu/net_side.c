/*
 * net_side.c - a GPU communicator's network side (net_side.h): the ranks'
 * nodes, the FIFOs to and from ring neighbours on other nodes in pinned,
 * mapped host memory, their links, and the proxy thread's share of the
 * work: pumping the links, and freeing a closed side once its links let
 * its memory go.
 */
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "util/clock.h"
#include "util/log.h"
#include "backends/gpu/net_side.h"

/* Each FIFO starts on this boundary: its control block on lines of its
 * own, its slots 16-byte aligned for the kernel's vector loads. */
#define GPU_NET_ALIGN 256
/* How long the proxy's end waits for closed links: the net lets a closing
 * link's sends run for 2 s (ucx_net.h) before it parks them. */
#define GPU_NET_FINI_NS 3000000000ull

/* One connection to or from a rank on another node, on every channel. */
typedef struct gpu_net_conn {
    int               peer;
    int               index;        /* the connection's index (conn_plan.h) */
    int               peer_index;   /* ours among the peer's network connections the
                                       other way (its link ids) */
    unsigned          nchannels;    /* the side's, or 1: the latency algorithm's partner
                                       alone, on channel 0 (conn_plan.h) */
    size_t            at;           /* its channel 0 FIFO in the side's memory */
    dfccl_net_link_t *link[DFCCL_GPU_MAX_CHANNELS];
    /* per channel: 1 once its link uses our memory no more (net.h), 1 too
     * where no link was opened */
    int               released[DFCCL_GPU_MAX_CHANNELS];
    /* per channel: the peer's board as its messages tell it (why its
     * communicator broke) */
    dfccl_board_t    *mirror[DFCCL_GPU_MAX_CHANNELS];
    char              host[DFCCL_NET_HOST_MAX];
} gpu_net_conn_t;

typedef struct gpu_net_side {
    struct gpu_net_side *retired_next;   /* g->net.retired */
    dfccl_net_t      *net;
    char             *host;           /* pinned, mapped: every FIFO of the side */
    char             *dev;            /* the same memory as the kernel addresses it */
    size_t            bytes;
    size_t            recv_stride;    /* per connection and channel: receive FIFOs first, */
    size_t            send_stride;    /* then the send FIFOs (each connection's at) */
    unsigned          nchannels;
    int               nrecv, nsend;   /* connections each way on other nodes */
    gpu_net_conn_t    recv[GPU_CONN_NET_MAX], send[GPU_CONN_NET_MAX];
    uint32_t          link_ids;       /* our block: 2 x GPU_CONN_NET_MAX x nchannels */
    /* What a link reads to tell its peer why our communicator broke: set
     * by the watch (peer_watch.c) when a link or a peer failed, so the
     * ranks down the ring on other nodes learn it from their links. The
     * kernel keeps no board: a collective failing on its own (the
     * watchdog) tells nobody. */
    int               broken;
    dfccl_board_t     board;
} gpu_net_side_t;

/* Connection i of the side's nrecv + nsend: the receiving ones first. */
static gpu_net_conn_t *gpu_net_conn_at(const gpu_net_side_t *side, int i)
{
    return (gpu_net_conn_t *)(i < side->nrecv ? &side->recv[i] : &side->send[i - side->nrecv]);
}

/* A rank's part of the addresses exchange. */
typedef struct gpu_address {
    int32_t  status;
    uint32_t link_ids;      /* its block (0: no network side there) */
    uint32_t addr_len;      /* 0: no network side there */
    uint32_t pad;
    char     addr[DFCCL_NET_ADDR_MAX];
} gpu_address_t;

static size_t gpu_net_round(size_t bytes)
{
    return (bytes + GPU_NET_ALIGN - 1) / GPU_NET_ALIGN * GPU_NET_ALIGN;
}

/* Which algorithms across nodes allreduce may take besides the ring, as
 * the engine's knobs (alike on every rank) say: the hierarchical one (1;
 * auto from gpu_hier_min_bytes), the latency algorithm (2; auto up to
 * rd_max_bytes). */
static unsigned gpu_net_wanted(const dfccl_comm_t *comm)
{
    const dfccl_config_t *cfg = &comm->context->config;

    switch (cfg->algorithm) {
    case DFCCL_ALGO_HIER: return GPU_CONN_WANT_HIER;
    case DFCCL_ALGO_RD:   return GPU_CONN_WANT_RD;
    case DFCCL_ALGO_RING: return 0;
    default:
        return (cfg->rd_max_bytes > 0 ? GPU_CONN_WANT_RD : 0) |
               (cfg->gpu_hier_min_bytes < UINT64_MAX ? GPU_CONN_WANT_HIER : 0);
    }
}

void gpu_net_nodes(dfccl_comm_t *comm, const gpu_hello_t *all)
{
    dfccl_gpu_comm_t *gc = gpu_comm_of(comm);
    /* begin made room for the labels and the groups' ranks: this step
     * cannot fail, as every rank must come to the same answer */
    uint64_t *label = gc->setup_scratch;
    int n = comm->size, *k = (int *)(label + n);
    int *local = gc->node + n, *order = local + n, *pos = order + n;

    for (int r = 0; r < n; r++) label[r] = all[r].node_label;
    dfccl_node_groups(label, n, comm->context->config.node_split, gc->node, k);
    free(gc->setup_scratch);
    gc->setup_scratch = NULL;
    gc->topo = (dfccl_topo_t){ n, 1, gc->node, local, order, pos, 1 };
    dfccl_topo_derive(n, gc->node, local, order, pos, &gc->topo.nnodes, &gc->topo.uniform);
    gpu_conn_plan_make(&gc->topo, comm->rank, gpu_net_wanted(comm), NULL, &gc->conn);
    if (comm->rank == 0 && gc->conn.spans)
        dfccl_info("comm %#llx: GPU side on %d nodes%s: allreduce runs%s%s%s",
                   (unsigned long long)comm->key, gc->topo.nnodes,
                   gc->topo.uniform ? " of as many ranks" : "",
                   gc->conn.rd ? " by recursive doubling among the nodes (the node's ring into its"
                                 " last rank, recursive doubling among those, the node's ring)"
                               : "",
                   gc->conn.rd && gc->conn.hier ? " up to rd_max_bytes," : "",
                   gc->conn.hier ? " hierarchically (the node's ring, the counterparts across"
                                   " nodes, the node's ring)"
                   : gc->conn.rd ? "" : " the ring node by node");
}

/* The connections of plan on other nodes, one way: the peers, their
 * indices, how many channels use them, and ours at the peer's end. */
static int gpu_net_conns(const dfccl_topo_t *t, int me, const gpu_conn_plan_t *plan, int sending,
                         unsigned nchannels, const gpu_hello_t *all, gpu_net_conn_t *conns)
{
    const int *peers = sending ? plan->send_peer : plan->recv_peer;
    int n = 0, count = sending ? plan->nsend : plan->nrecv;
    int every = sending ? plan->nsend_all : plan->nrecv_all;

    for (int i = 0; i < count; i++) {
        gpu_conn_plan_t theirs;
        int p = peers[i];
        if (t->node[p] == t->node[me]) continue;
        gpu_conn_plan_make(t, p, gpu_conn_plan_wants(plan), plan->files, &theirs);
        conns[n].nchannels = i < every ? nchannels : 1;
        conns[n].peer = p;
        conns[n].index = i;
        conns[n].peer_index = sending ? gpu_conn_plan_net_recv_index(&theirs, t, p, me)
                                      : gpu_conn_plan_net_send_index(&theirs, t, p, me);
        for (unsigned c = 0; c < DFCCL_GPU_MAX_CHANNELS; c++) conns[n].released[c] = 1;
        snprintf(conns[n].host, sizeof(conns[n].host), "%.*s", DFCCL_NET_HOST_MAX - 1,
                 all[p].host);
        n++;
    }
    return n;
}

dfccl_status_t gpu_net_begin(dfccl_comm_t *comm, dfccl_gpu_t *g, const gpu_hello_t *all)
{
    const dfccl_config_t *cfg = &comm->context->config;
    dfccl_gpu_comm_t *gc = gpu_comm_of(comm);
    int me = comm->rank, previous;
    gpu_net_side_t *side;
    dfccl_status_t status;
    cudaError_t e;
    void *dev = NULL;
    char why[160];

    if (!gc->conn.spans) return DFCCL_OK;
    side = calloc(1, sizeof(*side));
    if (side == NULL) return DFCCL_ERR_NO_MEMORY;
    side->nrecv = gpu_net_conns(&gc->topo, me, &gc->conn, 0, gc->nchannels, all, side->recv);
    side->nsend = gpu_net_conns(&gc->topo, me, &gc->conn, 1, gc->nchannels, all, side->send);
    if (side->nrecv == 0 && side->nsend == 0) {
        free(side);
        return DFCCL_OK;
    }
    if (!dfccl_net_available(why, sizeof(why))) {
        dfccl_info("comm %#llx: rank %d's connections include a rank on another node, which"
                   " the GPU side reaches over the network transport: %s",
                   (unsigned long long)comm->key, me, why);
        free(side);
        return DFCCL_ERR_UNSUPPORTED;
    }
    side->nchannels = gc->nchannels;
    side->recv_stride =
        gpu_net_round(dfccl_net_fifo_bytes(cfg->gpu_slot_bytes, cfg->gpu_fifo_slots, 0));
    side->send_stride =
        gpu_net_round(dfccl_net_fifo_bytes(cfg->gpu_slot_bytes, cfg->gpu_fifo_slots, 1));
    for (int i = 0; i < side->nrecv + side->nsend; i++) {
        gpu_net_conn_t *x = gpu_net_conn_at(side, i);
        x->at = side->bytes;
        side->bytes += x->nchannels * (i < side->nrecv ? side->recv_stride : side->send_stride);
    }
    dfccl_board_init(&side->board);
    status = dfccl_context_net(comm->context, &side->net);
    if (status != DFCCL_OK) {
        free(side);
        return status;
    }
    previous = gpu_device_enter(g);
    e = cudaHostAlloc((void **)&side->host, side->bytes, cudaHostAllocMapped);
    if (e == cudaSuccess) e = cudaHostGetDevicePointer(&dev, side->host, 0);
    gpu_device_leave(g, previous);
    if (e != cudaSuccess) {
        dfccl_error("comm %#llx: rank %d cannot map %zu bytes of host memory for its FIFOs to"
                    " other nodes: %s", (unsigned long long)comm->key, me, side->bytes, gpu_err(e));
        if (side->host != NULL) cudaFreeHost(side->host);
        free(side);
        return DFCCL_ERR_SYSTEM;
    }
    memset(side->host, 0, side->bytes);
    side->dev = dev;
    side->link_ids = dfccl_net_link_ids(side->net, 2 * GPU_CONN_NET_MAX * side->nchannels);
    __atomic_add_fetch(&g->net.sides, 1, __ATOMIC_ACQ_REL);
    gc->net = side;
    dfccl_debug("comm %#llx: rank %d reaches %d rank(s) and is reached by %d over the network,"
                " %u channels, %zu bytes of mapped host memory", (unsigned long long)comm->key,
                me, side->nsend, side->nrecv, side->nchannels, side->bytes);
    return DFCCL_OK;
}

size_t gpu_net_address_bytes(const dfccl_comm_t *comm)
{
    return gpu_comm_of(comm) != NULL && gpu_comm_of(comm)->conn.spans ? sizeof(gpu_address_t) : 0;
}

void gpu_net_address(dfccl_comm_t *comm, dfccl_status_t status, void *out)
{
    gpu_address_t *a = out;
    gpu_net_side_t *side = gpu_comm_of(comm)->net;

    a->status = (int32_t)status;
    a->link_ids = 0;
    a->addr_len = 0;
    if (status == DFCCL_OK && side != NULL) {
        size_t len = 0;
        a->link_ids = side->link_ids;
        a->status = (int32_t)dfccl_net_address(side->net, a->addr, DFCCL_NET_ADDR_MAX, &len);
        a->addr_len = (uint32_t)len;
    }
}

/* A view of FIFO memory in the side, as the kernel addresses it. */
static void gpu_net_device_view(const gpu_net_side_t *side, const dfccl_fifo_t *host,
                                dfccl_fifo_t *dev)
{
    *dev = *host;
    dev->ctrl = (dfccl_fifo_ctrl_t *)(side->dev + ((char *)host->ctrl - side->host));
    dev->slots = side->dev + (host->slots - side->host);
    if (host->lens != NULL)
        dev->lens = (uint32_t *)(side->dev + ((char *)host->lens - side->host));
}

/* Channel c's link of connection x (sending, or receiving). Link ids
 * (net_side.h): the receiving side's block + its network index of the
 * connection x nchannels + c for the data; the sending side's block +
 * (GPU_CONN_NET_MAX + its index) x nchannels + c for the control. */
static dfccl_status_t gpu_net_link(dfccl_comm_t *comm, gpu_net_side_t *side, int sending, int k,
                                   unsigned c, const gpu_address_t *peer,
                                   dfccl_gpu_comm_dev_t *dev)
{
    const dfccl_config_t *cfg = &comm->context->config;
    gpu_net_conn_t *x = sending ? &side->send[k] : &side->recv[k];
    unsigned nch = side->nchannels;
    char *mem = side->host + x->at + c * (sending ? side->send_stride : side->recv_stride);
    dfccl_net_link_params_t p;
    dfccl_fifo_t view;
    dfccl_board_t *mirror;   /* the peer's board as it tells it: the kernel reads none */
    dfccl_status_t status;

    if (peer->addr_len == 0 || x->peer_index < 0) {
        dfccl_error("comm %#llx: rank %d has no network address for rank %d on host %s",
                    (unsigned long long)comm->key, comm->rank, x->peer, x->host);
        return DFCCL_ERR_SYSTEM;
    }
    memset(&p, 0, sizeof(p));
    memset(&view, 0, sizeof(view));
    p.addr = peer->addr;
    p.addr_len = peer->addr_len;
    p.host = x->host;
    p.peer = x->peer;
    if (sending) {
        p.id_in = side->link_ids + (GPU_CONN_NET_MAX + k) * nch + c;
        p.id_out = peer->link_ids + (uint32_t)x->peer_index * nch + c;
    } else {
        p.id_in = side->link_ids + k * nch + c;
        p.id_out = peer->link_ids + (GPU_CONN_NET_MAX + (uint32_t)x->peer_index) * nch + c;
    }
    p.slot_bytes = cfg->gpu_slot_bytes;
    p.nslots = cfg->gpu_fifo_slots;
    p.sends = sending;
    p.receives = !sending;
    p.broken = &side->broken;
    p.board = &side->board;
    p.released = &x->released[c];
    x->released[c] = 0;
    status = dfccl_net_link_open_at(side->net, &p, sending ? mem : NULL, sending ? NULL : mem,
                                    sending ? &view : NULL, sending ? NULL : &view, &mirror,
                                    &x->link[c]);
    if (status != DFCCL_OK) {
        x->released[c] = 1;
        return status;
    }
    x->mirror[c] = mirror;
    gpu_net_device_view(side, &view, &gpu_comm_conns(dev, sending, c)[x->index]);
    return DFCCL_OK;
}

dfccl_status_t gpu_net_connect(dfccl_comm_t *comm, const void *addresses,
                               dfccl_gpu_comm_dev_t *dev)
{
    const gpu_address_t *all = addresses;
    gpu_net_side_t *side = gpu_comm_of(comm)->net;
    dfccl_status_t status = DFCCL_OK;

    for (int r = 0; r < comm->size; r++)
        if (all[r].status != DFCCL_OK) return (dfccl_status_t)all[r].status;
    if (side == NULL) return DFCCL_OK;
    for (unsigned c = 0; c < side->nchannels && status == DFCCL_OK; c++) {
        for (int k = 0; k < side->nrecv && status == DFCCL_OK; k++)
            if (c < side->recv[k].nchannels)
                status = gpu_net_link(comm, side, 0, k, c, &all[side->recv[k].peer], dev);
        for (int k = 0; k < side->nsend && status == DFCCL_OK; k++)
            if (c < side->send[k].nchannels)
                status = gpu_net_link(comm, side, 1, k, c, &all[side->send[k].peer], dev);
    }
    return status;
}

int gpu_net_side_failed(const gpu_net_side_t *side, char *why, size_t len)
{
    char told[DFCCL_BOARD_WHY];

    for (int i = 0; i < side->nrecv + side->nsend; i++) {
        const gpu_net_conn_t *x = gpu_net_conn_at(side, i);
        for (unsigned c = 0; c < side->nchannels; c++) {
            if (x->link[c] == NULL) continue;
            if (dfccl_net_link_failed(x->link[c], why, len)) return 1;
            if (x->mirror[c] != NULL &&
                dfccl_board_broken(x->mirror[c], NULL, told, sizeof(told)) != 0) {
                snprintf(why, len, "rank %d on host %s failed: %s", x->peer, x->host, told);
                return 1;
            }
        }
    }
    return 0;
}

void gpu_net_side_break(gpu_net_side_t *side, int rank, const char *why)
{
    char told[DFCCL_BOARD_WHY];

    snprintf(told, sizeof(told), "rank %d: %.*s", rank, (int)sizeof(told) - 16, why);
    dfccl_board_break(&side->board, 0, DFCCL_ERR_PEER_FAILED, told);
    __atomic_store_n(&side->broken, 1, __ATOMIC_RELEASE);
}

void gpu_net_side_post_idents(gpu_net_side_t *side, const dfccl_board_t *board, uint64_t *posted)
{
    uint64_t end = __atomic_load_n(&board->posted, __ATOMIC_ACQUIRE);
    dfccl_ident_t id;

    /* what the board no longer holds, the peers skip (ident_check.c) */
    if (end > *posted + DFCCL_BOARD_IDENTS) *posted = end - DFCCL_BOARD_IDENTS;
    for (; *posted < end; ++*posted) {
        if (dfccl_board_ident(board, *posted, &id) != 1) continue;
        for (int i = 0; i < side->nrecv + side->nsend; i++) {
            gpu_net_conn_t *x = gpu_net_conn_at(side, i);
            if (x->link[0] != NULL) dfccl_net_link_post_ident(side->net, x->link[0], *posted, &id);
        }
    }
}

int gpu_net_side_boards(const gpu_net_side_t *side, const dfccl_board_t **boards, int *ranks,
                        int max)
{
    int n = 0;

    for (int i = 0; i < side->nrecv + side->nsend; i++) {
        const gpu_net_conn_t *x = gpu_net_conn_at(side, i);
        int seen = 0;
        for (int k = 0; k < n; k++) seen |= ranks[k] == x->peer;
        if (seen || x->mirror[0] == NULL || n == max) continue;
        boards[n] = x->mirror[0];
        ranks[n++] = x->peer;
    }
    return n;
}

void gpu_net_close(dfccl_gpu_t *g, dfccl_gpu_comm_t *gc)
{
    gpu_net_side_t *side = gc->net;

    if (side == NULL) return;
    gc->net = NULL;
    for (int i = 0; i < side->nrecv + side->nsend; i++) {
        gpu_net_conn_t *x = gpu_net_conn_at(side, i);
        for (unsigned c = 0; c < side->nchannels; c++)
            if (x->link[c] != NULL) dfccl_net_link_close(side->net, x->link[c]);
    }
    pthread_mutex_lock(&g->dead.lock);
    side->retired_next = g->net.retired;
    __atomic_store_n(&g->net.retired, side, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g->dead.lock);
}

int gpu_net_pump(dfccl_gpu_t *g)
{
    dfccl_net_t *net;

    if (__atomic_load_n(&g->net.sides, __ATOMIC_ACQUIRE) == 0) return 0;
    net = __atomic_load_n(&g->fixed.ctx->net, __ATOMIC_ACQUIRE);
    /* A kernel that left while its collectives waited for another node
     * comes back as soon as the network moved something (a slot arrived,
     * or a send ended and freed one), not after the relaunch backoff,
     * which a slow link would otherwise add to every wait. Only while it
     * is out: a flag set while it runs would cut its next backoff short. */
    if (dfccl_net_progress(net) && !g->proxy.launched)
        __atomic_store_n(&g->proxy.relaunch_now, 1, __ATOMIC_RELEASE);
    return dfccl_net_busy(net);
}

static int gpu_net_released(const gpu_net_side_t *side)
{
    for (int i = 0; i < side->nrecv + side->nsend; i++) {
        const gpu_net_conn_t *x = gpu_net_conn_at(side, i);
        for (unsigned c = 0; c < DFCCL_GPU_MAX_CHANNELS; c++)
            if (!__atomic_load_n(&x->released[c], __ATOMIC_ACQUIRE)) return 0;
    }
    return 1;
}

void gpu_net_reap(dfccl_gpu_t *g)
{
    gpu_net_side_t *list, *keep = NULL;

    if (__atomic_load_n(&g->net.retired, __ATOMIC_ACQUIRE) == NULL) return;
    pthread_mutex_lock(&g->dead.lock);
    list = g->net.retired;
    g->net.retired = NULL;
    pthread_mutex_unlock(&g->dead.lock);
    while (list != NULL) {
        gpu_net_side_t *side = list;
        list = side->retired_next;
        if (!gpu_net_released(side)) {
            side->retired_next = keep;
            keep = side;
            continue;
        }
        cudaFreeHost(side->host);
        free(side);
        __atomic_sub_fetch(&g->net.sides, 1, __ATOMIC_ACQ_REL);
    }
    if (keep == NULL) return;
    pthread_mutex_lock(&g->dead.lock);
    for (gpu_net_side_t *last = keep;; last = last->retired_next)
        if (last->retired_next == NULL) {
            last->retired_next = g->net.retired;
            break;
        }
    __atomic_store_n(&g->net.retired, keep, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g->dead.lock);
}

void gpu_net_fini(dfccl_gpu_t *g)
{
    uint64_t until = dfccl_now_ns() + GPU_NET_FINI_NS;

    for (;;) {
        gpu_net_pump(g);
        gpu_net_reap(g);
        if (__atomic_load_n(&g->net.retired, __ATOMIC_ACQUIRE) == NULL || dfccl_now_ns() > until)
            break;
        sched_yield();
    }
    if (__atomic_load_n(&g->net.retired, __ATOMIC_ACQUIRE) != NULL)
        dfccl_info("GPU side: links to other nodes still hold their host FIFOs at the end (a peer"
                   " that never took our sends); that memory stays allocated");
}
