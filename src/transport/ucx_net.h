/* ucx_net.h - what ucx.c and ucx_link.c share. */
#ifndef DFCCL_UCX_NET_H
#define DFCCL_UCX_NET_H

#include <pthread.h>
#include <ucp/api/ucp.h>
#include "net.h"

#define UCX_NET_ID_LIMIT   (1u << 24)
#define UCX_NET_TAG_ID(id) ((uint64_t)(id) << 40)
#define UCX_NET_TAG_CTRL   (1ull << 39)
#define UCX_NET_SEQ_MASK   ((1ull << 39) - 1)
/* Control receives kept posted per link: identities arrive one per
 * collective, and a peer may post several before we take them. */
#define UCX_NET_CTRL_RECVS 8
/* How long closing waits for sends still under way. */
#define UCX_NET_CLOSE_NS   2000000000ull

struct dfccl_net_peer {
    struct dfccl_net_peer *next;
    int       refs;
    int       failed;              /* ucs_status_t of the endpoint's failure (atomic) */
    ucp_ep_h  ep;
    char      host[DFCCL_NET_HOST_MAX];
    size_t    addr_len;
    char      addr[];
};

struct dfccl_net {
    pthread_mutex_t   lock;
    ucp_context_h     context;
    ucp_worker_h      worker;
    ucp_address_t    *address;
    size_t            address_len;
    uint32_t          next_id;
    int               busy;        /* sends under way (atomic) */
    int               unflushed;   /* sends handed to UCX since the last flush */
    void             *flush_req;   /* a worker flush under way */
    dfccl_net_peer_t *peers;
    dfccl_net_link_t *links;       /* open */
    dfccl_net_link_t *closing;     /* closed, requests still out */
    dfccl_net_link_t *parked;      /* closed, a peer that never took our sends */
    struct ucx_ctrl_send *ctrl_sends;
};

dfccl_status_t ucx_peer_get(dfccl_net_t *net, const void *addr, size_t len, const char *host,
                            dfccl_net_peer_t **peer);
void ucx_peer_put(dfccl_net_t *net, dfccl_net_peer_t *peer);
/* Under the lock: one pass over every link; 1 when anything moved. */
int  ucx_links_pump(dfccl_net_t *net);
/* After the worker is gone: frees every link. */
void ucx_links_free_all(dfccl_net_t *net);

#endif
