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

/* Bytes of a rank's region on a communicator of size ranks: the inbox
 * (the all-peer paths' counters, board and slots; none where they cannot
 * run by size) and nchannels incoming FIFOs of fifo_bytes, aligned to
 * align. Alike on every rank: peers find our FIFOs at the same offsets. */
size_t gpu_conn_inbox_bytes(int size, size_t align);
size_t gpu_conn_region_bytes(int size, unsigned nchannels, size_t fifo_bytes, size_t align);

#endif
