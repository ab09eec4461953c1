/*
 * ucx_rma.c - the RMA data path of a link (net.h), and the registered
 * regions it puts into.
 *
 * A communicator's region on a rank holds its incoming FIFOs from peers on
 * other nodes, its outgoing slots (what its puts read) and one credit word
 * per peer it sends to; the host side lays it out (links.c) and hands each
 * link its offsets and the peer's addresses.
 *
 * Sending: each filled slot is put (its written bytes) into the same slot
 * of the peer's FIFO; once those puts are complete here, a fence, then the
 * new tail. The slot is free again for the executor when both our put of
 * it is complete and the peer's head, which it puts into our credit word,
 * has passed it. Receiving: the executor's head goes back the same way.
 * One counter put per direction is under way at a time and it carries the
 * newest value, so puts of the counters batch while the transport lags.
 *
 * Where UCX emulates puts with messages (TCP), a put lands only when the
 * target progresses its worker, and its origin's flush ends only when the
 * target acknowledged it: a sender therefore stays busy (the daemon keeps
 * pumping) until the receiver's head reached its tail, so that the last
 * credit puts land and are acknowledged although its collective is over.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "transport/locality.h"
#include "util/log.h"
#include "transport/ucx_net.h"

struct dfccl_net_region {
    dfccl_net_region_t *next;
    int                 refs;
    int                 callers;   /* the memory is the caller's (open_at): not freed here */
    ucp_mem_h           memh;
    void               *base;
    size_t              len;
};

/* Registers r's memory; frees r (not the memory) on failure. */
static dfccl_status_t region_map(dfccl_net_t *net, dfccl_net_region_t *r)
{
    ucp_mem_map_params_t mp;
    ucs_status_t st;

    memset(&mp, 0, sizeof(mp));
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address = r->base;
    mp.length = r->len;
    pthread_mutex_lock(&net->lock);
    st = ucp_mem_map(net->context, &mp, &r->memh);
    if (st == UCS_OK) {
        r->refs = 1;
        r->next = net->regions;
        net->regions = r;
    }
    pthread_mutex_unlock(&net->lock);
    if (st != UCS_OK) {
        dfccl_error("UCX cannot register %zu bytes for the links' puts: %s", r->len,
                    ucs_status_string(st));
        free(r);
        return DFCCL_ERR_SYSTEM;
    }
    return DFCCL_OK;
}

dfccl_status_t dfccl_net_region_open(dfccl_net_t *net, size_t bytes, dfccl_net_region_t **region_p,
                                     void **base)
{
    dfccl_net_region_t *r = calloc(1, sizeof(*r));
    size_t len = (bytes + DFCCL_CACHELINE - 1) / DFCCL_CACHELINE * DFCCL_CACHELINE;
    dfccl_status_t status;
    void *mem;

    if (r == NULL) return DFCCL_ERR_NO_MEMORY;
    /* near this process, as the tagged path's FIFOs: the executor works
     * through it */
    r->base = mem = dfccl_locality_alloc(len);
    r->len = len;
    if (mem == NULL) {
        free(r);
        return DFCCL_ERR_NO_MEMORY;
    }
    memset(mem, 0, len);   /* counters start at 0 on both sides */
    status = region_map(net, r);
    if (status != DFCCL_OK) {
        dfccl_locality_free(mem, len);
        return status;
    }
    *region_p = r;
    *base = mem;
    return DFCCL_OK;
}

dfccl_status_t dfccl_net_region_open_at(dfccl_net_t *net, void *mem, size_t bytes,
                                        dfccl_net_region_t **region_p)
{
    dfccl_net_region_t *r = calloc(1, sizeof(*r));
    dfccl_status_t status;

    if (r == NULL) return DFCCL_ERR_NO_MEMORY;
    r->base = mem;
    r->len = bytes;
    r->callers = 1;
    status = region_map(net, r);
    if (status == DFCCL_OK) *region_p = r;
    return status;
}

