/*
 * ucx_rendezvous_service.c - the rendezvous's service (rendezvous.h): a
 * UCP context, worker and listener of its own, served by a thread that
 * sleeps on the worker's event descriptor between events. It is not a rank
 * (the process that made the id may run none), so it does not share the
 * engine's UCP context, which ranks open with their first communicator.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "transport/ucx_rendezvous.h"
#include "util/clock.h"
#include "util/log.h"

typedef struct rdv_conn {
    ucp_ep_h    ep;
    int         failed;      /* ucs_status_t of the endpoint's failure (error handler) */
    int         rank;        /* -1 until its hello was taken */
    uint64_t    since_ns;    /* connected at */
    rdv_op_t    recv, send;
    rdv_hello_t hello;
    rdv_ack_t   ack;
    uint64_t    part_bytes;  /* this exchange's part, as the rank announced it */
} rdv_conn_t;

typedef struct {
    ucp_context_h      context;
    ucp_worker_h       worker;
    ucp_listener_h     listener;
    int                efd;
    uint64_t           token, timeout_ns;
    char               where[80];
    ucp_conn_request_h incoming[64];   /* taken from the listener, not yet accepted */
    int                nincoming;
    rdv_conn_t       **conns;          /* every accepted connection */
    int                nconns, cap;
    rdv_conn_t       **ranks;          /* by rank, once joined */
    int                size, joined;
    char              *whole;
    size_t             whole_cap;
} rdv_service_t;

/* The services still running: their threads are detached, and a process
 * that leaves (the set-up it served failed, or it made the id and is done)
 * must not tear UCX down under one: a service inside UCX while exit ran the
 * library's destructors crashed the process. Its exit tells them to end
 * (each looks within a wait's 100 ms) and waits for them, bounded. */
#define RDV_EXIT_WAIT_S 3
static pthread_mutex_t rdv_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  rdv_ended = PTHREAD_COND_INITIALIZER;
static int rdv_running, rdv_exit_hooked, rdv_exiting;

static void rdv_at_exit(void)
{
    struct timespec until;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += RDV_EXIT_WAIT_S;
    __atomic_store_n(&rdv_exiting, 1, __ATOMIC_RELEASE);
    pthread_mutex_lock(&rdv_lock);
    while (rdv_running > 0)
        if (pthread_cond_timedwait(&rdv_ended, &rdv_lock, &until) == ETIMEDOUT) break;
    pthread_mutex_unlock(&rdv_lock);
}

static int rdv_told_to_end(void)
{
    return __atomic_load_n(&rdv_exiting, __ATOMIC_ACQUIRE);
}

static void rdv_conn_failed(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    rdv_conn_t *c = arg;
    (void)ep;
    c->failed = (int)status;
}

static void rdv_on_connect(ucp_conn_request_h request, void *arg)
{
    rdv_service_t *s = arg;

    if (s->nincoming < (int)(sizeof(s->incoming) / sizeof(s->incoming[0])))
        s->incoming[s->nincoming++] = request;
    else
        ucp_listener_reject(s->listener, request);
}

/* Runs the worker; sleeps on its event descriptor (at most until
 * deadline_ns, and 100 ms) when nothing happened. */
static void rdv_wait(rdv_service_t *s, uint64_t deadline_ns)
{
    uint64_t now = dfccl_now_ns();
    struct pollfd pfd = { s->efd, POLLIN, 0 };
    int ms;

    if (ucp_worker_progress(s->worker) != 0) return;
    if (ucp_worker_arm(s->worker) == UCS_ERR_BUSY) return;
    ms = deadline_ns > now ? (int)((deadline_ns - now) / 1000000) + 1 : 0;
    poll(&pfd, 1, ms < 100 ? ms : 100);
}

