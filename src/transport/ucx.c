/*
 * ucx.c - the UCX side of net.h: context, worker, endpoints shared by the
 * links to one peer process, and the progress of everything.
 */
#include <stdlib.h>
#include <string.h>
#include "util/clock.h"
#include "util/log.h"
#include "transport/ucx_net.h"
#include "core/wait_policy.h"

int dfccl_net_available(char *why, size_t len)
{
    (void)why;
    (void)len;
    return 1;
}

static void ucx_peer_failed(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    dfccl_net_peer_t *peer = arg;
    (void)ep;
    /* the pump and the watch read it; UCX calls this from progress, under
     * the net lock */
    __atomic_store_n(&peer->failed, (int)status, __ATOMIC_RELEASE);
}

dfccl_status_t dfccl_net_open(dfccl_net_t **net_p, dfccl_net_protocol_t protocol, int rendezvous,
                              void (*sent_bytes)(uint64_t bytes))
{
    ucp_params_t params;
    ucp_worker_params_t wparams;
    ucp_context_attr_t attr;
    ucp_config_t *config;
    ucs_status_t st;
    dfccl_net_t *net;

    if (*net_p != NULL) return DFCCL_OK;
    net = calloc(1, sizeof(*net));
    if (net == NULL) return DFCCL_ERR_NO_MEMORY;
    pthread_mutex_init(&net->lock, NULL);
    net->sent_bytes = sent_bytes;
    st = ucp_config_read(NULL, NULL, &config);
    if (st != UCS_OK) goto err;
    /* a receive waits posted for every slot the receiver has room for:
     * eager messages land in it at once (net_rendezvous says why) */
    if (!rendezvous) {
        st = ucp_config_modify(config, "RNDV_THRESH", "inf");
        if (st != UCS_OK) {
            ucp_config_release(config);
            goto err;
        }
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    /* tagged messages carry the links; the stream, the set-up exchanges of
     * communicators made from a unique id (ucx_rendezvous_client.c) */
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_STREAM;
    /* RMA adds lanes (or their emulation) to every endpoint: only for the
     * protocol that puts */
    if (protocol == DFCCL_NET_RMA) params.features |= UCP_FEATURE_RMA;
    params.mt_workers_shared = 0;
    st = ucp_init(&params, config, &net->context);
    ucp_config_release(config);
    if (st != UCS_OK) goto err;
    memset(&wparams, 0, sizeof(wparams));
    /* every call into UCX holds the net lock */
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    st = ucp_worker_create(net->context, &wparams, &net->worker);
    if (st != UCS_OK) {
        ucp_cleanup(net->context);
        goto err;
    }
    st = ucp_worker_get_address(net->worker, &net->address, &net->address_len);
    if (st != UCS_OK) {
        ucp_worker_destroy(net->worker);
        ucp_cleanup(net->context);
        goto err;
    }
    net->next_id = 1;
    net->protocol = protocol;
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    net->cuda_memory = ucp_context_query(net->context, &attr) == UCS_OK &&
                       (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
    dfccl_info("network transport: UCX %s started, %s protocol%s", ucp_get_version_string(),
               protocol == DFCCL_NET_RMA ? "RMA" : "tagged",
               net->cuda_memory ? ", CUDA memory" : "");
    *net_p = net;
    return DFCCL_OK;

err:
    dfccl_error("UCX could not be started: %s", ucs_status_string(st));
    pthread_mutex_destroy(&net->lock);
    free(net);
    return DFCCL_ERR_SYSTEM;
}

int dfccl_net_cuda_memory(const dfccl_net_t *net)
{
    return net->cuda_memory;
}

void dfccl_net_guard_progress(dfccl_net_t *net, int (*enter)(void *arg),
                              void (*leave)(void *arg, int entered), void *arg)
{
    pthread_mutex_lock(&net->lock);
    net->guard_enter = enter;
    net->guard_leave = enter != NULL ? leave : NULL;
    net->guard_arg = enter != NULL ? arg : NULL;
    pthread_mutex_unlock(&net->lock);
}

int ucx_guard_enter(dfccl_net_t *net)
{
    return net->guard_enter != NULL ? net->guard_enter(net->guard_arg) : 0;
}

void ucx_guard_leave(dfccl_net_t *net, int entered)
{
    if (net->guard_leave != NULL) net->guard_leave(net->guard_arg, entered);
}

unsigned ucx_worker_progress_guarded(dfccl_net_t *net)
{
    int entered = ucx_guard_enter(net);
    unsigned n = ucp_worker_progress(net->worker);

    ucx_guard_leave(net, entered);
    return n;
}

dfccl_status_t dfccl_net_address(dfccl_net_t *net, void *buf, size_t max, size_t *len)
{
    if (net->address_len > max) {
        dfccl_error("the UCX worker address takes %zu bytes, more than the %zu a hello holds",
                    net->address_len, max);
        return DFCCL_ERR_UNSUPPORTED;
    }
    memcpy(buf, net->address, net->address_len);
    *len = net->address_len;
    return DFCCL_OK;
}

uint32_t dfccl_net_link_ids(dfccl_net_t *net, uint32_t n)
{
    uint32_t first;

    pthread_mutex_lock(&net->lock);
    /* ids are 24 bits; a block never wraps in the middle, and 0 is unused */
    if (net->next_id + n > UCX_NET_ID_LIMIT) net->next_id = 1;
    first = net->next_id;
    net->next_id += n;
    pthread_mutex_unlock(&net->lock);
    return first;
}

/* Under the net lock. */
dfccl_status_t ucx_peer_get(dfccl_net_t *net, const void *addr, size_t len, const char *host,
                            dfccl_net_peer_t **peer_p)
{
    ucp_ep_params_t ep;
    dfccl_net_peer_t *peer;
    ucs_status_t st;

    for (peer = net->peers; peer != NULL; peer = peer->next)
        if (peer->addr_len == len && memcmp(peer->addr, addr, len) == 0 && !peer->failed) {
            peer->refs++;
            *peer_p = peer;
            return DFCCL_OK;
        }
    peer = calloc(1, sizeof(*peer) + len);
    if (peer == NULL) return DFCCL_ERR_NO_MEMORY;
    memcpy(peer->addr, addr, len);
    peer->addr_len = len;
    snprintf(peer->host, sizeof(peer->host), "%s", host);
    memset(&ep, 0, sizeof(ep));
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.address = (const ucp_address_t *)peer->addr;
    /* a peer that dies fails the endpoint (and the collectives that need
     * it) instead of leaving them to the watchdog */
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = ucx_peer_failed;
    ep.err_handler.arg = peer;
    st = ucp_ep_create(net->worker, &ep, &peer->ep);
    if (st != UCS_OK) {
        dfccl_error("cannot reach the process on host %s through UCX: %s", host,
                    ucs_status_string(st));
        free(peer);
        return DFCCL_ERR_SYSTEM;
    }
    peer->refs = 1;
    peer->next = net->peers;
    net->peers = peer;
    *peer_p = peer;
    return DFCCL_OK;
}

/* Under the net lock: the endpoint stays until the net closes (another
 * communicator is likely to need it again). */
void ucx_peer_put(dfccl_net_t *net, dfccl_net_peer_t *peer)
{
    (void)net;
    peer->refs--;
}

int dfccl_net_progress(dfccl_net_t *net)
{
    int moved, entered;

    if (net == NULL) return 0;
    /* the daemon pumps without pause: a thread that needs the lock for a
     * moment (set-up, teardown) gets it by the daemon's skipping a turn.
     * A skipped turn may leave slots unsent that the executor just filled:
     * the net counts as busy until a turn that began after it has run, or
     * an idle daemon would never pump them and the peer would wait for them
     * forever. The turn clears the mark before it reads any FIFO. */
    if (pthread_mutex_trylock(&net->lock) != 0) {
        __atomic_store_n(&net->missed, 1, __ATOMIC_SEQ_CST);
        return 0;
    }
    (void)__atomic_exchange_n(&net->missed, 0, __ATOMIC_SEQ_CST);
    entered = ucx_guard_enter(net);   /* the pump posts sends and receives too */
    moved = ucp_worker_progress(net->worker) != 0;
    moved |= ucx_links_pump(net);
    ucx_guard_leave(net, entered);
    pthread_mutex_unlock(&net->lock);
    return moved;
}

int dfccl_net_busy(dfccl_net_t *net)
{
    return net != NULL && (__atomic_load_n(&net->busy, __ATOMIC_ACQUIRE) ||
                           __atomic_load_n(&net->missed, __ATOMIC_SEQ_CST));
}

/* Waits (progressing) for a request, up to the deadline; frees it. */
static void ucx_wait_request(dfccl_net_t *net, void *req, uint64_t deadline_ns)
{
    if (req == NULL || UCS_PTR_IS_ERR(req)) return;
    while (ucp_request_check_status(req) == UCS_INPROGRESS && dfccl_now_ns() < deadline_ns)
        ucx_worker_progress_guarded(net);
    ucp_request_free(req);
}

void dfccl_net_close(dfccl_net_t *net)
{
    uint64_t deadline = dfccl_now_ns() + UCX_NET_CLOSE_NS;
    ucp_request_param_t rp;

    if (net == NULL) return;
    pthread_mutex_lock(&net->lock);
    /* links whose sends were still under way get the same bound */
    while (net->closing != NULL && dfccl_now_ns() < deadline) {
        int entered = ucx_guard_enter(net);
        ucp_worker_progress(net->worker);
        ucx_links_pump(net);
        ucx_guard_leave(net, entered);
    }
    ucx_wait_request(net, net->flush_req, deadline);
    net->flush_req = NULL;
    memset(&rp, 0, sizeof(rp));
    rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    rp.flags = UCP_EP_CLOSE_FLAG_FORCE;
    for (dfccl_net_peer_t *p = net->peers; p != NULL; p = p->next)
        ucx_wait_request(net, ucp_ep_close_nbx(p->ep, &rp), deadline);
    ucx_links_forget_all(net);         /* keys of peers' regions belong to the worker */
    ucp_worker_release_address(net->worker, net->address);
    ucp_worker_destroy(net->worker);   /* no request can touch our memory after this */
    ucx_links_free_all(net);
    ucx_regions_free_all(net);         /* unmapped while the context lives */
    ucp_cleanup(net->context);
    while (net->peers != NULL) {
        dfccl_net_peer_t *p = net->peers;
        net->peers = p->next;
        free(p);
    }
    pthread_mutex_unlock(&net->lock);
    pthread_mutex_destroy(&net->lock);
    free(net);
}