dfccl_status_t dfccl_net_region_key(dfccl_net_t *net, dfccl_net_region_t *region, void *buf,
                                    size_t max, size_t *len)
{
    void *packed = NULL;
    size_t size = 0;
    ucs_status_t st;

    pthread_mutex_lock(&net->lock);
    st = ucp_rkey_pack(net->context, region->memh, &packed, &size);
    if (st == UCS_OK && size <= max) memcpy(buf, packed, size);
    if (st == UCS_OK) ucp_rkey_buffer_release(packed);
    pthread_mutex_unlock(&net->lock);
    if (st != UCS_OK) {
        dfccl_error("UCX cannot pack the key of the links' memory: %s", ucs_status_string(st));
        return DFCCL_ERR_SYSTEM;
    }
    if (size > max) {
        dfccl_error("the UCX key of the links' memory takes %zu bytes, more than the %zu the"
                    " set-up carries", size, max);
        return DFCCL_ERR_UNSUPPORTED;
    }
    *len = size;
    return DFCCL_OK;
}

/* Under the lock. */
static void region_put(dfccl_net_t *net, dfccl_net_region_t *region)
{
    if (--region->refs > 0) return;
    for (dfccl_net_region_t **pp = &net->regions; *pp != NULL; pp = &(*pp)->next)
        if (*pp == region) {
            *pp = region->next;
            break;
        }
    ucp_mem_unmap(net->context, region->memh);
    if (!region->callers) dfccl_locality_free(region->base, region->len);
    free(region);
}

void dfccl_net_region_close(dfccl_net_t *net, dfccl_net_region_t *region)
{
    if (region == NULL) return;
    pthread_mutex_lock(&net->lock);
    region_put(net, region);
    pthread_mutex_unlock(&net->lock);
}

void ucx_regions_free_all(dfccl_net_t *net)
{
    while (net->regions != NULL) {
        net->regions->refs = 1;
        region_put(net, net->regions);
    }
}

/* ---- a link's data path -------------------------------------------------- */

/* out, in: our FIFOs in the region; lens: the bytes per outgoing slot,
 * NULL: the link's own (the executor's view points at them either way). */
static dfccl_status_t rma_open_in(dfccl_net_link_t *l, const dfccl_net_link_params_t *p,
                                  char *out, uint32_t *lens, char *in, dfccl_fifo_t *send_fifo,
                                  dfccl_fifo_t *recv_fifo)
{
    ucx_rma_link_t *r = &l->rma;
    char *base;
    ucs_status_t st;

    if (p->region == NULL || p->peer_key_len == 0) {
        dfccl_error("rank %d on host %s sent no key of its memory for RMA links", p->peer, p->host);
        return DFCCL_ERR_INVALID_PARAM;
    }
    /* the slots' requests and lengths: ours alone, not the peer's to see */
    l->mem = calloc(l->nslots, 2 * sizeof(void *) + sizeof(uint32_t));
    if (l->mem == NULL) return DFCCL_ERR_NO_MEMORY;
    if (lens == NULL) lens = (uint32_t *)((void **)l->mem + 2 * l->nslots);
    st = ucp_ep_rkey_unpack(l->peer->ep, p->peer_key, &r->rkey);
    if (st != UCS_OK) {
        dfccl_error("cannot use the memory key of rank %d on host %s: %s", p->peer, p->host,
                    ucs_status_string(st));
        free(l->mem);
        return DFCCL_ERR_SYSTEM;
    }
    r->region = p->region;
    r->region->refs++;
    base = r->region->base;
    if (p->sends) {
        ucx_side_view(&l->out, out, (void **)l->mem, lens, l, send_fifo, p->peer);
        r->credit = (volatile uint64_t *)(base + p->credit_off);
        r->peer_fifo = p->peer_fifo;
    }
    if (p->receives) {
        ucx_side_view(&l->in, in, (void **)l->mem + l->nslots, NULL, l, recv_fifo, p->peer);
        r->peer_credit = p->peer_credit;
    }
    return DFCCL_OK;
}

static dfccl_status_t rma_open(dfccl_net_t *net, dfccl_net_link_t *l,
                               const dfccl_net_link_params_t *p, dfccl_fifo_t *send_fifo,
                               dfccl_fifo_t *recv_fifo)
{
    char *base = p->region != NULL ? p->region->base : NULL;

    (void)net;
    return rma_open_in(l, p, base != NULL ? base + p->out_off : NULL, NULL,
                       base != NULL ? base + p->in_off : NULL, send_fifo, recv_fifo);
}

