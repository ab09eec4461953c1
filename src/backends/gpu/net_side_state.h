/*
 * net_side_state.h - what a GPU communicator's network side holds, for the
 * files that implement net_side.h: net_side.c (set-up, proxy) and
 * net_side_watch.c (failures and call identities across nodes).
 */
#ifndef DFCCL_GPU_NET_SIDE_STATE_H
#define DFCCL_GPU_NET_SIDE_STATE_H

#include "backends/gpu/net_side.h"
#include "transport/net.h"

/* One connection to or from a rank on another node, on every channel. */
typedef struct gpu_net_conn {
    int               peer;
    int               index;        /* the connection's index (conn_plan.h) */
    int               peer_index;   /* ours among the peer's network connections the
                                       other way (its link ids) */
    unsigned          nchannels;    /* the side's, or 1: the latency algorithm's partner
                                       alone, on channel 0 (conn_plan.h) */
    size_t            at;           /* its channel 0 FIFO in the side's memory */
    size_t            slots_at;     /* tagged: its channel 0 slots in the side's slots */
    size_t            credit;       /* RMA, sending: its channel 0 credit word */
    size_t            peer_at;      /* RMA: the peer's FIFO of the connection (sending), */
    size_t            peer_credit;  /* or its credit word (receiving), in its memory */
    dfccl_net_link_t *link[DFCCL_GPU_MAX_CHANNELS];
    /* per channel: 1 once its link uses our memory no more (net.h), 1 too
     * where no link was opened */
    int               released[DFCCL_GPU_MAX_CHANNELS];
    /* per channel: the peer's board as its messages tell it (why its
     * communicator broke) */
    dfccl_board_t    *mirror[DFCCL_GPU_MAX_CHANNELS];
    char              host[DFCCL_NET_HOST_MAX];
} gpu_net_conn_t;

typedef struct gpu_net_side {
    struct gpu_net_side *retired_next;   /* g->net.retired */
    dfccl_net_t      *net;
    dfccl_gpu_t      *g;
    char             *host;           /* pinned, mapped: every FIFO of the side */
    char             *dev;            /* the same memory as the kernel addresses it */
    size_t            bytes;
    gpu_net_strides_t st;             /* its layout (gpu_conn_plan_net_at), channels */
    int               rma;            /* the links put (the host memory is a region) */
    dfccl_net_region_t *region;
    /* tagged: the slots, laid out as the FIFOs with strides of slots_stride */
    char             *slots_host;     /* as UCX addresses them */
    char             *slots_dev;      /* as the kernel does (the same in device memory) */
    size_t            slots_bytes, slots_stride;
    int               slots_device;   /* in device memory (else pinned, mapped host) */
    int               nrecv, nsend;   /* connections each way on other nodes */
    gpu_net_conn_t    recv[GPU_CONN_NET_MAX], send[GPU_CONN_NET_MAX];
    uint32_t          link_ids;       /* our block: 2 x GPU_CONN_NET_MAX x nchannels */
    /* What a link reads to tell its peer why our communicator broke: set
     * by the watch (peer_watch.c) when a link or a peer failed, so the
     * ranks down the ring on other nodes learn it from their links. The
     * kernel keeps no board: a collective failing on its own (the
     * watchdog) tells nobody. */
    int               broken;
    dfccl_board_t     board;
} gpu_net_side_t;

/* Connection i of the side's nrecv + nsend: the receiving ones first. */
static inline gpu_net_conn_t *gpu_net_conn_at(const gpu_net_side_t *side, int i)
{
    return (gpu_net_conn_t *)(i < side->nrecv ? &side->recv[i] : &side->send[i - side->nrecv]);
}

#endif
