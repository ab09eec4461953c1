/*
 * conn_plan.h - what one rank of a GPU communicator connects to, decided
 * from where every rank is (node[r]) and nothing else, so that all ranks
 * decide alike: the ring's neighbours node by node, whether the paths that
 * reach every peer (LL, one-shot, direct) may run, the connections of the
 * hierarchical allreduce across nodes and the programs over them, which
 * peers' regions it maps through CUDA IPC, which neighbours it reaches over the network, and
 * how large its own region is. Free of CUDA, so that make check runs it on
 * simulated communicators of any size (test/engine/test_gpu_conn.c).
 */
#ifndef DFCCL_GPU_CONN_PLAN_H
#define DFCCL_GPU_CONN_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include "core/plan.h"

/* Connections every channel has each way at most: the ring's neighbour,
 * the neighbour of the ring within the node, the counterpart on the next or
 * previous node (the hierarchical allreduce). */
#define GPU_CONN_MAX 3
/* Channel 0 has these and, on a node's last rank, the other nodes' last
 * ranks that the latency algorithm exchanges with (recursive doubling over
 * up to 4096 nodes, and its fold): the latency algorithm runs on channel 0
 * alone, so that its connections cost one FIFO each way, not one per
 * channel. */
#define GPU_CONN0_MAX 16
/* Nodes the latency algorithm serves: below 8192, a leader has at most 13
 * partners (12 doublings and the fold), which channel 0's room holds
 * beside the 3 of every channel. Alike on every rank: on more nodes no rank
 * sets it up. */
#define GPU_CONN_RD_MAX_NODES 8191
/* Of those, the most on other nodes (all but the node's ring). */
#define GPU_CONN_NET_MAX (GPU_CONN0_MAX - 1)

/* What a communicator's connections serve beyond the ring (alike on every
 * rank: the engine's algorithm knob and its rd_max_bytes). */
#define GPU_CONN_WANT_HIER 1u   /* the hierarchical allreduce */
#define GPU_CONN_WANT_RD   2u   /* the latency algorithm across nodes */

/* Whom each rank sends to and receives from under a communicator's plan
 * files (plan_files.h builds it), sorted, each rank's lists in a row:
 * rank r's sends are send[send_at[r] .. send_at[r + 1]). */
typedef struct gpu_plan_peers {
    int  size;
    int *send_at, *send;
    int *recv_at, *recv;
} gpu_plan_peers_t;

typedef struct gpu_conn_plan {
    int spans;         /* some rank is on another node */
    int all_peers;     /* LL, one-shot and direct may run: one node, at most
                          DFCCL_GPU_ALL_PEER_RANKS ranks */
    int hier;          /* the hierarchical allreduce may run: several nodes of
                          the same number of ranks, more than one each */
    int rd;            /* the latency algorithm may run (dfccl_plan_node_rd):
                          several nodes */
    int ring_prev, ring_next;   /* node by node (dfccl_plan_ring_peers) */
    int net_prev, net_next;     /* the ring's neighbour where it is on another node
                                   (its FIFO crosses the network), else -1 */
    int node_prev, node_next;   /* the ends of the one FIFO each way in device memory:
                                   the ring's neighbours on our node, and where hier
                                   or rd, the ring of our node's ranks; -1: none */
    int cross_prev, cross_next; /* hier: our counterparts (same local index) on the
                                   previous and the next node, else -1 */
    /* The connections, receive and send, each numbered alike on every
     * channel: 0 is the ring's; a step names them (plan.h recv_conn and
     * send_conn). A peer appears once per list. The first nrecv_all and
     * nsend_all are on every channel, the others (the latency algorithm's
     * partners) on channel 0 alone. */
    int nrecv, nsend, nrecv_all, nsend_all;
    int recv_peer[GPU_CONN0_MAX], send_peer[GPU_CONN0_MAX];
    /* The plan files' peers, added on channel 0 after the latency
     * algorithm's partners (NULL: the communicator runs no plan files);
     * overflow: they did not all fit the table (then not all are added). */
    const gpu_plan_peers_t *files;
    int overflow;
} gpu_conn_plan_t;

/* The plan of rank on topology t (dfccl_topo_derive of the ranks' nodes);
 * wants: GPU_CONN_WANT_* bits, what the algorithms across nodes may use
 * (the engine's knobs allow them alike on every rank); files: the plan
 * files' peers, or NULL. */
void gpu_conn_plan_make(const dfccl_topo_t *t, int rank, unsigned wants,
                        const gpu_plan_peers_t *files, gpu_conn_plan_t *plan);

/* What plan's connections serve beyond the ring (GPU_CONN_WANT_* bits),
 * which every rank's plan was made with: a peer's plan is made alike from
 * them. */
unsigned gpu_conn_plan_wants(const gpu_conn_plan_t *plan);

/* 1 when every rank's connections with the plan files' peers fit the
 * kernel's table (channel 0) and the network side's links; else 0 and why
 * (len bytes) names the first rank they do not fit. Alike on every rank. */
int gpu_conn_plan_files_fit(const dfccl_topo_t *t, unsigned wants, const gpu_plan_peers_t *files,
                            char *why, size_t len);