/* The caller's memory must lie in the region (the peer puts into its
 * receiving FIFO there), the sending FIFO's lengths right after its slots
 * (net.h's dfccl_net_fifo_bytes), and the credit word too. */
dfccl_status_t ucx_rma_open_at(dfccl_net_t *net, dfccl_net_link_t *l,
                               const dfccl_net_link_params_t *p, void *send_mem, void *recv_mem,
                               dfccl_fifo_t *send_fifo, dfccl_fifo_t *recv_fifo)
{
    const dfccl_net_region_t *r = p->region;
    size_t out_bytes = dfccl_net_fifo_bytes(l->slot_bytes, l->nslots, 1);
    size_t in_bytes = dfccl_net_fifo_bytes(l->slot_bytes, l->nslots, 0);
    const char *base;

    (void)net;
    if (r == NULL || p->send_slots != NULL || p->recv_slots != NULL) {
        dfccl_error("a link to rank %d over the caller's memory: RMA needs that memory"
                    " registered, with the slots in place", p->peer);
        return DFCCL_ERR_INVALID_PARAM;
    }
    base = r->base;
    if ((p->sends && ((char *)send_mem < base || (char *)send_mem + out_bytes > base + r->len ||
                      p->credit_off + sizeof(uint64_t) > r->len)) ||
        (p->receives && ((char *)recv_mem < base || (char *)recv_mem + in_bytes > base + r->len))) {
        dfccl_error("a link to rank %d: its FIFOs lie outside the registered region", p->peer);
        return DFCCL_ERR_INVALID_PARAM;
    }
    return rma_open_in(l, p, send_mem,
                       p->sends ? (uint32_t *)((char *)send_mem +
                                               dfccl_fifo_bytes(l->slot_bytes, l->nslots))
                                : NULL,
                       recv_mem, send_fifo, recv_fifo);
}

/* Puts a counter from *word (which stays put while the request is out),
 * after a fence: the peer must see what it counts first. */
static void *counter_put(dfccl_net_t *net, dfccl_net_link_t *l, uint64_t *word, uint64_t value,
                         uint64_t remote)
{
    ucp_request_param_t rp;
    void *req;

    memset(&rp, 0, sizeof(rp));
    ucp_worker_fence(net->worker);
    *word = value;
    req = ucp_put_nbx(l->peer->ep, word, sizeof(*word), remote, l->rma.rkey, &rp);
    net->unflushed = 1;
    if (UCS_PTR_IS_ERR(req)) {
        ucx_peer_fail(l->peer);
        return NULL;
    }
    return req;
}

/* 1 when the counter's last put is done with (its request released). */
static int counter_idle(dfccl_net_link_t *l, void **req)
{
    if (ucx_req_pending(*req)) return 0;
    if (ucx_req_failed(*req)) ucx_peer_fail(l->peer);
    ucx_req_release(*req);
    *req = NULL;
    return 1;
}

static int rma_out(dfccl_net_t *net, dfccl_net_link_t *l, int *busy)
{
    ucx_side_t *s = &l->out;
    ucx_rma_link_t *r = &l->rma;
    ucp_request_param_t rp;
    int moved = 0, failed = __atomic_load_n(&l->peer->failed, __ATOMIC_ACQUIRE) != 0;
    uint64_t tail = __atomic_load_n(&s->ctrl->tail, __ATOMIC_ACQUIRE), credit, head;

    while (!failed && s->posted < tail) {
        uint32_t k = (uint32_t)(s->posted % l->nslots);
        uint64_t slot = r->peer_fifo + sizeof(dfccl_fifo_ctrl_t) + (uint64_t)k * l->slot_bytes;
        memset(&rp, 0, sizeof(rp));
        s->reqs[k] = ucp_put_nbx(l->peer->ep, s->slots + (size_t)k * l->slot_bytes, s->lens[k],
                                 slot, r->rkey, &rp);
        if (net->sent_bytes != NULL) net->sent_bytes(s->lens[k]);
        net->unflushed = 1;
        s->posted++;
        moved = 1;
    }
    moved |= ucx_out_complete(l);
    /* the tail covers only slots whose puts are complete here: on a
     * transport that takes them in order they are then ahead of it, and
     * the fence orders them where lanes could overtake */
    if (!failed && r->tail_put < s->done && counter_idle(l, &r->tail_req)) {
        r->tail_req = counter_put(net, l, &r->tail_word, s->done,
                                  r->peer_fifo + offsetof(dfccl_fifo_ctrl_t, tail));
        r->tail_put = s->done;
        moved = 1;
    }
    credit = __atomic_load_n(r->credit, __ATOMIC_ACQUIRE);
    head = credit < s->done ? credit : s->done;
    __atomic_store_n(&s->ctrl->head, head, __ATOMIC_RELEASE);
    if (!failed)
        *busy |= r->tail_put < tail || ucx_req_pending(r->tail_req) || credit < tail;
    return moved;
}

