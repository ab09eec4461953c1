/*
 * comm_host.c - the host backend's communicator set-up: where the ranks
 * are, the connections the communicator's algorithms use, shared-memory
 * FIFOs to peers on this node and network links to the others.
 *
 * Three exchanges (comm.c runs them):
 *   hellos     each rank's node (host name and boot id, or the forced split
 *              of node_split), pid and FIFO geometry; every rank then knows
 *              the topology and every rank's connections, and creates its
 *              segment: its board, then one incoming FIFO per peer on this
 *              node that sends to it (in rank order)
 *   addresses  each rank's segment name and, when the communicator spans
 *              nodes, its UCX worker address and link ids (and under the
 *              RMA protocol its region's address and key); each rank maps
 *              its node peers' segments (their board, and the FIFO it sends
 *              into) and opens a link to every other-node peer it sends to
 *              or receives from
 *   outcomes   as for every backend
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "engine/backend_ops.h"
#include "backends/host/host_comm.h"
#include "backends/host/host.h"
#include "transport/locality.h"
#include "util/log.h"

typedef struct host_hello {
    int32_t  status;
    int32_t  pid;
    uint32_t nslots;
    int32_t  numa;          /* NUMA node it runs on (hwloc), -1 unknown */
    uint64_t slot_bytes;
    uint64_t oneshot_bytes; /* knob oneshot_max_bytes: lays out the segment */
    uint64_t node_label;
    uint64_t plans;         /* digest of the plan files it offers (0: none) */
    char     host[DFCCL_NET_HOST_MAX];
} host_hello_t;

typedef struct host_address {
    int32_t  status;
    uint32_t link_ids;      /* first of size ids: peer r tags its messages to us id + r */
    uint32_t addr_len;      /* 0: no network side here */
    uint32_t key_len;       /* RMA: our region's packed key (0: none) */
    uint64_t region;        /* RMA: its address */
    char     name[DFCCL_SHM_NAME_MAX];
    char     addr[];        /* when the comm spans nodes: the worker address in
                               DFCCL_NET_ADDR_MAX bytes, then (RMA) the key in
                               DFCCL_NET_KEY_MAX */
} host_address_t;

static size_t host_fifo_bytes(const dfccl_config_t *cfg)
{
    return dfccl_fifo_bytes(cfg->slot_bytes, cfg->fifo_slots);
}

static void host_fifo_init(dfccl_fifo_t *fifo, void *base, const dfccl_config_t *cfg, int peer)
{
    fifo->ctrl       = (dfccl_fifo_ctrl_t *)base;
    fifo->slots      = (char *)base + sizeof(dfccl_fifo_ctrl_t);
    fifo->slot_bytes = cfg->slot_bytes;
    fifo->nslots     = cfg->fifo_slots;
    fifo->peer       = peer;
    fifo->count      = 0;
    fifo->lens       = NULL;
}

/* Where a rank's segment holds what: the board, the one-shot's slots
 * (oneshot.h; none unless the communicator lies within one node), then
 * the incoming FIFOs. The same on every rank. */
static size_t host_oneshot_offset(void)
{
    return DFCCL_BOARD_BYTES;
}

static size_t host_fifos_offset(const dfccl_comm_t *comm)
{
    return DFCCL_BOARD_BYTES + dfccl_oneshot_area_bytes(&comm->context->config, comm->size,
                                                        dfccl_comm_host(comm)->topo.nnodes);
}

static size_t host_hello_bytes(const dfccl_comm_t *comm)
{
    (void)comm;
    return sizeof(host_hello_t);
}

static dfccl_status_t host_begin(dfccl_comm_t *comm, void *hello_out)
{
    host_hello_t hello;
    dfccl_host_t *h = calloc(1, sizeof(*h));

    memset(&hello, 0, sizeof(hello));
    comm->board = &comm->board_local;
    dfccl_board_init(comm->board);
    comm->backend = h;
    hello.status = h == NULL ? DFCCL_ERR_NO_MEMORY
                             : dfccl_plan_cache_create(h, comm->context->config.plan_cache);
    hello.pid = (int32_t)getpid();
    hello.numa = (int32_t)dfccl_locality_numa();
    hello.nslots = comm->context->config.fifo_slots;
    hello.slot_bytes = comm->context->config.slot_bytes;
    hello.oneshot_bytes = comm->context->config.oneshot_max_bytes;
    hello.node_label = dfccl_node_label(hello.host, sizeof(hello.host));
    if (comm->node_label != 0) hello.node_label = comm->node_label;   /* the caller knows best */
    hello.plans = dfccl_plan_set_digest(&comm->context->plans, comm->size);
    memcpy(hello_out, &hello, sizeof(hello));
    return (dfccl_status_t)hello.status;
}

