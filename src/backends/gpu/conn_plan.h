/*
 * conn_plan.h - what one rank of a GPU communicator connects to, decided
 * from where every rank is (node[r]) and nothing else, so that all ranks
 * decide alike: the ring's neighbours node by node, whether the paths that
 * reach every peer (LL, one-shot, direct) may run, which peers' regions it
 * maps through CUDA IPC, which neighbours it reaches over the network, and
 * how large its own region is. Free of CUDA, so that make check runs it on
 * simulated communicators of any size (test/engine/test_gpu_conn.c).
 */
#ifndef DFCCL_GPU_CONN_PLAN_H
#define DFCCL_GPU_CONN_PLAN_H

#include <stddef.h>
#include <stdint.h>

typedef struct gpu_conn_plan {
    int spans;         /* some rank is on another node */
    int all_peers;     /* LL, one-shot and direct may run: one node, at most
                          DFCCL_GPU_ALL_PEER_RANKS ranks */
    int ring_prev, ring_next;   /* node by node (dfccl_plan_ring_peers) */
    int net_prev, net_next;     /* the neighbour's rank where it is on another node
                                   (its FIFO crosses the network), else -1 */
} gpu_conn_plan_t;

/* The plan of rank among size ranks; node NULL: all on one node. */
void gpu_conn_plan_make(int size, int rank, const int *node, gpu_conn_plan_t *plan);

/* 1 when rank maps peer r's region: every other rank of its node where the
 * all-peer paths run, else the ring's next rank when it is on its node. */
int gpu_conn_plan_maps(const gpu_conn_plan_t *plan, const int *node, int rank, int r);

/* 1 when rank's collectives wait for peer r on its node, so that the watch
 * looks whether r's process is gone: every other rank of the node where
 * the all-peer paths run, else the ring's neighbours there. */
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

/* 1 when rank tells r's region that it failed (prev_broken there): r is its
 * ring's next rank on its node. */
int gpu_conn_plan_tells(const gpu_conn_plan_t *plan, const int *node, int rank, int r);

/* Bytes of a rank's region on a communicator of size ranks: the inbox
 * (the all-peer paths' counters, board and slots; none where they cannot
 * run by size) and nchannels incoming FIFOs of fifo_bytes, aligned to
 * align. Alike on every rank: peers find our FIFOs at the same offsets. */
size_t gpu_conn_inbox_bytes(int size, size_t align);
/* ... the FIFOs, then the status (GPU_CONN_STATUS_BYTES) at the end. */
size_t gpu_conn_region_bytes(int size, unsigned nchannels, size_t fifo_bytes, size_t align);

#endif
