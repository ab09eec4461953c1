/*
 * net_side.c - a GPU communicator's network side (net_side.h): the ranks'
 * nodes, the FIFOs to and from its peers on other nodes, their links, and
 * the proxy thread's share of the work: pumping the links, and freeing a
 * closed side once its links let its memory go.
 *
 * The memory, laid out alike on every rank (gpu_conn_plan_net_at), so that
 * each end of a link knows where the other's FIFO is:
 *   - tagged links: the FIFOs' counters (and the bytes per sent slot) in
 *     pinned, mapped host memory, where the pump reads them; their slots
 *     apart, in device memory where every rank's UCX takes CUDA memory
 *     (gpu_net_memory auto), else in pinned, mapped host memory;
 *   - RMA links (net_protocol rma): whole FIFOs and the credit words in
 *     pinned, mapped host memory registered with UCX, whose address and
 *     key travel in the addresses exchange; peers put into it.
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

#include "backends/gpu/net_side_state.h"

/* A rank's part of the addresses exchange; RMA: then its region's key,
 * key_len bytes of DFCCL_NET_KEY_MAX. */
typedef struct gpu_address {
    int32_t  status;
    uint32_t link_ids;      /* its block (0: no network side there) */
    uint32_t addr_len;      /* 0: no network side there */
    uint32_t cuda;          /* tagged: its UCX takes CUDA memory */
    uint64_t region;        /* RMA: its side's memory, as its UCX registered it */
    uint32_t key_len;
    uint32_t pad;
    char     addr[DFCCL_NET_ADDR_MAX];
} gpu_address_t;

static int gpu_net_rma(const dfccl_comm_t *comm)
{
    return comm->context->config.net_protocol == DFCCL_NET_RMA;
}

