/*
 * ucx_link.c - links (net.h): FIFO slots as tagged messages, and the
 * control messages that mirror a remote peer's board.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "clock.h"
#include "locality.h"
#include "log.h"
#include "ucx_net.h"

enum { CTRL_IDENT = 1, CTRL_BREAK = 2 };

typedef struct ucx_ctrl_msg {
    uint32_t      kind;
    int32_t       status;
    uint64_t      seq;
    dfccl_ident_t ident;
    char          why[DFCCL_BOARD_WHY];
} ucx_ctrl_msg_t;

typedef struct ucx_ctrl_send {
    struct ucx_ctrl_send *next;
    void                 *req;
    ucx_ctrl_msg_t        msg;
} ucx_ctrl_send_t;

/* One direction's FIFO in our memory and the requests on its slots. */
typedef struct ucx_side {
    int                on;
    dfccl_fifo_ctrl_t *ctrl;
    char              *slots;
    uint32_t          *lens;     /* sending side: bytes per slot */
    void             **reqs;     /* per slot: the request, NULL once complete */
    uint64_t           posted;   /* slots handed to UCX */
    uint64_t           done;     /* of those, completed (in order) */
} ucx_side_t;

struct dfccl_net_link {
    dfccl_net_link_t *next;
    dfccl_net_peer_t *peer;
    int               peer_rank;
    uint64_t          tag_in, tag_out;
    size_t            slot_bytes;
    uint32_t          nslots;
    ucx_side_t        out, in;
    void             *mem;
    int               own_fifos; /* mem holds our FIFOs (else only requests: open_at) */
    dfccl_board_t     mirror;    /* the peer's board as its messages tell it */
    ucx_ctrl_msg_t    ctrl_buf[UCX_NET_CTRL_RECVS];
    void             *ctrl_req[UCX_NET_CTRL_RECVS];
    uint64_t          ctrl_posted, ctrl_done;
    const int        *broken;
    const dfccl_board_t *board;
    int               break_sent;
    int               cancelled;
    uint64_t          close_deadline_ns;
    int              *released;  /* open_at: told when the caller's memory is free */
};

static size_t side_bytes(const dfccl_net_link_t *l)
{
    return dfccl_fifo_bytes(l->slot_bytes, l->nslots) + l->nslots * (sizeof(void *) + sizeof(uint32_t));
}

static char *side_init(ucx_side_t *s, char *mem, const dfccl_net_link_t *l, dfccl_fifo_t *view,
                       int peer, int sending)
{
    s->on = 1;
    s->ctrl = (dfccl_fifo_ctrl_t *)mem;
    s->slots = mem + sizeof(dfccl_fifo_ctrl_t);
    s->reqs = (void **)(s->slots + l->slot_bytes * l->nslots);
    s->lens = (uint32_t *)(s->reqs + l->nslots);
    memset(s->ctrl, 0, sizeof(*s->ctrl));
    view->ctrl = s->ctrl;
    view->slots = s->slots;
    view->slot_bytes = l->slot_bytes;
    view->nslots = l->nslots;
    view->peer = peer;
    view->count = 0;
    view->lens = sending ? s->lens : NULL;
    return mem + side_bytes(l);
}

/* Under the lock. req from a *_nbx call: NULL when done at once. */
static int req_pending(void *req)
{
    return req != NULL && !UCS_PTR_IS_ERR(req) && ucp_request_check_status(req) == UCS_INPROGRESS;
}

static int req_failed(void *req)
{
    if (req == NULL) return 0;
    if (UCS_PTR_IS_ERR(req)) return 1;
    return ucp_request_check_status(req) != UCS_OK;
}

static void req_release(void *req)
{
    if (req != NULL && !UCS_PTR_IS_ERR(req)) ucp_request_free(req);
}

static void ctrl_post_recv(dfccl_net_t *net, dfccl_net_link_t *l)
{
    ucp_request_param_t rp;
    while (l->ctrl_posted < l->ctrl_done + UCX_NET_CTRL_RECVS) {
        unsigned k = (unsigned)(l->ctrl_posted % UCX_NET_CTRL_RECVS);
        memset(&rp, 0, sizeof(rp));
        l->ctrl_req[k] = ucp_tag_recv_nbx(net->worker, &l->ctrl_buf[k], sizeof(ucx_ctrl_msg_t),
                                          l->tag_in | UCX_NET_TAG_CTRL, UINT64_MAX, &rp);
        l->ctrl_posted++;
    }
}

