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

typedef struct gpu_net_side {
    struct gpu_net_side *retired_next;   /* g->net.retired */
    dfccl_net_t      *net;
    char             *host;           /* pinned, mapped: every FIFO of the side */
    char             *dev;            /* the same memory as the kernel addresses it */
    size_t            bytes;
    size_t            recv_stride;    /* per channel: receive FIFOs first, */
    size_t            send_stride;    /* then the send FIFOs from send_at */
    size_t            send_at;
    unsigned          nchannels;
    int               prev, next;     /* the ring neighbours on other nodes, else -1 */
    uint32_t          link_ids;       /* our block: 2 x nchannels */
    dfccl_net_link_t *recv_link[DFCCL_GPU_MAX_CHANNELS];
    dfccl_net_link_t *send_link[DFCCL_GPU_MAX_CHANNELS];
    /* per link (receive c, then send nchannels + c): 1 once it uses our
     * memory no more (net.h), 1 too where no link was opened */
    int               released[2 * DFCCL_GPU_MAX_CHANNELS];
    /* What a link reads to tell its peer why our communicator broke: set
     * by the watch (peer_watch.c) when a link or a peer failed, so the
     * ranks down the ring on other nodes learn it from their links. The
     * kernel keeps no board: a collective failing on its own (the
     * watchdog) tells nobody. */
    int               broken;
    dfccl_board_t     board;
    /* per link as released[]: the peer's board as its messages tell it
     * (why its communicator broke) */
    dfccl_board_t    *mirror[2 * DFCCL_GPU_MAX_CHANNELS];
    char              prev_host[DFCCL_NET_HOST_MAX];
    char              next_host[DFCCL_NET_HOST_MAX];
} gpu_net_side_t;

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

void gpu_net_nodes(dfccl_comm_t *comm, const gpu_hello_t *all)
{
    dfccl_gpu_comm_t *gc = gpu_comm_of(comm);
    /* begin made room for the labels and the groups' ranks: this step
     * cannot fail, as every rank must come to the same answer */
    uint64_t *label = gc->setup_scratch;
    int *k = (int *)(label + comm->size);

    for (int r = 0; r < comm->size; r++) label[r] = all[r].node_label;
    dfccl_node_groups(label, comm->size, comm->context->config.node_split, gc->node, k);
    free(gc->setup_scratch);
    gc->setup_scratch = NULL;
    gpu_conn_plan_make(comm->size, comm->rank, gc->node, &gc->conn);
}