/* The plan files that fit the communicator, when every rank offers the
 * same ones: otherwise ranks could choose differently for one call. */
static dfccl_status_t host_take_plans(dfccl_comm_t *comm, dfccl_host_t *h,
                                      const host_hello_t *all)
{
    const dfccl_plan_set_t *set = &comm->context->plans;
    dfccl_status_t status;

    for (int i = 0; i < comm->size; i++)
        if (all[i].plans != all[0].plans) {
            if (comm->rank == 0)
                dfccl_error("comm %#llx: rank %d offers other plan files (plan_dir) than rank 0:"
                            " the communicator uses the built-in algorithms",
                            (unsigned long long)comm->key, i);
            return DFCCL_OK;
        }
    status = dfccl_plan_set_select(set, comm->size, h->node, &h->plans, &h->nplans);
    for (int i = 0; status == DFCCL_OK && i < h->nplans; i++) {
        uint32_t steps = dfccl_plan_file_max_steps(h->plans[i]);
        if (steps > h->plan_steps) h->plan_steps = steps;
        if (dfccl_plan_file_max_more(h->plans[i]) > h->plan_more)
            h->plan_more = dfccl_plan_file_max_more(h->plans[i]);
        if (dfccl_plan_file_max_deps(h->plans[i]) > h->plan_deps)
            h->plan_deps = dfccl_plan_file_max_deps(h->plans[i]);
        if (comm->rank == 0)
            dfccl_info("comm %#llx: plan file %s (%s) serves it", (unsigned long long)comm->key,
                       dfccl_plan_file_name(h->plans[i]),
                       dfccl_coll_type_name(dfccl_plan_file_type(h->plans[i])));
    }
    return status;
}

static dfccl_status_t host_connect(dfccl_comm_t *comm, const void *hellos)
{
    const host_hello_t *all = hellos, *mine = &all[comm->rank];
    dfccl_host_t *h = dfccl_comm_host(comm);
    dfccl_status_t status;

    for (int i = 0; i < comm->size; i++) {
        if (all[i].status != DFCCL_OK) return (dfccl_status_t)all[i].status;
        if (all[i].nslots != mine->nslots || all[i].slot_bytes != mine->slot_bytes) {
            if (comm->rank == 0)
                dfccl_error("comm %#llx: rank %d uses FIFOs of %u x %llu bytes, rank 0 %u x %llu:"
                            " FIFO settings must be equal on all ranks",
                            (unsigned long long)comm->key, i, all[i].nslots,
                            (unsigned long long)all[i].slot_bytes, mine->nslots,
                            (unsigned long long)mine->slot_bytes);
            return DFCCL_ERR_INVALID_PARAM;
        }
        if (all[i].oneshot_bytes != mine->oneshot_bytes) {
            if (comm->rank == 0)
                dfccl_error("comm %#llx: rank %d takes the one-shot up to %llu bytes, rank 0 up"
                            " to %llu: oneshot_max_bytes must be equal on all ranks",
                            (unsigned long long)comm->key, i,
                            (unsigned long long)all[i].oneshot_bytes,
                            (unsigned long long)mine->oneshot_bytes);
            return DFCCL_ERR_INVALID_PARAM;
        }
    }
    status = dfccl_host_topology(comm, h);
    if (status != DFCCL_OK) return status;
    {
        uint64_t *labels = malloc(sizeof(uint64_t) * (size_t)comm->size);
        if (labels == NULL) return DFCCL_ERR_NO_MEMORY;
        for (int i = 0; i < comm->size; i++) labels[i] = all[i].node_label;
        dfccl_node_groups(labels, comm->size, comm->context->config.node_split, h->node, h->local);
        free(labels);
    }
    for (int i = 0; i < comm->size; i++) h->numa[i] = all[i].numa;
    status = host_take_plans(comm, h, all);
    if (status != DFCCL_OK) return status;
    status = dfccl_host_connections(comm, h);
    if (status != DFCCL_OK) return status;
    h->hosts = malloc((size_t)comm->size * DFCCL_NET_HOST_MAX);
    h->pids = malloc(sizeof(int) * (size_t)comm->size);
    if (h->hosts == NULL || h->pids == NULL) return DFCCL_ERR_NO_MEMORY;
    for (int i = 0; i < comm->size; i++) {
        memcpy(h->hosts + (size_t)i * DFCCL_NET_HOST_MAX, all[i].host, DFCCL_NET_HOST_MAX);
        h->pids[i] = all[i].pid;
    }
    if (comm->size == 1) {
        comm->peer_boards[0] = comm->board;   /* one rank: its own board alone */
        return DFCCL_OK;
    }
    status = dfccl_shm_create(&comm->recv_seg, host_fifos_offset(comm) +
                                               (size_t)h->nlocal_in * host_fifo_bytes(&comm->context->config));
    if (status != DFCCL_OK) return status;
    comm->board = (dfccl_board_t *)comm->recv_seg.addr;
    dfccl_board_init(comm->board);
    if (h->nremote > 0) status = dfccl_host_net_begin(comm, h);
    return status;
}

