/*
 * net.h - connections between ranks on different nodes, over UCX.
 *
 * One UCP context and worker per engine context, made when the first
 * communicator with a peer on another node is set up. A link joins this
 * rank to one remote peer of one communicator; it carries up to one FIFO
 * each way and the control messages that stand in for the peer's board,
 * which cannot be mapped across nodes:
 *   - sending: the executor fills slots of a FIFO in our memory as if it
 *     were the peer's; the pump sends each filled slot (only the bytes
 *     written) as a tagged message, and frees the slot once UCX is done;
 *   - receiving: the pump keeps a receive posted into every free slot of a
 *     FIFO in our memory, and publishes each slot that arrived;
 *   - control: the identity of every collective we post, and why the
 *     communicator broke here, go to the peer, which writes them into its
 *     mirror of our board; the same comes back into ours of theirs.
 * So the executor sees a FIFO as on one node: monotone counters, slots
 * ready or not, and waits that give way.
 *
 * That is the tagged protocol. The RMA protocol (net_protocol 1) moves the
 * same FIFOs with puts instead, and control messages stay tagged:
 *   - each communicator registers one region per rank, which holds the
 *     FIFOs its peers on other nodes send into, its own outgoing slots and
 *     a credit word per peer it sends to; its address and key travel in
 *     the set-up, and every rank computes where things are inside anyone's
 *     region from the connections, which all ranks know;
 *   - sending: the pump puts each filled slot (the bytes written) into the
 *     peer's slot, fences, then puts the new tail, which the peer's
 *     executor reads in its own memory;
 *   - receiving: the pump puts our head into the sender's credit word,
 *     from which the sender's pump derives the head its executor sees;
 *   - closing: each side tells the other, once its puts have landed, that
 *     it puts nothing more; a region is unmapped when every link on it
 *     heard that (or its peer failed).
 * Links over memory the caller provides (dfccl_net_link_open_at, the GPU
 * backend's) take the RMA protocol where the caller registered that memory
 * as a region (dfccl_net_region_open_at) and gives its peers' addresses
 * and keys, else the tagged one. Both ends of such a link open it alike,
 * so they agree, and a net opened for RMA still carries tagged messages.
 * On the tagged path their slots may lie apart from the counters, in
 * device memory, which UCX then moves as CUDA memory where it was built
 * for it (dfccl_net_cuda_memory): the counters stay in host memory, where
 * the pump reads them.
 *
 * Tags: bits 63-40 the receiving side's link id (it hands out one per peer
 * of a communicator, in its set-up hello), bit 39 control, bits 38-0 the
 * slot index (control: 0, in order per link).
 *
 * Every function that calls UCX takes the net lock; the daemon thread pumps
 * (dfccl_net_progress), set-up and teardown may run on other threads.
 */
#ifndef DFCCL_NET_H
#define DFCCL_NET_H

#include <stddef.h>
#include <stdint.h>
#include "core/board.h"
#include "include/dfccl.h"
#include "core/fifo.h"

/* Largest worker address a hello carries. */
#define DFCCL_NET_ADDR_MAX 1024
/* Largest packed key of a region (RMA) the set-up carries. */
#define DFCCL_NET_KEY_MAX  1024
#define DFCCL_NET_HOST_MAX 64

/* How links move FIFO slots (the engine's net_protocol). */
typedef enum {
    DFCCL_NET_TAGGED = 0,   /* tagged messages into pre-posted receives */
    DFCCL_NET_RMA    = 1    /* puts into the peer's registered memory */
} dfccl_net_protocol_t;

typedef struct dfccl_net dfccl_net_t;
typedef struct dfccl_net_peer dfccl_net_peer_t;
typedef struct dfccl_net_link dfccl_net_link_t;
typedef struct dfccl_net_region dfccl_net_region_t;

/* 1 when the engine was built with UCX; else 0 and why in buf. */
int dfccl_net_available(char *why, size_t len);

/* The per-context net state, made on first call (*net stays set); every
 * link it makes takes the protocol. rendezvous: tagged messages may take
 * the transport's rendezvous (else they all go eagerly). */
/* sent_bytes (may be NULL): told the bytes of every message sent to
 * another node, from the pump, for the caller's counters. */
dfccl_status_t dfccl_net_open(dfccl_net_t **net, dfccl_net_protocol_t protocol, int rendezvous,
                              void (*sent_bytes)(uint64_t bytes));
/* Closes endpoints (bounded wait), the worker and the context. */
void dfccl_net_close(dfccl_net_t *net);
/* 1 when this UCX moves CUDA device memory (its context lists that memory
 * type: it was built with CUDA and found a GPU); else 0. */
int dfccl_net_cuda_memory(const dfccl_net_t *net);
/* UCX moves data in whichever thread progresses its worker or posts a
 * request, and it touches CUDA memory only with a CUDA context current
 * there. Once set, every such call of any thread runs between enter(arg)
 * and leave(arg, enter's result), under the net lock; NULL enter: none.
 * The GPU side sets it while links keep slots in device memory and
 * clears it before arg goes. */
void dfccl_net_guard_progress(dfccl_net_t *net, int (*enter)(void *arg),
                              void (*leave)(void *arg, int entered), void *arg);

/* This process's worker address. */
dfccl_status_t dfccl_net_address(dfccl_net_t *net, void *buf, size_t max, size_t *len);
/* A block of n link ids, unique in this process while their links live. */
uint32_t dfccl_net_link_ids(dfccl_net_t *net, uint32_t n);

/*
 * RMA: bytes of zeroed memory, registered, at *base; the caller holds one
 * reference, links on it one each, and the last one gone unmaps it.
 */
