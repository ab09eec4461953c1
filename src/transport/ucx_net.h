/*
 * ucx_net.h - what the UCX files share: ucx.c (context, worker, peers),
 * ucx_link.c (links, control messages, the pump), and the two data paths
 * a link can take, ucx_tag.c (tagged messages) and ucx_rma.c (RMA puts).
 */
#ifndef DFCCL_UCX_NET_H
#define DFCCL_UCX_NET_H

#include <pthread.h>
#include <ucp/api/ucp.h>
#include "transport/net.h"

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
    void            (*sent_bytes)(uint64_t bytes);   /* dfccl_net_open's hook, or NULL */
    unsigned          protocol;    /* dfccl_net_protocol_t */
    int               cuda_memory; /* the context takes UCS_MEMORY_TYPE_CUDA */
    /* dfccl_net_guard_progress's, under the lock: around every call that
     * may move data (enter's result goes to leave) */
    int             (*guard_enter)(void *arg);
    void            (*guard_leave)(void *arg, int entered);
    void             *guard_arg;
    ucp_context_h     context;
    ucp_worker_h      worker;
    ucp_address_t    *address;
    size_t            address_len;
    uint32_t          next_id;
    int               busy;        /* sends under way (atomic) */
    int               missed;      /* a pump's turn was skipped since the last (atomic) */
    int               unflushed;   /* sends handed to UCX since the last flush */
    void             *flush_req;   /* a worker flush under way */
    dfccl_net_peer_t *peers;
    dfccl_net_link_t *links;       /* open */
    dfccl_net_link_t *closing;     /* closed, requests still out */
    dfccl_net_link_t *parked;      /* closed, a peer that never took our sends */
    dfccl_net_region_t *regions;   /* RMA: registered, still used */
    struct ucx_ctrl_send *ctrl_sends;
};

enum { UCX_CTRL_IDENT = 1, UCX_CTRL_BREAK = 2, UCX_CTRL_CLOSE = 3 };

typedef struct ucx_ctrl_msg {
    uint32_t      kind;
    int32_t       status;
    uint64_t      seq;
    dfccl_ident_t ident;
    char          why[DFCCL_BOARD_WHY];
} ucx_ctrl_msg_t;

/* One direction's FIFO and the requests on its slots. */
typedef struct ucx_side {
    int                on;
    dfccl_fifo_ctrl_t *ctrl;
    char              *slots;
    uint32_t          *lens;     /* sending side: bytes per slot */
    void             **reqs;     /* per slot: the request, NULL once complete */
    int                cuda;     /* the slots are CUDA memory (tagged, open_at) */
    uint64_t           posted;   /* slots handed to UCX */
    uint64_t           done;     /* of those, completed (in order) */
    int                cancelled; /* closing: receives cancelled */
} ucx_side_t;

/* The RMA data path's part of a link (ucx_rma.c). */
typedef struct ucx_rma_link {
    dfccl_net_region_t *region;       /* ours: holds a reference */
    ucp_rkey_h          rkey;         /* the peer's region */
    uint64_t            peer_fifo;    /* the peer's FIFO that our slots go to */
    uint64_t            peer_credit;  /* the peer's word that our head goes to */
    volatile uint64_t  *credit;       /* the peer's head of our slots, as it puts it */
    uint64_t            tail_word;    /* what the counter puts read: stays put */
    uint64_t            head_word;    /* until their requests complete */
    void               *tail_req, *head_req, *flush_req;
    uint64_t            tail_put, head_put;   /* the last values put */
    int                 flushed;      /* closing: our puts have landed */
    int                 close_sent;
} ucx_rma_link_t;

typedef struct ucx_data_ops ucx_data_ops_t;

/* Where a closed link stands. */
enum {
    UCX_DRAIN_BUSY = 0,   /* something of ours is still out: keep pumping */
    UCX_DRAIN_DONE = 1,   /* it can be freed */
    UCX_DRAIN_WAIT = 2    /* ours is done; the peer has yet to say it is (no hurry) */
};

struct dfccl_net_link {
    dfccl_net_link_t *next;
    const ucx_data_ops_t *ops;
    dfccl_net_peer_t *peer;
    int               peer_rank;
    uint64_t          tag_in, tag_out;
    size_t            slot_bytes;
    uint32_t          nslots;
    ucx_side_t        out, in;
    void             *mem;       /* the data path's own memory */
    int               own_fifos; /* tagged: mem holds the FIFOs (else the caller's: open_at) */
    int              *released;  /* open_at: told when the caller's memory is free */
    ucx_rma_link_t    rma;
    dfccl_board_t     mirror;    /* the peer's board as its messages tell it */
    ucx_ctrl_msg_t    ctrl_buf[UCX_NET_CTRL_RECVS];
    void             *ctrl_req[UCX_NET_CTRL_RECVS];
    uint64_t          ctrl_posted, ctrl_done;
    const int        *broken;
    const dfccl_board_t *board;
    int               break_sent;
    int               peer_closed;   /* the peer closed its end (UCX_CTRL_CLOSE) */
    int               cancelled;
    uint64_t          close_deadline_ns;
};

