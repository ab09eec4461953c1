/*
 * ucx_rendezvous_stream.c - the stream operations both sides of the
 * rendezvous use (ucx_rendezvous.h), polled rather than called back: each
 * side tests its operations in its own loop.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include "transport/ucx_rendezvous.h"
#include "util/clock.h"

static void rdv_op_posted(ucs_status_ptr_t p, rdv_op_t *op)
{
    op->req = NULL;
    if (p == NULL) op->status = UCS_OK;                       /* done at once */
    else if (UCS_PTR_IS_ERR(p)) op->status = UCS_PTR_STATUS(p);
    else op->req = p, op->status = UCS_INPROGRESS;
}

/* An operation that needs no request: on a closed endpoint (it fails) or
 * of no bytes (done). 1 when op was settled so. */
static int rdv_op_settled(ucp_ep_h ep, size_t len, rdv_op_t *op)
{
    if (ep != NULL && len > 0) return 0;
    op->req = NULL;
    op->status = ep == NULL ? UCS_ERR_CONNECTION_RESET : UCS_OK;
    return 1;
}

void rdv_recv(ucp_ep_h ep, void *buf, size_t len, rdv_op_t *op)
{
    ucp_request_param_t param = { 0 };
    size_t got = 0;

    if (rdv_op_settled(ep, len, op)) return;
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_STREAM_RECV_FLAG_WAITALL;   /* complete only with all len bytes */
    rdv_op_posted(ucp_stream_recv_nbx(ep, buf, len, &got, &param), op);
}

void rdv_send(ucp_ep_h ep, const void *buf, size_t len, rdv_op_t *op)
{
    ucp_request_param_t param = { 0 };

    if (rdv_op_settled(ep, len, op)) return;
    rdv_op_posted(ucp_stream_send_nbx(ep, buf, len, &param), op);
}

void rdv_op_test(rdv_op_t *op, int is_recv)
{
    size_t got;

    if (op->req == NULL) return;
    op->status = is_recv ? ucp_stream_recv_request_test(op->req, &got)
                         : ucp_request_check_status(op->req);
    if (op->status != UCS_INPROGRESS) {
        ucp_request_free(op->req);
        op->req = NULL;
    }
}

void rdv_ep_close(ucp_worker_h worker, ucp_ep_h ep, int force)
{
    ucp_request_param_t param = { 0 };
    ucs_status_ptr_t req;
    uint64_t deadline = dfccl_now_ns() + RDV_CLOSE_NS;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    req = ucp_ep_close_nbx(ep, &param);
    if (req == NULL || UCS_PTR_IS_ERR(req)) return;
    while (ucp_request_check_status(req) == UCS_INPROGRESS && dfccl_now_ns() < deadline)
        ucp_worker_progress(worker);
    if (ucp_request_check_status(req) == UCS_INPROGRESS && !force) {
        ucp_request_free(req);   /* a flush that does not end: force it */
        param.flags = UCP_EP_CLOSE_FLAG_FORCE;
        req = ucp_ep_close_nbx(ep, &param);
        if (req == NULL || UCS_PTR_IS_ERR(req)) return;
        deadline = dfccl_now_ns() + RDV_CLOSE_NS;
        while (ucp_request_check_status(req) == UCS_INPROGRESS && dfccl_now_ns() < deadline)
            ucp_worker_progress(worker);
    }
    ucp_request_free(req);
}

const char *dfccl_rendezvous_addr_string(const struct sockaddr_storage *sa, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN] = "?";

    if (sa->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        snprintf(buf, len, "%s:%u", host, ntohs(in->sin_port));
    } else {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        snprintf(buf, len, "[%s]:%u", host, ntohs(in6->sin6_port));
    }
    return buf;
}