/* Rank r's part of the exchange (each gpu_net_address_bytes long). */
static const gpu_address_t *gpu_net_address_of(const dfccl_comm_t *comm, const void *all, int r)
{
    return (const gpu_address_t *)((const char *)all + (size_t)r * gpu_net_address_bytes(comm));
}

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
                         const gpu_net_strides_t *st, const gpu_net_strides_t *slots,
                         const gpu_hello_t *all, gpu_net_conn_t *conns)
{
    const int *peers = sending ? plan->send_peer : plan->recv_peer;
    int n = 0, count = sending ? plan->nsend : plan->nrecv;
    int every = sending ? plan->nsend_all : plan->nrecv_all;

    for (int i = 0; i < count; i++) {
        gpu_conn_plan_t theirs;
        int p = peers[i];
        if (t->node[p] == t->node[me]) continue;
        gpu_conn_plan_make(t, p, gpu_conn_plan_wants(plan), plan->files, &theirs);
        conns[n].nchannels = i < every ? st->nchannels : 1;
        conns[n].at = gpu_conn_plan_net_at(plan, t, me, st, sending, p, &conns[n].credit);
        conns[n].slots_at = gpu_conn_plan_net_at(plan, t, me, slots, sending, p, NULL);
        /* where our link's other end is in the peer's memory (RMA) */
        conns[n].peer_at = gpu_conn_plan_net_at(&theirs, t, p, st, !sending, me,
                                                &conns[n].peer_credit);
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
    gpu_net_strides_t slots;

    if (!gc->conn.spans) return DFCCL_OK;
    side = calloc(1, sizeof(*side));
    if (side == NULL) return DFCCL_ERR_NO_MEMORY;
    /* RMA: whole FIFOs (peers put their slots into ours) and a credit word
     * per sending channel; tagged: the counters, the slots apart */
    side->rma = gpu_net_rma(comm);
    side->st.nchannels = gc->nchannels;
    side->st.recv = gpu_net_round(
        dfccl_net_fifo_bytes(side->rma ? cfg->gpu_slot_bytes : 0, cfg->gpu_fifo_slots, 0));
    side->st.send = gpu_net_round(
        dfccl_net_fifo_bytes(side->rma ? cfg->gpu_slot_bytes : 0, cfg->gpu_fifo_slots, 1));
    side->st.credit = side->rma ? DFCCL_CACHELINE : 0;
    side->slots_stride = side->rma ? 0 : gpu_net_round(cfg->gpu_slot_bytes * cfg->gpu_fifo_slots);
    slots = (gpu_net_strides_t){ gc->nchannels, side->slots_stride, side->slots_stride, 0 };
    side->nrecv = gpu_net_conns(&gc->topo, me, &gc->conn, 0, &side->st, &slots, all, side->recv);
    side->nsend = gpu_net_conns(&gc->topo, me, &gc->conn, 1, &side->st, &slots, all, side->send);
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
    side->bytes = gpu_conn_plan_net_at(&gc->conn, &gc->topo, me, &side->st, 0, -1, NULL);
    side->slots_bytes = gpu_conn_plan_net_at(&gc->conn, &gc->topo, me, &slots, 0, -1, NULL);
    side->g = g;
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
    /* zeroed before any peer learns where it is: RMA peers put into it */
    memset(side->host, 0, side->bytes);
    side->dev = dev;
    if (side->rma) {
        status = dfccl_net_region_open_at(side->net, side->host, side->bytes, &side->region);
        if (status != DFCCL_OK) {
            cudaFreeHost(side->host);
            free(side);
            return status;
        }
    }
    side->link_ids = dfccl_net_link_ids(side->net, 2 * GPU_CONN_NET_MAX * side->st.nchannels);
    __atomic_add_fetch(&g->net.sides, 1, __ATOMIC_ACQ_REL);
    gc->net = side;
    dfccl_debug("comm %#llx: rank %d reaches %d rank(s) and is reached by %d over the network,"
                " %u channels, %zu bytes of mapped host memory", (unsigned long long)comm->key,
                me, side->nsend, side->nrecv, side->st.nchannels, side->bytes);
    return DFCCL_OK;
}

size_t gpu_net_address_bytes(const dfccl_comm_t *comm)
{
    if (gpu_comm_of(comm) == NULL || !gpu_comm_of(comm)->conn.spans) return 0;
    return sizeof(gpu_address_t) + (gpu_net_rma(comm) ? DFCCL_NET_KEY_MAX : 0);
}

void gpu_net_address(dfccl_comm_t *comm, dfccl_status_t status, void *out)
{
    gpu_address_t *a = out;
    gpu_net_side_t *side = gpu_comm_of(comm)->net;

    memset(a, 0, sizeof(*a));
    a->status = (int32_t)status;
    if (status == DFCCL_OK && side != NULL) {
        size_t len = 0;
        a->link_ids = side->link_ids;
        a->cuda = (uint32_t)(!side->rma && dfccl_net_cuda_memory(side->net));
        a->status = (int32_t)dfccl_net_address(side->net, a->addr, DFCCL_NET_ADDR_MAX, &len);
        a->addr_len = (uint32_t)len;
        if (a->status == DFCCL_OK && side->region != NULL) {
            a->region = (uint64_t)(uintptr_t)side->host;
            a->status = (int32_t)dfccl_net_region_key(side->net, side->region, a + 1,
                                                      DFCCL_NET_KEY_MAX, &len);
            a->key_len = (uint32_t)len;
        }
    }
}

/* A view of FIFO memory in the side, as the kernel addresses it. */
static void gpu_net_device_view(const gpu_net_side_t *side, const dfccl_fifo_t *host,
                                dfccl_fifo_t *dev)
{
    *dev = *host;
    dev->ctrl = (dfccl_fifo_ctrl_t *)(side->dev + ((char *)host->ctrl - side->host));
    if (side->slots_host != NULL)
        dev->slots = side->slots_dev + (host->slots - side->slots_host);
    else
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
    unsigned nch = side->st.nchannels;
    char *mem = side->host + x->at + c * (sending ? side->st.send : side->st.recv);
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
    if (side->rma) {
        p.region = side->region;
        p.peer_key = peer + 1;
        p.peer_key_len = peer->key_len;
        if (sending) {
            p.credit_off = x->credit + c * side->st.credit;
            p.peer_fifo = peer->region + x->peer_at + c * side->st.recv;
        } else {
            p.peer_credit = peer->region + x->peer_credit + c * side->st.credit;
        }
    } else {
        char *slots = side->slots_host + x->slots_at + c * side->slots_stride;
        p.send_slots = sending ? slots : NULL;
        p.recv_slots = sending ? NULL : slots;
        p.slots_cuda = side->slots_device;
    }
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

/* Tagged: where the slots go, alike on every rank: device memory where the
 * knob allows and every rank with links to other nodes has a UCX that
 * takes CUDA memory. Rank 0 says what was chosen and why. */
static int gpu_net_slots_device(const dfccl_comm_t *comm, const void *addresses)
{
    const dfccl_config_t *cfg = &comm->context->config;
    int without = -1, sides = 0, device = 0;
    const char *why;

    for (int r = 0; r < comm->size; r++) {
        const gpu_address_t *a = gpu_net_address_of(comm, addresses, r);
        if (a->addr_len == 0) continue;
        sides++;
        if (!a->cuda && without < 0) without = r;
    }
    if (sides == 0) return 0;
    if (gpu_net_rma(comm))
        why = "RMA puts into its registered, pinned host memory (net_protocol rma)";
    else if (cfg->gpu_net_memory != 0)
        why = "their slots in pinned host memory (gpu_net_memory host)";
    else if (without >= 0)
        why = "their slots in pinned host memory: the UCX of rank %d does not take CUDA memory";
    else {
        why = "their slots in device memory, which UCX moves as CUDA memory";
        device = 1;
    }
    if (comm->rank == 0) {
        char line[200];
        snprintf(line, sizeof(line), why, without);
        dfccl_info("comm %#llx: GPU side's FIFOs to other nodes (%d ranks): %s",
                   (unsigned long long)comm->key, sides, line);
    }
    return device;
}

/* The net's progress guard while slots live in device memory: UCX copies
 * them in whichever thread progresses (the host engine's daemon, a caller
 * waiting), and its CUDA transports need a current context there. The
 * caller's device comes back afterwards. */
static int gpu_net_thread_enter(void *arg)
{
    static __thread int made_current;
    const dfccl_gpu_t *g = arg;
    int current = -1;

    cudaGetDevice(&current);
    /* a thread that never set a device reads device 0 without a context */
    if (current != g->fixed.device || !made_current) {
        cudaSetDevice(g->fixed.device);
        made_current = 1;
    }
    return current;
}

static void gpu_net_thread_leave(void *arg, int entered)
{
    gpu_device_leave(arg, entered);
}

/* Tagged: the slots of every FIFO, in device memory or pinned, mapped host
 * memory. */
static dfccl_status_t gpu_net_slots(dfccl_comm_t *comm, gpu_net_side_t *side, int device)
{
    int previous = gpu_device_enter(side->g);
    void *dev = NULL;
    cudaError_t e;

    side->slots_device = device;
    if (device) {
        e = cudaMalloc(&dev, side->slots_bytes);
        side->slots_host = dev;   /* one address space: UCX takes the device address */
    } else {
        e = cudaHostAlloc((void **)&side->slots_host, side->slots_bytes, cudaHostAllocMapped);
        if (e == cudaSuccess) e = cudaHostGetDevicePointer(&dev, side->slots_host, 0);
    }
    gpu_device_leave(side->g, previous);
    if (e != cudaSuccess) {
        dfccl_error("comm %#llx: rank %d cannot allocate %zu bytes of %s memory for the slots"
                    " of its FIFOs to other nodes: %s", (unsigned long long)comm->key, comm->rank,
                    side->slots_bytes, device ? "device" : "pinned host", gpu_err(e));
        if (!device && side->slots_host != NULL) cudaFreeHost(side->slots_host);
        side->slots_host = NULL;
        return DFCCL_ERR_SYSTEM;
    }
    side->slots_dev = dev;
    if (device && !__atomic_exchange_n(&side->g->net.guarded, 1, __ATOMIC_ACQ_REL))
        dfccl_net_guard_progress(side->net, gpu_net_thread_enter, gpu_net_thread_leave, side->g);
    return DFCCL_OK;
}

static void gpu_net_slots_free(gpu_net_side_t *side)
{
    if (side->slots_host == NULL) return;
    if (side->slots_device) cudaFree(side->slots_dev);
    else cudaFreeHost(side->slots_host);
    side->slots_host = side->slots_dev = NULL;
}

dfccl_status_t gpu_net_connect(dfccl_comm_t *comm, const void *addresses,
                               dfccl_gpu_comm_dev_t *dev)
{
    gpu_net_side_t *side = gpu_comm_of(comm)->net;
    dfccl_status_t status = DFCCL_OK;
    int device;

    for (int r = 0; r < comm->size; r++) {
        const gpu_address_t *a = gpu_net_address_of(comm, addresses, r);
        if (a->status != DFCCL_OK) return (dfccl_status_t)a->status;
    }
    device = gpu_net_slots_device(comm, addresses);
    if (side == NULL) return DFCCL_OK;
    if (!side->rma) status = gpu_net_slots(comm, side, device);
    for (unsigned c = 0; c < side->st.nchannels && status == DFCCL_OK; c++) {
        for (int k = 0; k < side->nrecv && status == DFCCL_OK; k++)
            if (c < side->recv[k].nchannels)
                status = gpu_net_link(comm, side, 0, k, c,
                                      gpu_net_address_of(comm, addresses, side->recv[k].peer), dev);
        for (int k = 0; k < side->nsend && status == DFCCL_OK; k++)
            if (c < side->send[k].nchannels)
                status = gpu_net_link(comm, side, 1, k, c,
                                      gpu_net_address_of(comm, addresses, side->send[k].peer), dev);
    }
    return status;
}

void gpu_net_close(dfccl_gpu_t *g, dfccl_gpu_comm_t *gc)
{
    gpu_net_side_t *side = gc->net;

    if (side == NULL) return;
    gc->net = NULL;
    for (int i = 0; i < side->nrecv + side->nsend; i++) {
        gpu_net_conn_t *x = gpu_net_conn_at(side, i);
        for (unsigned c = 0; c < side->st.nchannels; c++)
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
        /* unregistered before the memory goes (the links held the region) */
        if (side->region != NULL) dfccl_net_region_close(side->net, side->region);
        gpu_net_slots_free(side);
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
        dfccl_info("GPU side: links to other nodes still hold their FIFOs at the end (a peer"
                   " that never took our sends); that memory stays allocated");
    if (__atomic_exchange_n(&g->net.guarded, 0, __ATOMIC_ACQ_REL))   /* g goes after this */
        dfccl_net_guard_progress(__atomic_load_n(&g->fixed.ctx->net, __ATOMIC_ACQUIRE), NULL,
                                 NULL, NULL);
}