dfccl_status_t gpu_net_begin(dfccl_comm_t *comm, dfccl_gpu_t *g, const gpu_hello_t *all)
{
    const dfccl_config_t *cfg = &comm->context->config;
    dfccl_gpu_comm_t *gc = gpu_comm_of(comm);
    int me = comm->rank, prev = gc->conn.ring_prev, next = gc->conn.ring_next, previous;
    gpu_net_side_t *side;
    dfccl_status_t status;
    cudaError_t e;
    void *dev = NULL;
    char why[160];

    if (gc->conn.net_prev < 0 && gc->conn.net_next < 0) return DFCCL_OK;
    if (!dfccl_net_available(why, sizeof(why))) {
        dfccl_info("comm %#llx: rank %d's ring neighbours include a rank on another node, which"
                   " the GPU side reaches over the network transport: %s",
                   (unsigned long long)comm->key, me, why);
        return DFCCL_ERR_UNSUPPORTED;
    }
    side = calloc(1, sizeof(*side));
    if (side == NULL) return DFCCL_ERR_NO_MEMORY;
    side->nchannels = gc->nchannels;
    side->prev = gc->conn.net_prev;
    side->next = gc->conn.net_next;
    if (side->prev >= 0)
        side->recv_stride =
            gpu_net_round(dfccl_net_fifo_bytes(cfg->gpu_slot_bytes, cfg->gpu_fifo_slots, 0));
    if (side->next >= 0)
        side->send_stride =
            gpu_net_round(dfccl_net_fifo_bytes(cfg->gpu_slot_bytes, cfg->gpu_fifo_slots, 1));
    side->send_at = side->nchannels * side->recv_stride;
    side->bytes = side->send_at + side->nchannels * side->send_stride;
    for (unsigned i = 0; i < 2 * DFCCL_GPU_MAX_CHANNELS; i++) side->released[i] = 1;
    dfccl_board_init(&side->board);
    snprintf(side->prev_host, sizeof(side->prev_host), "%.*s", DFCCL_NET_HOST_MAX - 1,
             all[prev].host);
    snprintf(side->next_host, sizeof(side->next_host), "%.*s", DFCCL_NET_HOST_MAX - 1,
             all[next].host);
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
    side->link_ids = dfccl_net_link_ids(side->net, 2 * side->nchannels);
    __atomic_add_fetch(&g->net.sides, 1, __ATOMIC_ACQ_REL);
    gc->net = side;
    dfccl_debug("comm %#llx: rank %d reaches %s%s%s over the network, %u channels, %zu bytes of"
                " mapped host memory", (unsigned long long)comm->key, me,
                side->prev >= 0 ? "its previous rank" : "",
                side->prev >= 0 && side->next >= 0 ? " and " : "",
                side->next >= 0 ? "its next rank" : "", side->nchannels, side->bytes);
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

/* Channel c's link to the next rank (sending) or from the previous one. */
static dfccl_status_t gpu_net_link(dfccl_comm_t *comm, gpu_net_side_t *side, unsigned c,
                                   int sending, const gpu_address_t *peer,
                                   dfccl_gpu_comm_dev_t *dev)
{
    const dfccl_config_t *cfg = &comm->context->config;
    int rank = sending ? side->next : side->prev;
    int *released = &side->released[sending ? side->nchannels + c : c];
    char *mem = sending ? side->host + side->send_at + c * side->send_stride
                        : side->host + c * side->recv_stride;
    dfccl_net_link_params_t p;
    dfccl_fifo_t view;
    dfccl_board_t *mirror;   /* the peer's board as it tells it: the kernel reads none */
    dfccl_status_t status;

    if (peer->addr_len == 0) {
        dfccl_error("comm %#llx: rank %d has no network address for rank %d on host %s",
                    (unsigned long long)comm->key, comm->rank, rank,
                    sending ? side->next_host : side->prev_host);
        return DFCCL_ERR_SYSTEM;
    }
    memset(&p, 0, sizeof(p));
    memset(&view, 0, sizeof(view));
    p.addr = peer->addr;
    p.addr_len = peer->addr_len;
    p.host = sending ? side->next_host : side->prev_host;
    p.peer = rank;
    /* the receiving side's block: data at + c, control to the sender at
     * + nchannels + c (net_side.h) */
    p.id_in = side->link_ids + (sending ? side->nchannels : 0) + c;
    p.id_out = peer->link_ids + (sending ? 0 : side->nchannels) + c;
    p.slot_bytes = cfg->gpu_slot_bytes;
    p.nslots = cfg->gpu_fifo_slots;
    p.sends = sending;
    p.receives = !sending;
    p.broken = &side->broken;
    p.board = &side->board;
    p.released = released;
    *released = 0;
    status = dfccl_net_link_open_at(side->net, &p, sending ? mem : NULL, sending ? NULL : mem,
                                    sending ? &view : NULL, sending ? NULL : &view, &mirror,
                                    sending ? &side->send_link[c] : &side->recv_link[c]);
    if (status != DFCCL_OK) {
        *released = 1;
        return status;
    }
    side->mirror[sending ? side->nchannels + c : c] = mirror;
    gpu_net_device_view(side, &view, sending ? &dev->send_fifo[c] : &dev->recv_fifo[c]);
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
        if (side->prev >= 0) status = gpu_net_link(comm, side, c, 0, &all[side->prev], dev);
        if (status == DFCCL_OK && side->next >= 0)
            status = gpu_net_link(comm, side, c, 1, &all[side->next], dev);
    }
    return status;
}

int gpu_net_side_failed(const gpu_net_side_t *side, char *why, size_t len)
{
    char told[DFCCL_BOARD_WHY];

    for (unsigned i = 0; i < 2 * side->nchannels; i++) {
        int sending = i >= side->nchannels;
        const dfccl_net_link_t *link = sending ? side->send_link[i - side->nchannels]
                                               : side->recv_link[i];
        if (link == NULL) continue;
        if (dfccl_net_link_failed(link, why, len)) return 1;
        if (side->mirror[i] != NULL &&
            dfccl_board_broken(side->mirror[i], NULL, told, sizeof(told)) != 0) {
            snprintf(why, len, "rank %d on host %s failed: %s", sending ? side->next : side->prev,
                     sending ? side->next_host : side->prev_host, told);
            return 1;
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

void gpu_net_close(dfccl_gpu_t *g, dfccl_gpu_comm_t *gc)
{
    gpu_net_side_t *side = gc->net;

    if (side == NULL) return;
    gc->net = NULL;
    for (unsigned c = 0; c < side->nchannels; c++) {
        if (side->recv_link[c] != NULL) dfccl_net_link_close(side->net, side->recv_link[c]);
        if (side->send_link[c] != NULL) dfccl_net_link_close(side->net, side->send_link[c]);
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
    for (unsigned i = 0; i < 2 * side->nchannels; i++)
        if (!__atomic_load_n(&side->released[i], __ATOMIC_ACQUIRE)) return 0;
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
