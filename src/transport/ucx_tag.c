/*
 * ucx_tag.c - the tagged data path of a link (net.h): every filled slot goes
 * as a tagged message into a receive the peer keeps posted in the same
 * slot of its FIFO. Both FIFOs live in the link's own memory, near this
 * process, or (open_at) in memory the caller provides.
 */
#include <stdlib.h>
#include <string.h>
#include "transport/locality.h"
#include "transport/ucx_net.h"

static size_t side_bytes(const dfccl_net_link_t *l)
{
    return dfccl_fifo_bytes(l->slot_bytes, l->nslots) + l->nslots * (sizeof(void *) + sizeof(uint32_t));
}

static char *side_init(ucx_side_t *s, char *mem, const dfccl_net_link_t *l, dfccl_fifo_t *view,
                       int peer, int sending)
{
    void **reqs = (void **)(mem + dfccl_fifo_bytes(l->slot_bytes, l->nslots));
    uint32_t *lens = (uint32_t *)(reqs + l->nslots);

    ucx_side_view(s, mem, reqs, lens, l, view, peer);
    if (!sending) view->lens = NULL;   /* the executor writes lens only where it sends */
    memset(s->ctrl, 0, sizeof(*s->ctrl));
    return mem + side_bytes(l);
}

static dfccl_status_t tag_open(dfccl_net_t *net, dfccl_net_link_t *l,
                               const dfccl_net_link_params_t *p, dfccl_fifo_t *send_fifo,
                               dfccl_fifo_t *recv_fifo)
{
    char *mem;

    (void)net;
    /* near this process: the executor and the pump work through it */
    l->mem = mem = dfccl_locality_alloc(2 * side_bytes(l));
    if (mem == NULL) return DFCCL_ERR_NO_MEMORY;
    l->own_fifos = 1;
    if (p->sends) mem = side_init(&l->out, mem, l, send_fifo, p->peer, 1);
    if (p->receives) side_init(&l->in, mem, l, recv_fifo, p->peer, 0);
    return DFCCL_OK;
}

/* A side in the caller's memory: control block, slots (unless apart), then
 * the bytes per slot when sending (net.h's dfccl_net_fifo_bytes); the
 * requests stay in the link's own. */
static void side_init_at(ucx_side_t *s, char *mem, char *apart, int cuda, void **reqs,
                         const dfccl_net_link_t *l, dfccl_fifo_t *view, int peer, int sending)
{
    size_t inline_bytes = apart != NULL ? 0 : l->slot_bytes;
    uint32_t *lens = sending ? (uint32_t *)(mem + dfccl_fifo_bytes(inline_bytes, l->nslots)) : NULL;

    ucx_side_view(s, mem, reqs, lens, l, view, peer);
    if (apart != NULL) {
        s->slots = view->slots = apart;
        s->cuda = cuda;
    }
    memset(s->ctrl, 0, sizeof(*s->ctrl));   /* the caller's memory: not known to be zeroed */
}

dfccl_status_t ucx_tag_open_at(dfccl_net_link_t *l, const dfccl_net_link_params_t *p,
                               void *send_mem, void *recv_mem, dfccl_fifo_t *send_fifo,
                               dfccl_fifo_t *recv_fifo)
{
    void **reqs;

    /* l->mem: the requests of both sides */
    l->mem = reqs = calloc(2 * (size_t)l->nslots, sizeof(void *));
    if (reqs == NULL) return DFCCL_ERR_NO_MEMORY;
    l->own_fifos = 0;
    if (p->sends)
        side_init_at(&l->out, send_mem, p->send_slots, p->slots_cuda, reqs, l, send_fifo,
                     p->peer, 1);
    if (p->receives)
        side_init_at(&l->in, recv_mem, p->recv_slots, p->slots_cuda, reqs + l->nslots, l,
                     recv_fifo, p->peer, 0);
    return DFCCL_OK;
}

/* A request's parameters: UCX told the slots' memory type where they are
 * CUDA memory, rather than finding it out per request. */