/* A data path: how a link's FIFO slots and counters cross. All under the
 * net lock. */
struct ucx_data_ops {
    /* The link's FIFOs and the executor's views of them (peer already set). */
    dfccl_status_t (*open)(dfccl_net_t *net, dfccl_net_link_t *l, const dfccl_net_link_params_t *p,
                           dfccl_fifo_t *send_fifo, dfccl_fifo_t *recv_fifo);
    /* An open link: moves what is ready (1 when anything moved); sets *busy
     * while something of ours is still under way. */
    int  (*pump)(dfccl_net_t *net, dfccl_net_link_t *l, int *busy);
    /* A closed link: UCX_DRAIN_DONE once nothing of ours is out and the
     * peer will write nothing more into our memory. */
    int  (*drained)(dfccl_net_t *net, dfccl_net_link_t *l);
    /* Before the worker goes: drops what belongs to it. */
    void (*forget)(dfccl_net_t *net, dfccl_net_link_t *l);
    /* Frees the link's memory (no request can touch it any more). */
    void (*free)(dfccl_net_t *net, dfccl_net_link_t *l);
};

extern const ucx_data_ops_t ucx_tag_ops;
extern const ucx_data_ops_t ucx_rma_ops;
/* The tagged path's open over the caller's FIFO memory (net.h's open_at):
 * then ucx_tag_ops runs the link. */
dfccl_status_t ucx_tag_open_at(dfccl_net_link_t *l, const dfccl_net_link_params_t *p,
                               void *send_mem, void *recv_mem, dfccl_fifo_t *send_fifo,
                               dfccl_fifo_t *recv_fifo);
/* The RMA path's open over the caller's FIFO memory, inside p->region:
 * then ucx_rma_ops runs the link. */
dfccl_status_t ucx_rma_open_at(dfccl_net_t *net, dfccl_net_link_t *l,
                               const dfccl_net_link_params_t *p, void *send_mem, void *recv_mem,
                               dfccl_fifo_t *send_fifo, dfccl_fifo_t *recv_fifo);

dfccl_status_t ucx_peer_get(dfccl_net_t *net, const void *addr, size_t len, const char *host,
                            dfccl_net_peer_t **peer);
void ucx_peer_put(dfccl_net_t *net, dfccl_net_peer_t *peer);
/* Under the lock: one pass over every link; 1 when anything moved. */
int  ucx_links_pump(dfccl_net_t *net);
/* The net's guard (dfccl_net_guard_progress) around calls that may move
 * data, and ucp_worker_progress inside it; under the net lock. */
int ucx_guard_enter(dfccl_net_t *net);
void ucx_guard_leave(dfccl_net_t *net, int entered);
unsigned ucx_worker_progress_guarded(dfccl_net_t *net);
/* Before the worker is destroyed: what links hold of it. */
void ucx_links_forget_all(dfccl_net_t *net);
/* After the worker is gone: frees every link. */
void ucx_links_free_all(dfccl_net_t *net);
/* Sends a control message to the link's peer. */
void ucx_ctrl_send(dfccl_net_t *net, dfccl_net_link_t *l, const ucx_ctrl_msg_t *msg);
/* After the worker is gone: unmaps and frees every region. */
void ucx_regions_free_all(dfccl_net_t *net);

/* A request from a *_nbx call (NULL when it completed at once). */
static inline int ucx_req_pending(void *req)
{
    return req != NULL && !UCS_PTR_IS_ERR(req) && ucp_request_check_status(req) == UCS_INPROGRESS;
}

static inline int ucx_req_failed(void *req)
{
    if (req == NULL) return 0;
    if (UCS_PTR_IS_ERR(req)) return 1;
    return ucp_request_check_status(req) != UCS_OK;
}

static inline void ucx_req_release(void *req)
{
    if (req != NULL && !UCS_PTR_IS_ERR(req)) ucp_request_free(req);
}

/* Marks the peer failed when a request to it failed (its endpoint's error
 * handler may not have run yet). */
static inline void ucx_peer_fail(dfccl_net_peer_t *peer)
{
    if (!__atomic_load_n(&peer->failed, __ATOMIC_ACQUIRE))
        __atomic_store_n(&peer->failed, (int)UCS_ERR_CONNECTION_RESET, __ATOMIC_RELEASE);
}

/* Under the lock: our sending side's requests that completed, in order,
 * their slots given back (either protocol); 1 when any did. */
int ucx_out_complete(dfccl_net_link_t *l);

/* Points a side at its FIFO (control block, then slots), its requests and
 * its bytes per slot, and fills the executor's view of that FIFO; the
 * control block is left as it is. */
void ucx_side_view(ucx_side_t *s, char *fifo, void **reqs, uint32_t *lens,
                   const dfccl_net_link_t *l, dfccl_fifo_t *view, int peer);

#endif
