/*
 * plan.h - a collective as a short per-rank program of primitive steps.
 *
 * A step moves `count` elements, slice by slice (one FIFO slot each):
 *     value = recv ? (reduce ? recv OP src : recv) : src
 *     if dst:  write value to dst
 *     if send: write value into the next FIFO slot
 * A step with neither recv nor send is a local copy (memmove semantics).
 * The ring algorithms read like NCCL's runRing: send, recvReduceSend...,
 * recvReduceCopySend, recvCopySend..., recv.
 */
#ifndef DFCCL_PLAN_H
#define DFCCL_PLAN_H

#include <stdint.h>
#include "dfccl.h"

typedef enum {
    DFCCL_BUF_NONE = 0,
    DFCCL_BUF_SEND = 1,   /* the user's send buffer */
    DFCCL_BUF_RECV = 2    /* the user's receive buffer */
} dfccl_buf_t;

typedef struct dfccl_step {
    uint8_t  recv;       /* consume one slot per slice from the recv FIFO */
    uint8_t  send;       /* produce one slot per slice into the send FIFO */
    uint8_t  reduce;     /* combine what was received with src */
    uint8_t  src_buf;    /* dfccl_buf_t */
    uint8_t  dst_buf;    /* dfccl_buf_t */
    uint64_t src_off;    /* elements */
    uint64_t dst_off;    /* elements */
    uint64_t count;      /* elements */
} dfccl_step_t;

/* Largest number of steps a ring plan has on size ranks. */
uint32_t dfccl_plan_max_steps(int size);

/*
 * Builds this rank's ring program. counts: REDUCE_SCATTER's per-rank counts
 * (size entries), otherwise NULL. An in-place reduce-scatter writes its
 * result straight to the front of the buffer (the rest keeps the caller's
 * input): its last step's source and destination may overlap, which the
 * movers take by combining in the received slot. steps must hold dfccl_plan_max_steps(size).
 * *max_block: the largest block of the collective, the same on every rank
 * (the executor's number of rounds follows from it).
 */
dfccl_status_t dfccl_plan_ring(dfccl_coll_type_t type, int rank, int size, int in_place,
                               size_t count, const size_t *counts,
                               dfccl_step_t *steps, uint32_t *nsteps, uint64_t *max_block);

/* 1 when the plan's steps may be cut into parts that move side by side
 * (GPU channels); 0 when they must move in order. Reduce-scatter in place
 * writes each rank's result to the front of its buffer, over input blocks
 * that the other parts may still be sending: it runs as one part unless no
 * rank's result moves. Decided from what every rank knows alike. */
int dfccl_plan_parts_allowed(dfccl_coll_type_t type, int in_place, const size_t *counts, int size);

/* Elements of every block moved per round: half of a FIFO's slots. */
uint64_t dfccl_plan_chunk_elems(size_t slot_bytes, uint32_t nslots, size_t esize);

#endif