static void side_params(const ucx_side_t *s, ucp_request_param_t *rp)
{
    memset(rp, 0, sizeof(*rp));
    if (s->cuda) {
        rp->op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
        rp->memory_type = UCS_MEMORY_TYPE_CUDA;
    }
}

static int pump_out(dfccl_net_t *net, dfccl_net_link_t *l, int closing)
{
    ucx_side_t *s = &l->out;
    ucp_request_param_t rp;
    int moved = 0;
    uint64_t tail = __atomic_load_n(&s->ctrl->tail, __ATOMIC_ACQUIRE);

    while (!closing && s->posted < tail) {
        uint32_t k = (uint32_t)(s->posted % l->nslots);
        side_params(s, &rp);
        s->reqs[k] = ucp_tag_send_nbx(l->peer->ep, s->slots + (size_t)k * l->slot_bytes, s->lens[k],
                                      l->tag_out | (s->posted & UCX_NET_SEQ_MASK), &rp);
        if (net->sent_bytes != NULL) net->sent_bytes(s->lens[k]);
        net->unflushed = 1;
        s->posted++;
        moved = 1;
    }
    moved |= ucx_out_complete(l);
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
        side_params(s, &rp);
        s->reqs[k] = ucp_tag_recv_nbx(net->worker, s->slots + (size_t)k * l->slot_bytes,
                                      l->slot_bytes, l->tag_in | (s->posted & UCX_NET_SEQ_MASK),
                                      UINT64_MAX, &rp);
        s->posted++;
    }
    while (s->done < s->posted) {
        uint32_t k = (uint32_t)(s->done % l->nslots);
        if (ucx_req_pending(s->reqs[k])) break;
        if (ucx_req_failed(s->reqs[k])) {   /* cancelled, or the peer failed: no data */
            if (!closing) ucx_peer_fail(l->peer);
            ucx_req_release(s->reqs[k]);
            s->reqs[k] = NULL;
            s->done++;
            continue;
        }
        ucx_req_release(s->reqs[k]);
        s->reqs[k] = NULL;
        s->done++;
        if (!closing) __atomic_store_n(&s->ctrl->tail, s->done, __ATOMIC_RELEASE);
        moved = 1;
    }
    return moved;
}

static int tag_pump(dfccl_net_t *net, dfccl_net_link_t *l, int *busy)
{
    int moved = 0;

    if (l->out.on) {
        moved |= pump_out(net, l, 0);
        *busy |= l->out.done < __atomic_load_n(&l->out.ctrl->tail, __ATOMIC_ACQUIRE);
    }
    if (l->in.on) moved |= pump_in(net, l, 0);
    return moved;
}

/* Receives cancelled, sends let finish: nothing else writes into our memory. */
static int tag_drained(dfccl_net_t *net, dfccl_net_link_t *l)
{
    int out = 0;

    if (l->in.on && !l->in.cancelled) {
        for (uint32_t k = 0; k < l->nslots; k++)
            if (ucx_req_pending(l->in.reqs[k])) ucp_request_cancel(net->worker, l->in.reqs[k]);
        l->in.cancelled = 1;
    }
    if (l->out.on) {
        pump_out(net, l, 1);
        out |= l->out.done < l->out.posted;
    }
    if (l->in.on) {
        pump_in(net, l, 1);
        out |= l->in.done < l->in.posted;
    }
    return out ? UCX_DRAIN_BUSY : UCX_DRAIN_DONE;
}

static void tag_forget(dfccl_net_t *net, dfccl_net_link_t *l)
{
    (void)net;
    (void)l;
}

static void tag_free(dfccl_net_t *net, dfccl_net_link_t *l)
{
    (void)net;
    if (l->own_fifos) dfccl_locality_free(l->mem, 2 * side_bytes(l));
    else free(l->mem);
}

const ucx_data_ops_t ucx_tag_ops = {
    .open    = tag_open,
    .pump    = tag_pump,
    .drained = tag_drained,
    .forget  = tag_forget,
    .free    = tag_free,
};
