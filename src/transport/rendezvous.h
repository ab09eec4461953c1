/*
 * rendezvous.h - the set-up exchanges of a communicator made from a unique
 * id (engine/bootstrap_id.c), over UCX.
 *
 * The service, in the process that made the id, listens on a socket
 * address with a UCP listener of its own and serves from a thread: every
 * rank connects a UCP endpoint to it by that address (over the engine's
 * UCP context and worker, which its data links use afterwards) and says who
 * it is; the service acknowledges. Then, for each exchange of the engine's
 * set-up (dfccl_bootstrap_t's allgather), every rank sends its part on the
 * endpoint's stream and the service, once it holds all of them, sends
 * every rank the whole in rank order.
 *
 * Promises: a rank that leaves (its endpoint fails) fails every rank's
 * exchange at once, as the service then closes every endpoint; the joins
 * are bounded by the set-up timeout, as is each exchange; a connection
 * that does not say who it is within BOOT_HELLO_NS is dropped without
 * holding up the others; the service's thread always ends: when every rank
 * has closed its endpoint between exchanges (the set-up is over), or at
 * the first failure or timeout. An id serves one communicator.
 */
#ifndef DFCCL_TRANSPORT_RENDEZVOUS_H
#define DFCCL_TRANSPORT_RENDEZVOUS_H

#include <sys/socket.h>
#include <stdint.h>
#include "include/dfccl.h"
#include "transport/net.h"

/* Starts the service on `where` (any port: *where gets the one bound),
 * for the communicator whose ranks say `token`. */
dfccl_status_t dfccl_rendezvous_serve(struct sockaddr_storage *where, uint64_t token,
                                      double timeout_sec);

typedef struct dfccl_rendezvous dfccl_rendezvous_t;

/* A rank's side: connects to the service at `where` over net's worker and
 * joins as rank of size; fails (with a message naming the address) when
 * the service refuses, is not there, or does not answer within
 * timeout_sec. */
dfccl_status_t dfccl_rendezvous_join(dfccl_net_t *net, const struct sockaddr_storage *where,
                                     uint64_t token, int rank, int size, double timeout_sec,
                                     dfccl_rendezvous_t **rdv_p);
/* dfccl_bootstrap_t's allgather over a joined rendezvous (arg: it). */
int  dfccl_rendezvous_allgather_start(void *arg, const void *sendbuf, void *recvbuf,
                                      size_t bytes, void **request_p);
int  dfccl_rendezvous_allgather_test(void *arg, void *request);
void dfccl_rendezvous_allgather_cancel(void *arg, void *request);
/* Closes the endpoint (bounded) and frees the rank's side. */
void dfccl_rendezvous_leave(dfccl_rendezvous_t *rdv);

/* "address:port" of a socket address, for messages. */
const char *dfccl_rendezvous_addr_string(const struct sockaddr_storage *sa, char *buf,
                                         size_t len);

#endif