static size_t host_address_bytes(const dfccl_comm_t *comm)
{
    const dfccl_host_t *h = dfccl_comm_host(comm);
    int rma = comm->context->config.net_protocol == DFCCL_NET_RMA;

    if (comm->size == 1 || h == NULL || h->node == NULL) return 0;
    if (h->topo.nnodes == 1) return sizeof(host_address_t);
    return sizeof(host_address_t) + DFCCL_NET_ADDR_MAX + (rma ? DFCCL_NET_KEY_MAX : 0);
}

static void host_address(dfccl_comm_t *comm, dfccl_status_t status, void *out)
{
    host_address_t *a = out;
    dfccl_host_t *h = dfccl_comm_host(comm);

    a->status = (int32_t)status;
    memcpy(a->name, comm->recv_seg.name, sizeof(a->name));
    a->addr_len = 0;
    a->key_len = 0;
    a->region = 0;
    a->link_ids = h->link_ids;
    if (status == DFCCL_OK && h->net != NULL) {
        size_t len = 0;
        a->status = (int32_t)dfccl_net_address(h->net, a->addr, DFCCL_NET_ADDR_MAX, &len);
        a->addr_len = (uint32_t)len;
    }
    if (a->status == DFCCL_OK && h->region != NULL) {
        size_t len = 0;
        a->status = (int32_t)dfccl_net_region_key(h->net, h->region, a->addr + DFCCL_NET_ADDR_MAX,
                                                  DFCCL_NET_KEY_MAX, &len);
        a->key_len = (uint32_t)len;
        a->region = (uint64_t)(uintptr_t)h->region_base;
    }
}

/* Maps a node peer's segment: its board, and the FIFO we send into. */
static dfccl_status_t host_map_peer(dfccl_comm_t *comm, dfccl_host_t *h, int r, const char *name)
{
    const dfccl_config_t *cfg = &comm->context->config;
    int slot = h->send_conn[r] >= 0 ? dfccl_host_fifo_index(h, r, comm->rank) : -1;
    size_t bytes = host_fifos_offset(comm) + (slot >= 0 ? (size_t)(slot + 1) * host_fifo_bytes(cfg) : 0);
    dfccl_status_t status = dfccl_shm_attach(&h->peer_segs[r], name, bytes);

    if (status != DFCCL_OK) return status;
    comm->peer_boards[r] = (dfccl_board_t *)h->peer_segs[r].addr;
    if (slot >= 0)
        host_fifo_init(&h->send_fifos[h->send_conn[r]],
                       (char *)h->peer_segs[r].addr + host_fifos_offset(comm) +
                           (size_t)slot * host_fifo_bytes(cfg), cfg, r);
    return DFCCL_OK;
}