static void ctrl_send(dfccl_net_t *net, dfccl_net_link_t *l, const ucx_ctrl_msg_t *msg)
{
    ucx_ctrl_send_t *s = malloc(sizeof(*s));
    ucp_request_param_t rp;

    if (s == NULL) {
        dfccl_error("out of memory for a control message to rank %d", l->peer_rank);
        return;
    }
    s->msg = *msg;
    memset(&rp, 0, sizeof(rp));
    s->req = ucp_tag_send_nbx(l->peer->ep, &s->msg, sizeof(s->msg), l->tag_out | UCX_NET_TAG_CTRL,
                              &rp);
    net->unflushed = 1;
    if (s->req == NULL || UCS_PTR_IS_ERR(s->req)) {
        free(s);
        return;
    }
    s->next = net->ctrl_sends;
    net->ctrl_sends = s;
}

dfccl_status_t dfccl_net_link_open(dfccl_net_t *net, const dfccl_net_link_params_t *p,
                                   dfccl_fifo_t *send_fifo, dfccl_fifo_t *recv_fifo,
                                   dfccl_board_t **mirror, dfccl_net_link_t **link_p)
{
    dfccl_net_link_t *l = calloc(1, sizeof(*l));
    dfccl_status_t status;
    char *mem;

    if (l == NULL) return DFCCL_ERR_NO_MEMORY;
    l->peer_rank = p->peer;
    l->tag_in = UCX_NET_TAG_ID(p->id_in);
    l->tag_out = UCX_NET_TAG_ID(p->id_out);
    l->slot_bytes = p->slot_bytes;
    l->nslots = p->nslots;
    l->broken = p->broken;
    l->board = p->board;
    dfccl_board_init(&l->mirror);
    l->mirror.pid = 0;   /* another node's process: not ours to look up */
    /* near this process: the executor and the pump work through it */
    l->mem = mem = dfccl_locality_alloc(2 * side_bytes(l));
    l->own_fifos = 1;
    if (mem == NULL) {
        free(l);
        return DFCCL_ERR_NO_MEMORY;
    }
    if (p->sends) mem = side_init(&l->out, mem, l, send_fifo, p->peer, 1);
    if (p->receives) side_init(&l->in, mem, l, recv_fifo, p->peer, 0);
    pthread_mutex_lock(&net->lock);
    status = ucx_peer_get(net, p->addr, p->addr_len, p->host, &l->peer);
    if (status == DFCCL_OK) {
        ctrl_post_recv(net, l);
        l->next = net->links;
        net->links = l;
    }
    pthread_mutex_unlock(&net->lock);
    if (status != DFCCL_OK) {
        dfccl_locality_free(l->mem, 2 * side_bytes(l));
        free(l);
        return status;
    }
    *mirror = &l->mirror;
    *link_p = l;
    return DFCCL_OK;
}

/* A side in the caller's memory (open_at): control block, slots, then the
 * bytes per slot when sending; the requests stay in the link's own. */
static void side_init_at(ucx_side_t *s, char *mem, void **reqs, const dfccl_net_link_t *l,
                         dfccl_fifo_t *view, int peer, int sending)
{
    s->on = 1;
    s->ctrl = (dfccl_fifo_ctrl_t *)mem;
    s->slots = mem + sizeof(dfccl_fifo_ctrl_t);
    s->reqs = reqs;
    s->lens = sending ? (uint32_t *)(s->slots + l->slot_bytes * l->nslots) : NULL;
    memset(s->ctrl, 0, sizeof(*s->ctrl));
    view->ctrl = s->ctrl;
    view->slots = s->slots;
    view->slot_bytes = l->slot_bytes;
    view->nslots = l->nslots;
    view->peer = peer;
    view->count = 0;
    view->lens = s->lens;
}

