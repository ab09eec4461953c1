/*
 * ucx_link.c - links (net.h): their lives, the control messages that
 * mirror a remote peer's board (tagged, whatever the data path), and the
 * pump that runs every link's data path (ucx_tag.c or ucx_rma.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/clock.h"
#include "util/log.h"
#include "transport/ucx_net.h"

typedef struct ucx_ctrl_send {
    struct ucx_ctrl_send *next;
    void                 *req;
    ucx_ctrl_msg_t        msg;
} ucx_ctrl_send_t;

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

void ucx_ctrl_send(dfccl_net_t *net, dfccl_net_link_t *l, const ucx_ctrl_msg_t *msg)
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

/* at: the caller's FIFO memory (open_at), sending side then receiving; NULL:
 * the data path allocates its own. */
static dfccl_status_t link_open(dfccl_net_t *net, const dfccl_net_link_params_t *p,
                                void *const *at, dfccl_fifo_t *send_fifo, dfccl_fifo_t *recv_fifo,
                                dfccl_board_t **mirror, dfccl_net_link_t **link_p)
{
    dfccl_net_link_t *l = calloc(1, sizeof(*l));
    dfccl_status_t status;

    if (l == NULL) return DFCCL_ERR_NO_MEMORY;
    /* the caller's memory takes the RMA path only where the caller
     * registered it as a region for peers to put into (net.h) */
    l->ops = net->protocol == DFCCL_NET_RMA && (at == NULL || p->region != NULL) ? &ucx_rma_ops
                                                                                 : &ucx_tag_ops;
    l->peer_rank = p->peer;
    l->tag_in = UCX_NET_TAG_ID(p->id_in);
    l->tag_out = UCX_NET_TAG_ID(p->id_out);
    l->slot_bytes = p->slot_bytes;
    l->nslots = p->nslots;
    l->broken = p->broken;
    l->board = p->board;
    l->released = at != NULL ? p->released : NULL;
    dfccl_board_init(&l->mirror);
    l->mirror.pid = 0;   /* another node's process: not ours to look up */
    pthread_mutex_lock(&net->lock);
    status = ucx_peer_get(net, p->addr, p->addr_len, p->host, &l->peer);
    if (status == DFCCL_OK) {
        /* both undo themselves on failure */
        if (at != NULL && l->ops == &ucx_rma_ops)
            status = ucx_rma_open_at(net, l, p, at[0], at[1], send_fifo, recv_fifo);
        else if (at != NULL)
            status = ucx_tag_open_at(l, p, at[0], at[1], send_fifo, recv_fifo);
        else
            status = l->ops->open(net, l, p, send_fifo, recv_fifo);
        if (status != DFCCL_OK) ucx_peer_put(net, l->peer);
    }
    if (status == DFCCL_OK) {
        ctrl_post_recv(net, l);
        l->next = net->links;
        net->links = l;
    }
    pthread_mutex_unlock(&net->lock);
    if (status != DFCCL_OK) {
        free(l);
        return status;
    }
    *mirror = &l->mirror;
    *link_p = l;
    return DFCCL_OK;
}

dfccl_status_t dfccl_net_link_open(dfccl_net_t *net, const dfccl_net_link_params_t *p,
                                   dfccl_fifo_t *send_fifo, dfccl_fifo_t *recv_fifo,
                                   dfccl_board_t **mirror, dfccl_net_link_t **link_p)
{
    return link_open(net, p, NULL, send_fifo, recv_fifo, mirror, link_p);
}

