/* net_none.c - net.h where the engine was built without UCX: communicators
 * that span nodes cannot be set up (the caller takes its own path). */
#include <stdio.h>
#include "transport/net.h"

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

uint32_t dfccl_net_link_ids(dfccl_net_t *net, uint32_t n) { (void)net; (void)n; return 0; }

dfccl_status_t dfccl_net_region_open(dfccl_net_t *net, size_t bytes, dfccl_net_region_t **region,
                                     void **base)
{
    (void)net; (void)bytes; (void)region; (void)base;
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