/* Accepts what the listener took: an endpoint and a receive of the hello. */
static void rdv_accept(rdv_service_t *s)
{
    for (int i = 0; i < s->nincoming; i++) {
        ucp_ep_params_t ep = { 0 };
        rdv_conn_t *c = calloc(1, sizeof(*c));
        if (c != NULL && s->nconns == s->cap) {
            int cap = s->cap ? 2 * s->cap : 16;
            rdv_conn_t **grown = realloc(s->conns, sizeof(*grown) * (size_t)cap);
            if (grown == NULL) {
                free(c);
                c = NULL;
            } else {
                s->conns = grown;
                s->cap = cap;
            }
        }
        if (c == NULL) {
            ucp_listener_reject(s->listener, s->incoming[i]);
            continue;
        }
        ep.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep.conn_request = s->incoming[i];
        ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
        ep.err_handler.cb = rdv_conn_failed;
        ep.err_handler.arg = c;
        if (ucp_ep_create(s->worker, &ep, &c->ep) != UCS_OK) {
            free(c);
            continue;
        }
        c->rank = -1;
        c->since_ns = dfccl_now_ns();
        rdv_recv(c->ep, &c->hello, sizeof(c->hello), &c->recv);
        s->conns[s->nconns++] = c;
    }
    s->nincoming = 0;
}

static void rdv_drop(rdv_service_t *s, rdv_conn_t *c)
{
    rdv_ep_close(s->worker, c->ep, 1);
    c->ep = NULL;
}

/* A hello that arrived: the rank joins, or the connection is dropped. */
static void rdv_take_hello(rdv_service_t *s, rdv_conn_t *c)
{
    const rdv_hello_t *h = &c->hello;

    if (h->magic != RDV_MAGIC || h->token != s->token || h->size <= 0 ||
        (s->size != 0 && h->size != s->size) || h->rank < 0 || h->rank >= h->size ||
        (s->ranks != NULL && s->ranks[h->rank] != NULL)) {
        dfccl_error("bootstrap rendezvous at %s: refused a connection (not of this id, or a"
                    " rank or size that does not fit)", s->where);
        rdv_drop(s, c);
        return;
    }
    if (s->ranks == NULL) {
        if ((s->ranks = calloc((size_t)h->size, sizeof(*s->ranks))) == NULL) {
            rdv_drop(s, c);
            return;
        }
        s->size = h->size;
    }
    c->rank = h->rank;
    s->ranks[c->rank] = c;
    s->joined++;
    c->ack.magic = RDV_MAGIC;
    rdv_send(c->ep, &c->ack, sizeof(c->ack), &c->send);
}

/* Until every rank of the size the first one announced is in, within the
 * timeout. 0, or -1 after a message. */
static int rdv_joins(rdv_service_t *s)
{
    uint64_t deadline = dfccl_now_ns() + s->timeout_ns;

    while (s->size == 0 || s->joined < s->size) {
        uint64_t now = dfccl_now_ns();
        if (rdv_told_to_end()) return -1;   /* the process leaves */
        if (now >= deadline) {
            if (s->size == 0)
                dfccl_error("bootstrap rendezvous at %s: no rank joined within %.0f s; the"
                            " service ends", s->where, s->timeout_ns / 1e9);
            else
                dfccl_error("bootstrap rendezvous at %s: %d of %d ranks joined within %.0f s;"
                            " the set-up of those that did fails", s->where, s->joined, s->size,
                            s->timeout_ns / 1e9);
            return -1;
        }
        rdv_accept(s);
        for (int i = 0; i < s->nconns; i++) {
            rdv_conn_t *c = s->conns[i];
            if (c->ep == NULL) continue;
            if (c->rank >= 0) {
                rdv_op_test(&c->send, 0);
                if (c->failed || (c->send.status != UCS_OK && c->send.status != UCS_INPROGRESS)) {
                    dfccl_error("bootstrap rendezvous at %s: rank %d left before every rank"
                                " joined; every rank's set-up fails", s->where, c->rank);
                    return -1;
                }
                continue;
            }
            rdv_op_test(&c->recv, 1);
            if (c->recv.status == UCS_OK) {
                rdv_take_hello(s, c);
            } else if (c->recv.status != UCS_INPROGRESS || c->failed) {
                rdv_drop(s, c);   /* gone before it said who it is */
            } else if (dfccl_now_ns() > c->since_ns + RDV_HELLO_NS) {
                dfccl_error("bootstrap rendezvous at %s: dropped a connection that sent"
                            " nothing within %.0f s", s->where, RDV_HELLO_NS / 1e9);
                rdv_drop(s, c);
            }
        }
        if (s->size == 0 || s->joined < s->size) rdv_wait(s, deadline);
    }
    return 0;
}

