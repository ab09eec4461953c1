/*
 * host_comm.h - a host communicator's topology and connections (the host
 * backend's part of dfccl_comm_t), shared by comm_host.c, topology.c,
 * links.c and the daemon.
 */
#ifndef DFCCL_HOST_COMM_H
#define DFCCL_HOST_COMM_H

#include "transport/net.h"
#include "backends/host/oneshot.h"
#include "core/plan.h"
#include "engine/plan_file.h"
#include "transport/shm.h"

struct dfccl_comm;

typedef struct dfccl_host {
    /* where ranks are (size entries each) */
    int             *node, *local, *order, *pos;
    int             *numa;         /* every rank's NUMA node, -1 unknown */
    dfccl_topo_t     topo;
    char            *hosts;        /* size x DFCCL_NET_HOST_MAX: every rank's host name */
    int             *pids;
    /* every rank's send peers: all_send[r * max_peers ...], all_nsend[r] */
    int             *all_send, *all_nsend, max_peers;
    /* this rank's connections: peers, and rank -> index (or -1) */
    int              nsend, nrecv;
    int             *send_peers, *recv_peers;
    int             *send_conn, *recv_conn;
    dfccl_fifo_t    *send_fifos, *recv_fifos;
    int              nlocal_in;    /* incoming FIFOs in our segment */
    int              nremote;      /* peers on other nodes we are connected to */
    dfccl_shm_t     *peer_segs;    /* node peers' segments, mapped (size entries) */
    /* the network side */
    dfccl_net_t     *net;
    uint32_t         link_ids;
    dfccl_net_link_t **links;      /* size entries; NULL: none */
    dfccl_net_region_t *region;    /* RMA protocol: what peers put into */
    char            *region_base;
    /* plan files that fit (the context owns them), and their longest program */
    const dfccl_plan_file_t **plans;
    int              nplans;
    uint32_t         plan_steps;
    uint32_t         plan_more, plan_deps;   /* their programs' lists, at most */
    struct dfccl_plan_cache *plan_cache;   /* recent calls' plans (plan_cache.c); NULL: off */
    dfccl_oneshot_t  oneshot;      /* small calls within one node (oneshot.c) */
} dfccl_host_t;

/* plan_cache.c: entries 0 leaves the cache off; freed with the communicator */
dfccl_status_t dfccl_plan_cache_create(dfccl_host_t *h, unsigned entries);
void dfccl_plan_cache_free(dfccl_host_t *h);

/* topology.c: allocates the per-rank arrays. */
dfccl_status_t dfccl_host_topology(struct dfccl_comm *comm, dfccl_host_t *h);
/* With h->node set: derives the topology and every connection. */
dfccl_status_t dfccl_host_connections(struct dfccl_comm *comm, dfccl_host_t *h);
/* 1 when rank from sends to rank to. */
int dfccl_host_sends_to(const dfccl_host_t *h, int from, int to);
/* The index of sender's FIFO among receiver's incoming node FIFOs. */
int dfccl_host_fifo_index(const dfccl_host_t *h, int receiver, int sender);
void dfccl_host_topology_free(dfccl_host_t *h);

/* links.c: the network side. */
dfccl_status_t dfccl_host_net_begin(struct dfccl_comm *comm, dfccl_host_t *h);
/* What the set-up tells of a peer's network side. */
typedef struct dfccl_host_net_peer {
    const void *addr;         /* worker address */
    size_t      addr_len;
    uint32_t    link_ids;     /* the first of its link ids */
    uint64_t    region;       /* RMA: its region's address */
    const void *key;          /* RMA: and packed key */
    size_t      key_len;
} dfccl_host_net_peer_t;

dfccl_status_t dfccl_host_net_link(struct dfccl_comm *comm, dfccl_host_t *h, int peer,
                                   const dfccl_host_net_peer_t *np);
void dfccl_host_net_release(struct dfccl_comm *comm, dfccl_host_t *h);
/* Publishes collective seq's identity on our board (the caller's thread). */
void dfccl_host_publish(struct dfccl_comm *comm, uint64_t seq, const dfccl_ident_t *ident);
/* Sends it to every linked peer, which keeps it on its mirror of our board.
 * The daemon does, when it admits the collective: the caller's thread never
 * waits for the network's lock, which the daemon takes and gives back
 * without pause while it pumps (a thread waiting on it could starve). */
void dfccl_host_send_ident(struct dfccl_comm *comm, uint64_t seq, const dfccl_ident_t *ident);
/* 1 when a link the communicator uses failed: why. */
int dfccl_host_link_failed(const struct dfccl_comm *comm, char *why, size_t len);

#endif
