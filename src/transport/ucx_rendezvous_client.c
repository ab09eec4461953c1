/*
 * ucx_rendezvous_client.c - a rank's side of the rendezvous
 * (rendezvous.h): an endpoint to the service by its socket address, on the
 * engine's worker (under the net lock, as every call into it), and the
 * engine's set-up exchanges over its stream.
 */
#include <netinet/in.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include "transport/ucx_net.h"
#include "transport/ucx_rendezvous.h"
#include "util/clock.h"
#include "util/log.h"

struct dfccl_rendezvous {
    dfccl_net_t *net;
    ucp_ep_h     ep;
    int          failed;       /* ucs_status_t of the endpoint's failure (error handler) */
    int          rank, size;
    char         where[80];
    rdv_hello_t  hello;
    rdv_ack_t    ack;
    uint64_t     part_bytes;
    char        *part;         /* our copy of this exchange's part */
    size_t       part_cap;
    rdv_op_t     send_len, send_part, recv;
};

static void rdv_failed(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    dfccl_rendezvous_t *rdv = arg;
    (void)ep;
    /* from the worker's progress, under the net lock */
    __atomic_store_n(&rdv->failed, (int)status, __ATOMIC_RELEASE);
}

/* The status of what is under way: UCS_OK when all done, UCS_INPROGRESS,
 * or the failure. Under the net lock. */
static ucs_status_t rdv_progress(dfccl_rendezvous_t *rdv)
{
    rdv_op_t *ops[] = { &rdv->send_len, &rdv->send_part, &rdv->recv };
    ucs_status_t outcome = UCS_OK;

    ucx_worker_progress_guarded(rdv->net);
    for (int i = 0; i < 3; i++) {
        rdv_op_test(ops[i], ops[i] == &rdv->recv);
        if (ops[i]->status != UCS_OK && ops[i]->status != UCS_INPROGRESS)
            return ops[i]->status;
        if (ops[i]->status == UCS_INPROGRESS) outcome = UCS_INPROGRESS;
    }
    if (rdv->failed != 0) return (ucs_status_t)rdv->failed;
    return outcome;
}

static void rdv_free(dfccl_rendezvous_t *rdv)
{
    rdv_op_t *ops[] = { &rdv->send_len, &rdv->send_part, &rdv->recv };

    pthread_mutex_lock(&rdv->net->lock);
    if (rdv->ep != NULL) {
        int entered = ucx_guard_enter(rdv->net);   /* the close progresses the worker */
        rdv_ep_close(rdv->net->worker, rdv->ep, rdv->failed != 0);
        ucx_guard_leave(rdv->net, entered);
    }
    for (int i = 0; i < 3; i++) {
        rdv_op_test(ops[i], ops[i] == &rdv->recv);
        if (ops[i]->req != NULL) ucp_request_free(ops[i]->req);
    }
    pthread_mutex_unlock(&rdv->net->lock);
    free(rdv->part);
    free(rdv);
}