dfccl_status_t dfccl_net_link_open_at(dfccl_net_t *net, const dfccl_net_link_params_t *p,
                                      void *send_mem, void *recv_mem, dfccl_fifo_t *send_fifo,
                                      dfccl_fifo_t *recv_fifo, dfccl_board_t **mirror,
                                      dfccl_net_link_t **link_p)
{
    dfccl_net_link_t *l = calloc(1, sizeof(*l));
    dfccl_status_t status;
    void **reqs;

    if (l == NULL) return DFCCL_ERR_NO_MEMORY;
    l->peer_rank = p->peer;
    l->tag_in = UCX_NET_TAG_ID(p->id_in);
    l->tag_out = UCX_NET_TAG_ID(p->id_out);
    l->slot_bytes = p->slot_bytes;
    l->nslots = p->nslots;
    l->broken = p->broken;
    l->board = p->board;
    l->released = p->released;
    dfccl_board_init(&l->mirror);
    l->mirror.pid = 0;   /* another node's process: not ours to look up */
    /* l->mem: the requests of both sides (link_free frees it) */
    l->mem = reqs = calloc(2 * (size_t)l->nslots, sizeof(void *));
    if (reqs == NULL) {
        free(l);
        return DFCCL_ERR_NO_MEMORY;
    }
    if (p->sends) side_init_at(&l->out, send_mem, reqs, l, send_fifo, p->peer, 1);
    if (p->receives) side_init_at(&l->in, recv_mem, reqs + l->nslots, l, recv_fifo, p->peer, 0);
    pthread_mutex_lock(&net->lock);
    status = ucx_peer_get(net, p->addr, p->addr_len, p->host, &l->peer);
    if (status == DFCCL_OK) {
        ctrl_post_recv(net, l);
        l->next = net->links;
        net->links = l;
    }
    pthread_mutex_unlock(&net->lock);
    if (status != DFCCL_OK) {
        free(l->mem);
        free(l);
        return status;
    }
    *mirror = &l->mirror;
    *link_p = l;
    return DFCCL_OK;
}

/* The caller's memory (open_at) is free once the link is: no request is out. */
static void link_release_mem(dfccl_net_link_t *l)
{
    if (l->released != NULL) __atomic_store_n(l->released, 1, __ATOMIC_RELEASE);
}

/* The link's own memory: its FIFOs near the process, or (open_at) only the
 * requests of its slots. */
static void link_free_mem(dfccl_net_link_t *l)
{
    if (l->own_fifos) dfccl_locality_free(l->mem, 2 * side_bytes(l));
    else free(l->mem);
}

void dfccl_net_link_close(dfccl_net_t *net, dfccl_net_link_t *link)
{
    dfccl_net_link_t **pp;

    pthread_mutex_lock(&net->lock);
    for (pp = &net->links; *pp != NULL; pp = &(*pp)->next)
        if (*pp == link) {
            *pp = link->next;
            break;
        }
    link->close_deadline_ns = dfccl_now_ns() + UCX_NET_CLOSE_NS;
    link->next = net->closing;
    net->closing = link;
    pthread_mutex_unlock(&net->lock);
}

void dfccl_net_link_post_ident(dfccl_net_t *net, dfccl_net_link_t *link, uint64_t seq,
                               const dfccl_ident_t *ident)
{
    ucx_ctrl_msg_t msg;

    memset(&msg, 0, sizeof(msg));
    msg.kind = CTRL_IDENT;
    msg.seq = seq;
    msg.ident = *ident;
    pthread_mutex_lock(&net->lock);
    if (!link->peer->failed) ctrl_send(net, link, &msg);
    pthread_mutex_unlock(&net->lock);
}

int dfccl_net_link_failed(const dfccl_net_link_t *link, char *why, size_t len)
{
    int st = __atomic_load_n(&link->peer->failed, __ATOMIC_ACQUIRE);
    if (st == 0) return 0;
    snprintf(why, len, "rank %d on host %s is unreachable: %s", link->peer_rank, link->peer->host,
             ucs_status_string((ucs_status_t)st));
    return 1;
}

/* ---- the pump ------------------------------------------------------------ */

