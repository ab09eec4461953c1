/*
 * fifo.h - one direction of a connection: a ring of slots that lives in the
 * receiver's memory, with two monotone counters.
 *
 *   tail: slots the sender has filled     (written only by the sender)
 *   head: slots the receiver has drained  (written only by the receiver)
 *
 * Counters only grow, so a primitive that gave up while waiting can resume
 * later by re-reading them: nothing was half-done.
 */
#ifndef DFCCL_FIFO_H
#define DFCCL_FIFO_H

#include <stddef.h>
#include <stdint.h>
#include "core/portable.h"

#define DFCCL_CACHELINE 64

typedef struct dfccl_fifo_ctrl {
    volatile uint64_t tail;
    char              pad0[DFCCL_CACHELINE - sizeof(uint64_t)];
    volatile uint64_t head;
    char              pad1[DFCCL_CACHELINE - sizeof(uint64_t)];
} dfccl_fifo_ctrl_t;

/* A side's view of a FIFO: shared control block and slots, plus its own copy
 * of the counter it owns (tail for the sender, head for the receiver). */
typedef struct dfccl_fifo {
    dfccl_fifo_ctrl_t *ctrl;
    char              *slots;
    size_t             slot_bytes;
    uint32_t           nslots;
    int                peer;     /* the rank at the other end, for diagnosis */
    uint64_t           count;    /* sender: slots produced; receiver: consumed */
    uint32_t          *lens;     /* sender over the network: bytes written per slot
                                    (the proxy sends only those); else NULL */
} dfccl_fifo_t;

DFCCL_INLINE DFCCL_HD size_t dfccl_fifo_bytes(size_t slot_bytes, uint32_t nslots)
{
    return sizeof(dfccl_fifo_ctrl_t) + slot_bytes * nslots;
}

DFCCL_INLINE DFCCL_HD char *dfccl_fifo_slot(const dfccl_fifo_t *fifo, uint64_t index)
{
    return fifo->slots + (size_t)(index % fifo->nslots) * fifo->slot_bytes;
}

#endif