/* The index of peer's connection in the plan (receiving, or sending), or -1. */
int gpu_conn_plan_recv_index(const gpu_conn_plan_t *plan, int peer);
int gpu_conn_plan_send_index(const gpu_conn_plan_t *plan, int peer);

/* Among the connections on other nodes only (the network side's links),
 * in list order: the index of peer's, or -1. */
int gpu_conn_plan_net_recv_index(const gpu_conn_plan_t *plan, const dfccl_topo_t *t, int rank,
                                 int peer);
int gpu_conn_plan_net_send_index(const gpu_conn_plan_t *plan, const dfccl_topo_t *t, int rank,
                                 int peer);

/* The sizes that lay out a rank's network side (net_side.c): the bytes of
 * one channel's FIFO from and to a peer on another node, and of the credit
 * word per channel of a sending connection (RMA; 0: none). */
typedef struct gpu_net_strides {
    unsigned nchannels;
    size_t   recv, send, credit;
} gpu_net_strides_t;

/* Where rank's network side keeps a connection: its FIFOs (receiving
 * connections first, then sending ones, in list order, each with as many
 * channels as it uses, channel c at the offset + c strides), then the
 * credit words, channel by channel in the same order. Returns the offset of
 * the connection with peer (sending: the rank sends to it) and, sending,
 * sets *credit to its channel 0 credit word's; SIZE_MAX where there is none.
 * peer -1: returns the side's bytes. Alike on every rank, so that each end
 * of a link finds the other's. */
size_t gpu_conn_plan_net_at(const gpu_conn_plan_t *plan, const dfccl_topo_t *t, int rank,
                            const gpu_net_strides_t *st, int sending, int peer, size_t *credit);

/*
 * Rank's program of algo for call (RING, HIER, or RD: the latency
 * algorithm across nodes, dfccl_plan_node_rd) with its peers mapped onto
 * the plan's connections: steps must hold dfccl_plan_max_steps(t->size).
 * Sets *nsteps and *max_block (the largest block, the same on every rank).
 * DFCCL_ERR_UNSUPPORTED where the algorithm does not serve the call here,
 * or a step needs what the kernel does not run (a peer without a
 * connection, a send to several peers, dependencies beyond the chain).
 * An RD program runs on channel 0 alone.
 */
dfccl_status_t gpu_conn_plan_program(const gpu_conn_plan_t *plan, const dfccl_topo_t *t, int rank,
                                     dfccl_algo_t algo, const dfccl_plan_call_t *call,
                                     dfccl_step_t *steps, uint32_t *nsteps, uint64_t *max_block);

/* 1 when rank maps peer r's region: every other rank of its node where the
 * all-peer paths run, else the peers whose FIFOs it writes there (node_next,
 * and the plan files' peers on the node). */
int gpu_conn_plan_maps(const gpu_conn_plan_t *plan, const int *node, int rank, int r);

/* 1 when rank's collectives wait for peer r on its node, so that the watch
 * looks whether r's process is gone: every other rank of the node where
 * the all-peer paths run, else its connections' peers there (ring, node
 * ring, plan files). */
int gpu_conn_plan_waits_on(const gpu_conn_plan_t *plan, const int *node, int rank, int r);

/*
 * Where a failure travels on one node. Each rank's region ends with a
 * status (gpu_conn_status_t): its own word, which it sets when its
 * communicator fails, and a word its previous rank on the node sets when
 * its own failed. A rank's watch reads its own region's second word and
 * the first word of every region it maps, so the news goes both ways round
 * the ring (and at once to every peer where the all-peer paths run);
 * across nodes the links carry it (net_side.h).
 */
typedef struct gpu_conn_status {
    volatile uint32_t broken;        /* the owner's communicator failed */
    volatile uint32_t prev_broken;   /* its previous rank's failed (written by that rank) */
    int32_t           rank;          /* who wrote why: the owner, or its previous rank */
    int32_t           prev_rank;
    char              why[240];      /* the owner's reason */
} gpu_conn_status_t;

#define GPU_CONN_STATUS_BYTES 256

/* 1 when rank tells r's region that it failed (prev_broken there): r is the
 * peer whose FIFO it writes on its node (node_next). */
int gpu_conn_plan_tells(const gpu_conn_plan_t *plan, const int *node, int rank, int r);

/* Bytes of a rank's region on a communicator of size ranks: the inbox
 * (the all-peer paths' counters, board and slots; none where they cannot
 * run by size) and nchannels incoming FIFOs of fifo_bytes, aligned to
 * align. Alike on every rank: peers find our FIFOs at the same offsets. */
size_t gpu_conn_inbox_bytes(int size, size_t align);
/* ... the FIFOs, then the status (GPU_CONN_STATUS_BYTES) at the end. */
size_t gpu_conn_region_bytes(int size, unsigned nchannels, size_t fifo_bytes, size_t align);
/* After the channels' FIFOs, a rank's region holds one FIFO (channel 0)
 * from each rank that sends to it under a plan file of the size (the
 * receives of gpu_plan_peers_make over every such plan, plan_files.h): its
 * region is then
 * gpu_conn_region_bytes(size, nchannels + senders, ...) bytes, and the k-th
 * sender's FIFO lies at this offset. */
size_t gpu_conn_plan_fifo_at(int size, unsigned nchannels, size_t fifo_bytes, size_t align, int k);

#endif
