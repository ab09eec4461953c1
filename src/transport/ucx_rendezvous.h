/*
 * ucx_rendezvous.h - what the rendezvous's two sides share
 * (rendezvous.h): the messages on an endpoint's stream, in order:
 *   rank -> service  hello
 *   service -> rank  ack (the hello fits this id; otherwise the service
 *                    closes the endpoint)
 *   per exchange     rank -> service: its part's length (uint64_t), then
 *                    the part; service -> rank: every part, in rank order
 * and the helpers both sides use on a stream.
 */
#ifndef DFCCL_UCX_RENDEZVOUS_H
#define DFCCL_UCX_RENDEZVOUS_H

#include <stdint.h>
#include <ucp/api/ucp.h>
#include "transport/rendezvous.h"

#define RDV_MAGIC    0x6466636372647631ull   /* "dfcclrd1" */
/* A connecting rank says who it is at once; a connection that has not
 * within this bound is not one of ours and must not hold up the joins. */
#define RDV_HELLO_NS 2000000000ull
/* How long closing an endpoint may take before it is forced. */
#define RDV_CLOSE_NS 1000000000ull

typedef struct {
    uint64_t magic, token;
    int32_t  rank, size;
} rdv_hello_t;

typedef struct {
    uint64_t magic;
} rdv_ack_t;

/* A stream operation under way: its request, or done. */
typedef struct {
    void        *req;      /* NULL: none under way */
    ucs_status_t status;   /* UCS_INPROGRESS while under way; the outcome after */
} rdv_op_t;

/* Posts a receive of exactly len bytes / a send of len bytes on ep. */
void rdv_recv(ucp_ep_h ep, void *buf, size_t len, rdv_op_t *op);
void rdv_send(ucp_ep_h ep, const void *buf, size_t len, rdv_op_t *op);
/* Updates op->status; frees the request once it is done. */
void rdv_op_test(rdv_op_t *op, int is_recv);
/* Closes ep (force: at once; else flushing first), progressing worker
 * until it is closed or RDV_CLOSE_NS passed. */
void rdv_ep_close(ucp_worker_h worker, ucp_ep_h ep, int force);

#endif