static int pump_out(dfccl_net_t *net, dfccl_net_link_t *l, int closing)
{
    ucx_side_t *s = &l->out;
    ucp_request_param_t rp;
    int moved = 0;
    uint64_t tail = __atomic_load_n(&s->ctrl->tail, __ATOMIC_ACQUIRE);

    while (!closing && s->posted < tail) {
        uint32_t k = (uint32_t)(s->posted % l->nslots);
        memset(&rp, 0, sizeof(rp));
        s->reqs[k] = ucp_tag_send_nbx(l->peer->ep, s->slots + (size_t)k * l->slot_bytes, s->lens[k],
                                      l->tag_out | (s->posted & UCX_NET_SEQ_MASK), &rp);
        dfccl_stats_add_net_bytes(s->lens[k]);
        net->unflushed = 1;
        s->posted++;
        moved = 1;
    }
    while (s->done < s->posted) {
        uint32_t k = (uint32_t)(s->done % l->nslots);
        if (req_pending(s->reqs[k])) break;
        if (req_failed(s->reqs[k]) && !l->peer->failed)
            __atomic_store_n(&l->peer->failed, (int)UCS_ERR_CONNECTION_RESET, __ATOMIC_RELEASE);
        req_release(s->reqs[k]);
        s->reqs[k] = NULL;
        s->done++;
        moved = 1;
    }
    /* the slot is ours again once UCX is done with it */
    __atomic_store_n(&s->ctrl->head, s->done, __ATOMIC_RELEASE);
    return moved;
}

static int pump_in(dfccl_net_t *net, dfccl_net_link_t *l, int closing)
{
    ucx_side_t *s = &l->in;
    ucp_request_param_t rp;
    int moved = 0;
    uint64_t head = __atomic_load_n(&s->ctrl->head, __ATOMIC_ACQUIRE);

    while (!closing && s->posted < head + l->nslots) {
        uint32_t k = (uint32_t)(s->posted % l->nslots);
        memset(&rp, 0, sizeof(rp));
        s->reqs[k] = ucp_tag_recv_nbx(net->worker, s->slots + (size_t)k * l->slot_bytes,
                                      l->slot_bytes, l->tag_in | (s->posted & UCX_NET_SEQ_MASK),
                                      UINT64_MAX, &rp);
        s->posted++;
    }
    while (s->done < s->posted) {
        uint32_t k = (uint32_t)(s->done % l->nslots);
        if (req_pending(s->reqs[k])) break;
        if (req_failed(s->reqs[k])) {   /* cancelled, or the peer failed: no data */
            if (!closing && !l->peer->failed)
                __atomic_store_n(&l->peer->failed, (int)UCS_ERR_CONNECTION_RESET, __ATOMIC_RELEASE);
            req_release(s->reqs[k]);
            s->reqs[k] = NULL;
            s->done++;
            continue;
        }
        req_release(s->reqs[k]);
        s->reqs[k] = NULL;
        s->done++;
        if (!closing) __atomic_store_n(&s->ctrl->tail, s->done, __ATOMIC_RELEASE);
        moved = 1;
    }
    return moved;
}

static int pump_ctrl(dfccl_net_t *net, dfccl_net_link_t *l, int closing)
{
    int moved = 0;

    while (l->ctrl_done < l->ctrl_posted) {
        unsigned k = (unsigned)(l->ctrl_done % UCX_NET_CTRL_RECVS);
        const ucx_ctrl_msg_t *m = &l->ctrl_buf[k];
        if (req_pending(l->ctrl_req[k])) break;
        if (!req_failed(l->ctrl_req[k]) && !closing) {
            if (m->kind == CTRL_IDENT) dfccl_board_post(&l->mirror, m->seq, &m->ident);
            else if (m->kind == CTRL_BREAK)
                dfccl_board_break(&l->mirror, m->seq, (dfccl_status_t)m->status, m->why);
            moved = 1;
        }
        req_release(l->ctrl_req[k]);
        l->ctrl_req[k] = NULL;
        l->ctrl_done++;
    }
    if (!closing && !l->peer->failed) ctrl_post_recv(net, l);
    /* our communicator broke: the peer learns it as if it read our board */
    if (!closing && !l->break_sent && __atomic_load_n(l->broken, __ATOMIC_ACQUIRE)) {
        ucx_ctrl_msg_t msg;
        memset(&msg, 0, sizeof(msg));
        msg.kind = CTRL_BREAK;
        msg.status = dfccl_board_broken(l->board, &msg.seq, msg.why, sizeof(msg.why));
        l->break_sent = 1;
        if (msg.status != 0 && !l->peer->failed) ctrl_send(net, l, &msg);
    }
    return moved;
}