dfccl_status_t dfccl_net_link_open_at(dfccl_net_t *net, const dfccl_net_link_params_t *p,
                                      void *send_mem, void *recv_mem, dfccl_fifo_t *send_fifo,
                                      dfccl_fifo_t *recv_fifo, dfccl_board_t **mirror,
                                      dfccl_net_link_t **link_p)
{
    void *const at[2] = { send_mem, recv_mem };

    return link_open(net, p, at, send_fifo, recv_fifo, mirror, link_p);
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
    msg.kind = UCX_CTRL_IDENT;
    msg.seq = seq;
    msg.ident = *ident;
    pthread_mutex_lock(&net->lock);
    if (!link->peer->failed) ucx_ctrl_send(net, link, &msg);
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

/* Closing, only the peer's close still counts. */
static int pump_ctrl(dfccl_net_t *net, dfccl_net_link_t *l, int closing)
{
    int moved = 0;

    while (l->ctrl_done < l->ctrl_posted) {
        unsigned k = (unsigned)(l->ctrl_done % UCX_NET_CTRL_RECVS);
        const ucx_ctrl_msg_t *m = &l->ctrl_buf[k];
        if (ucx_req_pending(l->ctrl_req[k])) break;
        if (!ucx_req_failed(l->ctrl_req[k])) {
            if (m->kind == UCX_CTRL_CLOSE) l->peer_closed = 1;
            else if (!closing && m->kind == UCX_CTRL_IDENT)
                dfccl_board_post(&l->mirror, m->seq, &m->ident);
            else if (!closing && m->kind == UCX_CTRL_BREAK)
                dfccl_board_break(&l->mirror, m->seq, (dfccl_status_t)m->status, m->why);
            moved = 1;
        }
        ucx_req_release(l->ctrl_req[k]);
        l->ctrl_req[k] = NULL;
        l->ctrl_done++;
    }
    if (!l->cancelled && !l->peer->failed) ctrl_post_recv(net, l);
    /* our communicator broke: the peer learns it as if it read our board */
    if (!closing && !l->break_sent && __atomic_load_n(l->broken, __ATOMIC_ACQUIRE)) {
        ucx_ctrl_msg_t msg;
        memset(&msg, 0, sizeof(msg));
        msg.kind = UCX_CTRL_BREAK;
        msg.status = dfccl_board_broken(l->board, &msg.seq, msg.why, sizeof(msg.why));
        l->break_sent = 1;
        if (msg.status != 0 && !l->peer->failed) ucx_ctrl_send(net, l, &msg);
    }
    return moved;
}

/* A closed link: done once its data path is and no receive is out (the
 * control receives stay until then: the peer's close comes through them). */
static int link_drained(dfccl_net_t *net, dfccl_net_link_t *l)
{
    int state;

    pump_ctrl(net, l, 1);
    state = l->ops->drained(net, l);
    if (state != UCX_DRAIN_DONE) return state;
    if (!l->cancelled) {
        for (unsigned k = 0; k < UCX_NET_CTRL_RECVS; k++)
            if (ucx_req_pending(l->ctrl_req[k])) ucp_request_cancel(net->worker, l->ctrl_req[k]);
        l->cancelled = 1;
        pump_ctrl(net, l, 1);
    }
    return l->ctrl_done == l->ctrl_posted ? UCX_DRAIN_DONE : UCX_DRAIN_BUSY;
}

/* The caller's memory (open_at) is free once the link is: no request is out. */
static void link_release(dfccl_net_link_t *l)
{
    if (l->released != NULL) __atomic_store_n(l->released, 1, __ATOMIC_RELEASE);
}

static void link_free(dfccl_net_t *net, dfccl_net_link_t *l)
{
    l->ops->forget(net, l);
    l->ops->free(net, l);
    link_release(l);
    ucx_peer_put(net, l->peer);
    free(l);
}

int ucx_links_pump(dfccl_net_t *net)
{
    int moved = 0, busy = 0;

    for (dfccl_net_link_t *l = net->links; l != NULL; l = l->next) {
        moved |= l->ops->pump(net, l, &busy);
        moved |= pump_ctrl(net, l, 0);
    }
    for (dfccl_net_link_t **pp = &net->closing; *pp != NULL;) {
        dfccl_net_link_t *l = *pp;
        int state = link_drained(net, l);
        if (state == UCX_DRAIN_DONE) {
            *pp = l->next;
            link_free(net, l);
            continue;
        }
        if (state == UCX_DRAIN_WAIT) {   /* whenever the peer closes its end */
            pp = &l->next;
            continue;
        }
        if (dfccl_now_ns() > l->close_deadline_ns) {
            /* a peer that does not take what we sent (or never says it
             * stopped writing into our memory): its requests stay out, and
             * the link is freed with the worker */
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
        if (ucx_req_pending(s->req)) {
            busy = 1;
            pp = &s->next;
            continue;
        }
        *pp = s->next;
        ucx_req_release(s->req);
        free(s);
    }
    /* A send UCX calls complete may still sit in its own buffers (a TCP
     * socket that was full): only progress pushes it out. A worker flush
     * ends when it is out, and until then the daemon keeps pumping instead
     * of sleeping while the peer waits for those bytes. */
    if (net->flush_req != NULL && !ucx_req_pending(net->flush_req)) {
        ucx_req_release(net->flush_req);
        net->flush_req = NULL;
    }
    if (net->flush_req == NULL && net->unflushed && !busy) {
        ucp_request_param_t rp;
        memset(&rp, 0, sizeof(rp));
        net->unflushed = 0;
        net->flush_req = ucp_worker_flush_nbx(net->worker, &rp);
        if (!ucx_req_pending(net->flush_req)) {
            ucx_req_release(net->flush_req);
            net->flush_req = NULL;
        }
    }
    busy |= net->flush_req != NULL;
    __atomic_store_n(&net->busy, busy, __ATOMIC_RELEASE);
    return moved;
}

void ucx_links_forget_all(dfccl_net_t *net)
{
    dfccl_net_link_t *lists[3] = { net->links, net->closing, net->parked };

    for (int i = 0; i < 3; i++)
        for (dfccl_net_link_t *l = lists[i]; l != NULL; l = l->next) l->ops->forget(net, l);
}

void ucx_links_free_all(dfccl_net_t *net)
{
    dfccl_net_link_t *lists[3] = { net->links, net->closing, net->parked };

    for (int i = 0; i < 3; i++)
        while (lists[i] != NULL) {
            dfccl_net_link_t *l = lists[i];
            lists[i] = l->next;
            l->ops->free(net, l);
            link_release(l);   /* the worker is gone: no request is out */
            free(l);
        }
    net->links = net->closing = net->parked = NULL;
    while (net->ctrl_sends != NULL) {
        ucx_ctrl_send_t *s = net->ctrl_sends;
        net->ctrl_sends = s->next;
        free(s);
    }
}

int ucx_out_complete(dfccl_net_link_t *l)
{
    ucx_side_t *s = &l->out;
    int moved = 0;

    while (s->done < s->posted) {
        uint32_t k = (uint32_t)(s->done % l->nslots);
        if (ucx_req_pending(s->reqs[k])) break;
        if (ucx_req_failed(s->reqs[k])) ucx_peer_fail(l->peer);
        ucx_req_release(s->reqs[k]);
        s->reqs[k] = NULL;
        s->done++;
        moved = 1;
    }
    return moved;
}

void ucx_side_view(ucx_side_t *s, char *fifo, void **reqs, uint32_t *lens,
                   const dfccl_net_link_t *l, dfccl_fifo_t *view, int peer)
{
    s->on = 1;
    s->ctrl = (dfccl_fifo_ctrl_t *)fifo;
    s->slots = fifo + sizeof(dfccl_fifo_ctrl_t);
    s->reqs = reqs;
    s->lens = lens;
    view->ctrl = s->ctrl;
    view->slots = s->slots;
    view->slot_bytes = l->slot_bytes;
    view->nslots = l->nslots;
    view->peer = peer;
    view->count = 0;
    view->lens = lens;
}