dfccl_status_t dfccl_rendezvous_join(dfccl_net_t *net, const struct sockaddr_storage *where,
                                     uint64_t token, int rank, int size, double timeout_sec,
                                     dfccl_rendezvous_t **rdv_p)
{
    dfccl_rendezvous_t *rdv = calloc(1, sizeof(*rdv));
    uint64_t deadline = dfccl_now_ns() + (uint64_t)(timeout_sec * 1e9);
    ucp_ep_params_t ep = { 0 };
    ucs_status_t st;

    if (rdv == NULL) return DFCCL_ERR_NO_MEMORY;
    rdv->net = net;
    rdv->rank = rank;
    rdv->size = size;
    rdv->send_len.status = rdv->send_part.status = rdv->recv.status = UCS_OK;
    dfccl_rendezvous_addr_string(where, rdv->where, sizeof(rdv->where));
    ep.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                    UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    ep.sockaddr.addr = (const struct sockaddr *)where;
    ep.sockaddr.addrlen = where->ss_family == AF_INET ? sizeof(struct sockaddr_in)
                                                      : sizeof(struct sockaddr_in6);
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = rdv_failed;
    ep.err_handler.arg = rdv;
    rdv->hello = (rdv_hello_t){ RDV_MAGIC, token, rank, size };
    pthread_mutex_lock(&net->lock);
    st = ucp_ep_create(net->worker, &ep, &rdv->ep);
    if (st == UCS_OK) {
        rdv_send(rdv->ep, &rdv->hello, sizeof(rdv->hello), &rdv->send_len);
        rdv_recv(rdv->ep, &rdv->ack, sizeof(rdv->ack), &rdv->recv);
    }
    pthread_mutex_unlock(&net->lock);
    /* the service acknowledges the hello at once: wait for that, bounded */
    while (st == UCS_OK) {
        ucs_status_t now_st;
        pthread_mutex_lock(&net->lock);
        now_st = rdv_progress(rdv);
        pthread_mutex_unlock(&net->lock);
        if (now_st != UCS_INPROGRESS) {
            st = now_st;
            break;
        }
        if (dfccl_now_ns() >= deadline) {
            st = UCS_ERR_TIMED_OUT;
            break;
        }
        sched_yield();
    }
    if (st != UCS_OK || rdv->ack.magic != RDV_MAGIC) {
        if (st == UCS_ERR_TIMED_OUT)
            dfccl_error("rank %d: the bootstrap rendezvous at %s did not answer within %.0f s"
                        " (is the id's process alive, and its address reachable from here?)",
                        rank, rdv->where, timeout_sec);
        else
            dfccl_error("rank %d: the bootstrap rendezvous at %s refused or could not be"
                        " reached (%s) within the set-up timeout of %.0f s: its service is"
                        " gone (a stale id), it serves another set of ranks, or rank %d of %d"
                        " does not fit it", rank, rdv->where,
                        ucs_status_string(st == UCS_OK ? UCS_ERR_INVALID_PARAM : st),
                        timeout_sec, rank, size);
        rdv->failed = rdv->failed != 0 ? rdv->failed : (int)UCS_ERR_CANCELED;
        rdv_free(rdv);
        return DFCCL_ERR_BOOTSTRAP;
    }
    *rdv_p = rdv;
    return DFCCL_OK;
}

int dfccl_rendezvous_allgather_start(void *arg, const void *sendbuf, void *recvbuf, size_t bytes,
                                     void **request_p)
{
    dfccl_rendezvous_t *rdv = arg;
    int rc = 0;

    if (__atomic_load_n(&rdv->failed, __ATOMIC_ACQUIRE) != 0) return -1;
    if (bytes > rdv->part_cap) {
        char *grown = realloc(rdv->part, bytes);
        if (grown == NULL) return -1;
        rdv->part = grown;
        rdv->part_cap = bytes;
    }
    if (bytes > 0) memcpy(rdv->part, sendbuf, bytes);
    rdv->part_bytes = bytes;
    pthread_mutex_lock(&rdv->net->lock);
    rdv_send(rdv->ep, &rdv->part_bytes, sizeof(rdv->part_bytes), &rdv->send_len);
    rdv_send(rdv->ep, rdv->part, bytes, &rdv->send_part);
    rdv_recv(rdv->ep, recvbuf, (size_t)rdv->size * bytes, &rdv->recv);
    ucs_status_t st = rdv_progress(rdv);
    if (st != UCS_OK && st != UCS_INPROGRESS) rc = -1;
    pthread_mutex_unlock(&rdv->net->lock);
    *request_p = rdv;
    return rc;
}

int dfccl_rendezvous_allgather_test(void *arg, void *request)
{
    dfccl_rendezvous_t *rdv = arg;
    ucs_status_t st;

    (void)request;
    pthread_mutex_lock(&rdv->net->lock);
    st = rdv_progress(rdv);
    pthread_mutex_unlock(&rdv->net->lock);
    if (st == UCS_INPROGRESS) return 0;
    if (st == UCS_OK) return 1;
    dfccl_error("rank %d: the bootstrap rendezvous at %s ended the set-up (%s): another rank"
                " left or stalled (the rendezvous's own message says which)", rdv->rank,
                rdv->where, ucs_status_string(st));
    return -1;
}

void dfccl_rendezvous_allgather_cancel(void *arg, void *request)
{
    dfccl_rendezvous_t *rdv = arg;

    (void)request;
    pthread_mutex_lock(&rdv->net->lock);
    if (rdv->ep != NULL) rdv_ep_close(rdv->net->worker, rdv->ep, 1);   /* fails the others */
    rdv->ep = NULL;
    if (rdv->failed == 0) rdv->failed = (int)UCS_ERR_CANCELED;
    pthread_mutex_unlock(&rdv->net->lock);
}

void dfccl_rendezvous_leave(dfccl_rendezvous_t *rdv)
{
    if (rdv != NULL) rdv_free(rdv);
}