/* The one-shot's slots, ours and every node peer's, in the mapped segments. */
static dfccl_status_t host_attach_oneshot(dfccl_comm_t *comm, dfccl_host_t *h)
{
    char **slots;

    if (dfccl_oneshot_area_bytes(&comm->context->config, comm->size, h->topo.nnodes) == 0)
        return DFCCL_OK;
    if ((slots = malloc(sizeof(char *) * (size_t)comm->size)) == NULL) return DFCCL_ERR_NO_MEMORY;
    for (int r = 0; r < comm->size; r++)
        slots[r] = (char *)(r == comm->rank ? comm->recv_seg.addr : h->peer_segs[r].addr) +
                   host_oneshot_offset();
    dfccl_oneshot_attach(h, &comm->context->config, slots);
    return DFCCL_OK;
}

static dfccl_status_t host_connect_addresses(dfccl_comm_t *comm, const void *addresses)
{
    dfccl_host_t *h = dfccl_comm_host(comm);
    size_t bytes = host_address_bytes(comm);
    const dfccl_config_t *cfg = &comm->context->config;
    dfccl_status_t status = DFCCL_OK;
    int k = 0;

    for (int r = 0; r < comm->size; r++) {
        const host_address_t *a = (const host_address_t *)((const char *)addresses + (size_t)r * bytes);
        if (a->status != DFCCL_OK) return (dfccl_status_t)a->status;
    }
    /* our incoming node FIFOs, in the order the senders computed */
    for (int i = 0; i < h->nrecv; i++) {
        int r = h->recv_peers[i];
        if (h->node[r] != h->node[comm->rank]) continue;
        host_fifo_init(&h->recv_fifos[i], (char *)comm->recv_seg.addr + host_fifos_offset(comm) +
                                              (size_t)k++ * host_fifo_bytes(cfg), cfg, r);
    }
    comm->peer_boards[comm->rank] = comm->board;
    for (int r = 0; r < comm->size && status == DFCCL_OK; r++) {
        const host_address_t *a = (const host_address_t *)((const char *)addresses + (size_t)r * bytes);
        if (r == comm->rank) continue;
        if (h->node[r] == h->node[comm->rank])
            status = host_map_peer(comm, h, r, a->name);
        else if (h->send_conn[r] >= 0 || h->recv_conn[r] >= 0) {
            dfccl_host_net_peer_t np = { a->addr, a->addr_len, a->link_ids, a->region,
                                         a->addr + DFCCL_NET_ADDR_MAX, a->key_len };
            status = dfccl_host_net_link(comm, h, r, &np);
        }
    }
    if (status == DFCCL_OK) status = host_attach_oneshot(comm, h);
    return status;
}

static dfccl_status_t host_finish(dfccl_comm_t *comm, dfccl_status_t agreed)
{
    /* either way nobody maps the names any more: what is mapped stays
     * until the communicator is released */
    dfccl_shm_unlink(&comm->recv_seg);
    return agreed;
}

static void host_release(dfccl_comm_t *comm)
{
    dfccl_host_t *h = dfccl_comm_host(comm);

    if (h != NULL) {
        dfccl_host_net_release(comm, h);
        if (h->peer_segs != NULL)
            for (int i = 0; i < comm->size; i++) dfccl_shm_release(&h->peer_segs[i]);
        dfccl_host_topology_free(h);
        dfccl_plan_cache_free(h);
        dfccl_oneshot_free(h);
        free(h);
    }
    comm->backend = NULL;
    free(comm->peer_boards);
    comm->peer_boards = NULL;
    dfccl_shm_release(&comm->recv_seg);
}

const dfccl_backend_ops_t dfccl_host_backend = {
    .name          = "host",
    .memory        = DFCCL_BUFFERS_HOST,
    .context_open  = dfccl_host_context_open,
    .context_close = dfccl_host_context_close,
    .hello_bytes   = host_hello_bytes,
    .begin         = host_begin,
    .connect       = host_connect,
    .address_bytes = host_address_bytes,
    .address       = host_address,
    .connect_addresses = host_connect_addresses,
    .finish        = host_finish,
    .release       = host_release,
    .post          = dfccl_host_post,
    .run           = dfccl_host_run,
    .prepare       = dfccl_host_prepare,
    .start         = dfccl_host_start,
    .outside       = dfccl_host_outside,
};