/* Waits until every rank's op (recv or send) is done. 0; 1 when every
 * rank had closed before sending anything (only where quiet_end); -1 after
 * a message. */
static int rdv_wait_all(rdv_service_t *s, int is_recv, int quiet_end, const char *what)
{
    uint64_t deadline = dfccl_now_ns() + s->timeout_ns;

    for (;;) {
        int done = 0, closed = 0, left = -1;
        for (int r = 0; r < s->size; r++) {
            rdv_conn_t *c = s->ranks[r];
            rdv_op_t *op = is_recv ? &c->recv : &c->send;
            rdv_op_test(op, is_recv);
            if (op->status == UCS_OK) done++;
            else if (op->status != UCS_INPROGRESS || c->failed) closed++, left = r;
        }
        if (done == s->size) return 0;
        if (quiet_end && closed == s->size) return 1;   /* the set-up is over */
        if (rdv_told_to_end()) return -1;                /* the process leaves */
        if (closed > 0 && (!quiet_end || done > 0)) {
            dfccl_error("bootstrap rendezvous at %s: rank %d left %s; every rank's set-up"
                        " fails", s->where, left, what);
            return -1;
        }
        if (dfccl_now_ns() >= deadline) {
            for (int r = 0; r < s->size && left < 0; r++) {
                rdv_op_t *op = is_recv ? &s->ranks[r]->recv : &s->ranks[r]->send;
                if (op->status == UCS_INPROGRESS) left = r;
            }
            dfccl_error("bootstrap rendezvous at %s: rank %d stalled %s for %.0f s; every"
                        " rank's set-up fails", s->where, left, what, s->timeout_ns / 1e9);
            return -1;
        }
        rdv_wait(s, deadline);
    }
}

/* Exchanges until every rank closed between them. 0, or -1 after a message. */
static int rdv_exchanges(rdv_service_t *s)
{
    for (int round = 0;; round++) {
        uint64_t bytes;
        int rc;

        for (int r = 0; r < s->size; r++)
            rdv_recv(s->ranks[r]->ep, &s->ranks[r]->part_bytes, sizeof(uint64_t),
                     &s->ranks[r]->recv);
        rc = rdv_wait_all(s, 1, round > 0, "between exchanges");
        if (rc != 0) return rc > 0 ? 0 : -1;
        bytes = s->ranks[0]->part_bytes;
        for (int r = 1; r < s->size; r++)
            if (s->ranks[r]->part_bytes != bytes) {
                dfccl_error("bootstrap rendezvous at %s: ranks 0 and %d send parts of %llu and"
                            " %llu bytes in one exchange", s->where, r,
                            (unsigned long long)bytes,
                            (unsigned long long)s->ranks[r]->part_bytes);
                return -1;
            }
        if ((size_t)s->size * bytes > s->whole_cap) {
            char *grown = realloc(s->whole, (size_t)s->size * bytes);
            if (grown == NULL) return -1;
            s->whole = grown;
            s->whole_cap = (size_t)s->size * bytes;
        }
        for (int r = 0; r < s->size; r++)
            rdv_recv(s->ranks[r]->ep, s->whole + (size_t)r * bytes, bytes, &s->ranks[r]->recv);
        if (rdv_wait_all(s, 1, 0, "during an exchange") != 0) return -1;
        for (int r = 0; r < s->size; r++)
            rdv_send(s->ranks[r]->ep, s->whole, (size_t)s->size * bytes, &s->ranks[r]->send);
        if (rdv_wait_all(s, 0, 0, "during an exchange") != 0) return -1;
    }
}

static void rdv_service_free(rdv_service_t *s)
{
    for (int i = 0; i < s->nincoming; i++) ucp_listener_reject(s->listener, s->incoming[i]);
    if (s->listener != NULL) ucp_listener_destroy(s->listener);
    for (int i = 0; i < s->nconns; i++) {
        rdv_conn_t *c = s->conns[i];
        if (c->ep != NULL) rdv_ep_close(s->worker, c->ep, 1);   /* fails the ranks' waits */
        /* closed endpoints complete their requests */
        rdv_op_test(&c->recv, 1);
        rdv_op_test(&c->send, 0);
        if (c->recv.req != NULL) ucp_request_free(c->recv.req);
        if (c->send.req != NULL) ucp_request_free(c->send.req);
        free(c);
    }
    free(s->conns);
    free(s->ranks);
    free(s->whole);
    if (s->worker != NULL) ucp_worker_destroy(s->worker);
    if (s->context != NULL) ucp_cleanup(s->context);
    free(s);
}