dfccl_status_t dfccl_net_region_open(dfccl_net_t *net, size_t bytes, dfccl_net_region_t **region,
                                     void **base);
/* The same over bytes of the caller's memory at mem (zeroed by the caller
 * before any peer may put into it), which stays the caller's: the last
 * reference gone unregisters it, and the caller frees it after that. */
dfccl_status_t dfccl_net_region_open_at(dfccl_net_t *net, void *mem, size_t bytes,
                                        dfccl_net_region_t **region);
/* Its key packed for peers (at most max bytes). */
dfccl_status_t dfccl_net_region_key(dfccl_net_t *net, dfccl_net_region_t *region, void *buf,
                                    size_t max, size_t *len);
/* Drops the caller's reference. */
void dfccl_net_region_close(dfccl_net_t *net, dfccl_net_region_t *region);

/* What a link needs to know. */
typedef struct dfccl_net_link_params {
    const void    *addr;        /* the peer process's worker address */
    size_t         addr_len;
    const char    *host;        /* the peer's host name, for messages */
    int            peer;        /* its rank in the communicator */
    uint32_t       id_in;       /* what the peer tags messages to us with */
    uint32_t       id_out;      /* what we tag messages to it with */
    size_t         slot_bytes;
    uint32_t       nslots;
    int            sends;       /* we send data to the peer */
    int            receives;    /* we receive data from the peer */
    const int     *broken;      /* our communicator's broken flag (atomic) */
    const dfccl_board_t *board; /* our board: why it broke */
    int           *released;    /* dfccl_net_link_open_at: set to 1 (release order) once
                                   the link touches the caller's memory no more */
    /* dfccl_net_link_open_at, tagged: the slots apart from the control
     * block (NULL: right after it), and whether they are CUDA memory */
    void          *send_slots, *recv_slots;
    int            slots_cuda;
    /* RMA protocol only: offsets in our region, addresses in the peer's
     * (open_at: the FIFOs are the caller's memory, in the region; out_off
     * and in_off are not read) */
    dfccl_net_region_t *region;
    size_t         out_off;     /* our outgoing FIFO (sends) */
    size_t         credit_off;  /* the word the peer puts its head of it into (sends) */
    size_t         in_off;      /* the FIFO the peer puts into (receives) */
    uint64_t       peer_fifo;   /* the peer's FIFO we put into (sends) */
    uint64_t       peer_credit; /* the peer's word we put our head into (receives) */
    const void    *peer_key;    /* the peer's region's packed key */
    size_t         peer_key_len;
} dfccl_net_link_params_t;

/*
 * Makes a link: the endpoint to the peer's process (shared by links to it),
 * FIFOs in our memory (RMA: in our region), receives posted. *send_fifo /
 * *recv_fifo (where the link sends / receives) are the executor's views;
 * *mirror the peer's board as the control messages tell it.
 */
dfccl_status_t dfccl_net_link_open(dfccl_net_t *net, const dfccl_net_link_params_t *p,
                                   dfccl_fifo_t *send_fifo, dfccl_fifo_t *recv_fifo,
                                   dfccl_board_t **mirror, dfccl_net_link_t **link);
/* Bytes of memory one side of a link takes where the caller provides it
 * (dfccl_net_link_open_at): the FIFO's control block and slots, then on the
 * sending side the bytes written per slot (the lens of the sender's view).
 * With the slots apart (send_slots, recv_slots), slot_bytes 0 here. */
DFCCL_INLINE size_t dfccl_net_fifo_bytes(size_t slot_bytes, uint32_t nslots, int sending)
{
    return dfccl_fifo_bytes(slot_bytes, nslots) + (sending ? nslots * sizeof(uint32_t) : 0);
}

/*
 * dfccl_net_link_open with the FIFOs in memory the caller provides (send_mem
 * and recv_mem, dfccl_net_fifo_bytes each, for the sides the link has),
 * such as pinned host memory that a GPU maps: the views then point into it,
 * and whoever else fills or drains them (a kernel through its own mapping)
 * follows the same counters. The memory must stay until *p->released is
 * set, which happens after dfccl_net_link_close once no request of the link
 * is out, or when the net closes. The RMA protocol where the net takes it
 * and p->region is set (the memory in that region, slots in place, the
 * peer's addresses and key given); else the tagged one, whose slots may lie
 * apart (p->send_slots, recv_slots).
 */
dfccl_status_t dfccl_net_link_open_at(dfccl_net_t *net, const dfccl_net_link_params_t *p,
                                      void *send_mem, void *recv_mem, dfccl_fifo_t *send_fifo,
                                      dfccl_fifo_t *recv_fifo, dfccl_board_t **mirror,
                                      dfccl_net_link_t **link);
/* Hands the link to the pump, which ends its sends (bounded) and frees it. */
void dfccl_net_link_close(dfccl_net_t *net, dfccl_net_link_t *link);

/* Tells the peer the identity of collective seq (it checks it before data moves). */
void dfccl_net_link_post_ident(dfccl_net_t *net, dfccl_net_link_t *link, uint64_t seq,
                               const dfccl_ident_t *ident);
/* 1 when the peer's endpoint failed: why, naming the peer and its host. */
int dfccl_net_link_failed(const dfccl_net_link_t *link, char *why, size_t len);

/* Sends and receives what is ready on every link; 1 when anything moved. */
int dfccl_net_progress(dfccl_net_t *net);
/* 1 while sends are under way (the daemon keeps pumping before it sleeps). */
int dfccl_net_busy(dfccl_net_t *net);

#endif