static int rma_in(dfccl_net_t *net, dfccl_net_link_t *l, int *busy)
{
    ucx_rma_link_t *r = &l->rma;
    int moved = 0, failed = __atomic_load_n(&l->peer->failed, __ATOMIC_ACQUIRE) != 0;
    uint64_t head = __atomic_load_n(&l->in.ctrl->head, __ATOMIC_ACQUIRE);

    if (!failed && r->head_put < head && counter_idle(l, &r->head_req)) {
        r->head_req = counter_put(net, l, &r->head_word, head, r->peer_credit);
        r->head_put = head;
        moved = 1;
    }
    if (!failed) *busy |= r->head_put < head || ucx_req_pending(r->head_req);
    return moved;
}

static int rma_pump(dfccl_net_t *net, dfccl_net_link_t *l, int *busy)
{
    int moved = 0;

    if (l->out.on) moved |= rma_out(net, l, busy);
    if (l->in.on) moved |= rma_in(net, l, busy);
    return moved;
}

/* Closing: our requests complete, then our puts landed (an endpoint flush),
 * then we tell the peer that we put nothing more; the peer's region may go
 * only then, and ours once the peer said the same. */
static int rma_drained(dfccl_net_t *net, dfccl_net_link_t *l)
{
    ucx_rma_link_t *r = &l->rma;
    int failed = __atomic_load_n(&l->peer->failed, __ATOMIC_ACQUIRE) != 0;

    if (l->out.on) ucx_out_complete(l);
    if ((l->out.on && l->out.done < l->out.posted) || !counter_idle(l, &r->tail_req) ||
        !counter_idle(l, &r->head_req))
        return UCX_DRAIN_BUSY;
    if (failed) return UCX_DRAIN_DONE;   /* a dead peer puts nothing more either */
    if (!r->flushed) {
        if (r->flush_req == NULL) {
            ucp_request_param_t rp;
            memset(&rp, 0, sizeof(rp));
            r->flush_req = ucp_ep_flush_nbx(l->peer->ep, &rp);
            if (r->flush_req == NULL) r->flushed = 1;
        }
        if (r->flush_req != NULL) {
            if (ucx_req_pending(r->flush_req)) return UCX_DRAIN_BUSY;
            if (ucx_req_failed(r->flush_req)) ucx_peer_fail(l->peer);
            ucx_req_release(r->flush_req);
            r->flush_req = NULL;
            r->flushed = 1;
        }
    }
    if (!r->close_sent) {
        ucx_ctrl_msg_t msg;
        memset(&msg, 0, sizeof(msg));
        msg.kind = UCX_CTRL_CLOSE;
        if (!l->peer->failed) ucx_ctrl_send(net, l, &msg);
        r->close_sent = 1;
    }
    if (l->peer_closed || l->peer->failed) return UCX_DRAIN_DONE;
    /* the peer's close arrives when it closes its end, which may be much
     * later; matching it needs no pumping of ours */
    return UCX_DRAIN_WAIT;
}

static void rma_forget(dfccl_net_t *net, dfccl_net_link_t *l)
{
    (void)net;
    if (l->rma.rkey != NULL) ucp_rkey_destroy(l->rma.rkey);
    l->rma.rkey = NULL;
}

static void rma_free(dfccl_net_t *net, dfccl_net_link_t *l)
{
    if (l->rma.region != NULL) region_put(net, l->rma.region);
    free(l->mem);
}

const ucx_data_ops_t ucx_rma_ops = {
    .open    = rma_open,
    .pump    = rma_pump,
    .drained = rma_drained,
    .forget  = rma_forget,
    .free    = rma_free,
};