static void *rdv_service_main(void *arg)
{
    rdv_service_t *s = arg;

    if (rdv_joins(s) == 0) {
        ucp_listener_destroy(s->listener);   /* an id serves one communicator */
        s->listener = NULL;
        for (int i = 0; i < s->nconns; i++)
            if (s->conns[i]->ep != NULL && s->conns[i]->rank < 0) rdv_drop(s, s->conns[i]);
        (void)rdv_exchanges(s);
    }
    rdv_service_free(s);
    pthread_mutex_lock(&rdv_lock);
    rdv_running--;
    pthread_cond_broadcast(&rdv_ended);
    pthread_mutex_unlock(&rdv_lock);
    return NULL;
}

static dfccl_status_t rdv_service_open(rdv_service_t *s, struct sockaddr_storage *where)
{
    ucp_params_t params = { 0 };
    ucp_worker_params_t wparams = { 0 };
    ucp_listener_params_t lparams = { 0 };
    ucp_listener_attr_t attr = { 0 };
    ucs_status_t st;

    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    /* the features of the engine's contexts that connect to it (ucx.c), RMA
     * included: an endpoint between contexts whose lanes differ fails its
     * wire-up */
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_STREAM | UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
    if ((st = ucp_init(&params, NULL, &s->context)) != UCS_OK) goto fail;
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    if ((st = ucp_worker_create(s->context, &wparams, &s->worker)) != UCS_OK) goto fail;
    if ((st = ucp_worker_get_efd(s->worker, &s->efd)) != UCS_OK) goto fail;
    lparams.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    lparams.sockaddr.addr = (const struct sockaddr *)where;
    lparams.sockaddr.addrlen = where->ss_family == AF_INET ? sizeof(struct sockaddr_in)
                                                           : sizeof(struct sockaddr_in6);
    lparams.conn_handler.cb = rdv_on_connect;
    lparams.conn_handler.arg = s;
    if ((st = ucp_listener_create(s->worker, &lparams, &s->listener)) != UCS_OK) goto fail;
    attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    if ((st = ucp_listener_query(s->listener, &attr)) != UCS_OK) goto fail;
    memcpy(where, &attr.sockaddr, sizeof(*where));
    dfccl_rendezvous_addr_string(where, s->where, sizeof(s->where));
    return DFCCL_OK;

fail:
    dfccl_rendezvous_addr_string(where, s->where, sizeof(s->where));
    dfccl_error("bootstrap: cannot listen for the rendezvous on %s over UCX: %s", s->where,
                ucs_status_string(st));
    return DFCCL_ERR_SYSTEM;
}

dfccl_status_t dfccl_rendezvous_serve(struct sockaddr_storage *where, uint64_t token,
                                      double timeout_sec)
{
    rdv_service_t *s = calloc(1, sizeof(*s));
    pthread_t thread;

    if (s == NULL) return DFCCL_ERR_NO_MEMORY;
    s->token = token;
    s->timeout_ns = (uint64_t)(timeout_sec * 1e9);
    if (rdv_service_open(s, where) != DFCCL_OK) {
        rdv_service_free(s);
        return DFCCL_ERR_SYSTEM;
    }
    pthread_mutex_lock(&rdv_lock);
    if (!rdv_exit_hooked) rdv_exit_hooked = atexit(rdv_at_exit) == 0;
    rdv_running++;
    pthread_mutex_unlock(&rdv_lock);
    if (pthread_create(&thread, NULL, rdv_service_main, s) != 0) {
        pthread_mutex_lock(&rdv_lock);
        rdv_running--;
        pthread_mutex_unlock(&rdv_lock);
        rdv_service_free(s);
        return DFCCL_ERR_SYSTEM;
    }
    pthread_detach(thread);
    return DFCCL_OK;
}
