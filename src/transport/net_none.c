/* net_none.c - net.h where the engine was built without UCX: communicators
 * that span nodes cannot be set up (the caller takes its own path). */
#include <stdio.h>
#include "transport/net.h"
#include "transport/rendezvous.h"

int dfccl_net_available(char *why, size_t len)
{
    snprintf(why, len, "the engine was built without UCX (configure --without-ucx)");
    return 0;
}

dfccl_status_t dfccl_net_open(dfccl_net_t **net, dfccl_net_protocol_t protocol, int rendezvous,
                              void (*sent_bytes)(uint64_t bytes))
{
    (void)net; (void)protocol; (void)rendezvous; (void)sent_bytes;
    return DFCCL_ERR_UNSUPPORTED;
}
void dfccl_net_close(dfccl_net_t *net) { (void)net; }

dfccl_status_t dfccl_net_address(dfccl_net_t *net, void *buf, size_t max, size_t *len)
{
    (void)net; (void)buf; (void)max; (void)len;
    return DFCCL_ERR_UNSUPPORTED;
}

int dfccl_net_cuda_memory(const dfccl_net_t *net) { (void)net; return 0; }
void dfccl_net_guard_progress(dfccl_net_t *net, int (*enter)(void *arg),
                              void (*leave)(void *arg, int entered), void *arg)
{
    (void)net;
    (void)enter;
    (void)leave;
    (void)arg;
}

uint32_t dfccl_net_link_ids(dfccl_net_t *net, uint32_t n) { (void)net; (void)n; return 0; }

dfccl_status_t dfccl_net_region_open(dfccl_net_t *net, size_t bytes, dfccl_net_region_t **region,
                                     void **base)
{
    (void)net; (void)bytes; (void)region; (void)base;
    return DFCCL_ERR_UNSUPPORTED;
}

dfccl_status_t dfccl_net_region_open_at(dfccl_net_t *net, void *mem, size_t bytes,
                                        dfccl_net_region_t **region)
{
    (void)net; (void)mem; (void)bytes; (void)region;
    return DFCCL_ERR_UNSUPPORTED;
}

dfccl_status_t dfccl_net_region_key(dfccl_net_t *net, dfccl_net_region_t *region, void *buf,
                                    size_t max, size_t *len)
{
    (void)net; (void)region; (void)buf; (void)max; (void)len;
    return DFCCL_ERR_UNSUPPORTED;
}

void dfccl_net_region_close(dfccl_net_t *net, dfccl_net_region_t *region)
{
    (void)net; (void)region;
}

dfccl_status_t dfccl_net_link_open(dfccl_net_t *net, const dfccl_net_link_params_t *p,
                                   dfccl_fifo_t *send_fifo, dfccl_fifo_t *recv_fifo,
                                   dfccl_board_t **mirror, dfccl_net_link_t **link)
{
    (void)net; (void)p; (void)send_fifo; (void)recv_fifo; (void)mirror; (void)link;
    return DFCCL_ERR_UNSUPPORTED;
}

dfccl_status_t dfccl_net_link_open_at(dfccl_net_t *net, const dfccl_net_link_params_t *p,
                                      void *send_mem, void *recv_mem, dfccl_fifo_t *send_fifo,
                                      dfccl_fifo_t *recv_fifo, dfccl_board_t **mirror,
                                      dfccl_net_link_t **link)
{
    (void)net; (void)p; (void)send_mem; (void)recv_mem; (void)send_fifo; (void)recv_fifo;
    (void)mirror; (void)link;
    return DFCCL_ERR_UNSUPPORTED;
}

void dfccl_net_link_close(dfccl_net_t *net, dfccl_net_link_t *link) { (void)net; (void)link; }

void dfccl_net_link_post_ident(dfccl_net_t *net, dfccl_net_link_t *link, uint64_t seq,
                               const dfccl_ident_t *ident)
{
    (void)net; (void)link; (void)seq; (void)ident;
}

int dfccl_net_link_failed(const dfccl_net_link_t *link, char *why, size_t len)
{
    (void)link; (void)why; (void)len;
    return 0;
}

int dfccl_net_progress(dfccl_net_t *net) { (void)net; return 0; }
int dfccl_net_busy(dfccl_net_t *net) { (void)net; return 0; }

/* rendezvous.h: communicators from a unique id need UCX */
dfccl_status_t dfccl_rendezvous_serve(struct sockaddr_storage *where, uint64_t token,
                                      double timeout_sec)
{
    (void)where; (void)token; (void)timeout_sec;
    return DFCCL_ERR_UNSUPPORTED;
}

dfccl_status_t dfccl_rendezvous_join(dfccl_net_t *net, const struct sockaddr_storage *where,
                                     uint64_t token, int rank, int size, double timeout_sec,
                                     dfccl_rendezvous_t **rdv_p)
{
    (void)net; (void)where; (void)token; (void)rank; (void)size; (void)timeout_sec; (void)rdv_p;
    return DFCCL_ERR_UNSUPPORTED;
}

int dfccl_rendezvous_allgather_start(void *arg, const void *sendbuf, void *recvbuf,
                                     size_t bytes, void **request_p)
{
    (void)arg; (void)sendbuf; (void)recvbuf; (void)bytes; (void)request_p;
    return -1;
}
int dfccl_rendezvous_allgather_test(void *arg, void *request) { (void)arg; (void)request; return -1; }
void dfccl_rendezvous_allgather_cancel(void *arg, void *request) { (void)arg; (void)request; }
void dfccl_rendezvous_leave(dfccl_rendezvous_t *rdv) { (void)rdv; }