/* A closed link: receives cancelled, sends let finish; 1 once nothing is out. */
static int link_drained(dfccl_net_t *net, dfccl_net_link_t *l)
{
    int out = 0;

    if (!l->cancelled) {
        for (uint32_t k = 0; k < l->nslots && l->in.on; k++)
            if (req_pending(l->in.reqs[k])) ucp_request_cancel(net->worker, l->in.reqs[k]);
        for (unsigned k = 0; k < UCX_NET_CTRL_RECVS; k++)
            if (req_pending(l->ctrl_req[k])) ucp_request_cancel(net->worker, l->ctrl_req[k]);
        l->cancelled = 1;
    }
    if (l->out.on) {
        pump_out(net, l, 1);
        out |= l->out.done < l->out.posted;
    }
    if (l->in.on) {
        pump_in(net, l, 1);
        out |= l->in.done < l->in.posted;
    }
    pump_ctrl(net, l, 1);
    out |= l->ctrl_done < l->ctrl_posted;
    return !out;
}

static void link_free(dfccl_net_t *net, dfccl_net_link_t *l)
{
    ucx_peer_put(net, l->peer);
    link_release_mem(l);
    link_free_mem(l);
    free(l);
}

int ucx_links_pump(dfccl_net_t *net)
{
    int moved = 0, busy = 0;

    for (dfccl_net_link_t *l = net->links; l != NULL; l = l->next) {
        if (l->out.on) {
            moved |= pump_out(net, l, 0);
            busy |= l->out.done < __atomic_load_n(&l->out.ctrl->tail, __ATOMIC_ACQUIRE);
        }
        if (l->in.on) moved |= pump_in(net, l, 0);
        moved |= pump_ctrl(net, l, 0);
    }
    for (dfccl_net_link_t **pp = &net->closing; *pp != NULL;) {
        dfccl_net_link_t *l = *pp;
        if (link_drained(net, l)) {
            *pp = l->next;
            link_free(net, l);
            continue;
        }
        if (dfccl_now_ns() > l->close_deadline_ns) {
            /* a peer that does not take what we sent: its requests stay
             * out, and the link is freed with the worker */
            *pp = l->next;
            l->next = net->parked;
            net->parked = l;
            continue;
        }
        busy = 1;
        pp = &l->next;
    }
    for (ucx_ctrl_send_t **pp = &net->ctrl_sends; *pp != NULL;) {
        ucx_ctrl_send_t *s = *pp;
        if (req_pending(s->req)) {
            busy = 1;
            pp = &s->next;
            continue;
        }
        *pp = s->next;
        req_release(s->req);
        free(s);
    }
    /* A send UCX calls complete may still sit in its own buffers (a TCP
     * socket that was full): only progress pushes it out. A worker flush
     * ends when it is out, and until then the daemon keeps pumping instead
     * of sleeping while the peer waits for those bytes. */
    if (net->flush_req != NULL && !req_pending(net->flush_req)) {
        req_release(net->flush_req);
        net->flush_req = NULL;
    }
    if (net->flush_req == NULL && net->unflushed && !busy) {
        ucp_request_param_t rp;
        memset(&rp, 0, sizeof(rp));
        net->unflushed = 0;
        net->flush_req = ucp_worker_flush_nbx(net->worker, &rp);
        if (!req_pending(net->flush_req)) {
            req_release(net->flush_req);
            net->flush_req = NULL;
        }
    }
    busy |= net->flush_req != NULL;
    __atomic_store_n(&net->busy, busy, __ATOMIC_RELEASE);
    return moved;
}

void ucx_links_free_all(dfccl_net_t *net)
{
    dfccl_net_link_t *lists[3] = { net->links, net->closing, net->parked };

    for (int i = 0; i < 3; i++)
        while (lists[i] != NULL) {
            dfccl_net_link_t *l = lists[i];
            lists[i] = l->next;
            link_release_mem(l);   /* the worker is gone: no request is out */
            link_free_mem(l);
            free(l);
        }
    net->links = net->closing = net->parked = NULL;
    while (net->ctrl_sends != NULL) {
        ucx_ctrl_send_t *s = net->ctrl_sends;
        net->ctrl_sends = s->next;
        free(s);
    }
}
