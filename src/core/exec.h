/*
 * exec.h - the portable executor core: runs a plan's steps slice by slice
 * over FIFO connections, and can stop at any slice boundary.
 *
 * Steps name whole blocks of the buffer. The executor walks the plan in
 * rounds, as NCCL's ring loop does: round t moves elements
 * [t * chunk_elems, (t + 1) * chunk_elems) of every step's block. A chunk
 * fits in half a FIFO, so no step ever needs the receiver to be on a later
 * step than its own, and a sender may run one step ahead.
 *
 * A slice either moves completely or not at all: readiness of both the recv
 * FIFO (data present) and the send FIFO (a free slot) is checked before any
 * byte moves, so giving up while waiting leaves no partial effect and the
 * saved context {step, offset} is all that resuming needs.
 *
 * A GPU runs a collective on several channels (blocks) at once: each
 * executor then moves one part of every step (x->part of x->nparts), cut at
 * 16-byte boundaries so that vector loads stay aligned. Sender and receiver
 * of a block cut it alike, as both know its length.
 *
 * The including backend defines, before including this file:
 *   DFCCL_LOAD_ACQUIRE(p)      load a uint64_t counter with acquire order
 *   DFCCL_STORE_RELEASE(p, v)  store a uint64_t counter with release order
 * and moves the data itself (host: memcpy/dfccl_reduce; GPU: all threads of
 * a block), between dfccl_exec_slice_begin() and dfccl_exec_slice_end().
 */
#ifndef DFCCL_EXEC_H
#define DFCCL_EXEC_H

#include <stddef.h>
#include <stdint.h>
#include "include/dfccl.h"
#include "core/fifo.h"
#include "core/plan.h"
#include "core/portable.h"

typedef enum {
    DFCCL_WAIT_NONE = 0,
    DFCCL_WAIT_RECV = 1,   /* no data yet from the previous rank */
    DFCCL_WAIT_SEND = 2,   /* no free slot at the next rank */
    DFCCL_WAIT_HOST = 3    /* GPU LL: our host has not released the inputs yet */
} dfccl_wait_t;

struct dfccl_exec_graph;

/* Dynamic context of one collective on one rank: a few bytes to save. */
/* (step, round, offset) is all the context there is. */
typedef struct dfccl_exec {
    const dfccl_step_t *steps;
    uint32_t            nsteps;
    uint32_t            step;      /* saved: current step */
    uint64_t            round;     /* saved: current round */
    uint64_t            offset;    /* saved: elements of the step's round part moved */
    uint64_t            nrounds;
    uint32_t            part;      /* this executor's part of every step ... */
    uint32_t            nparts;    /* ... of this many (0 or 1: the whole step) */
    uint64_t            vec_lo;    /* vec_hi > 0: the parts are cut from the whole vector, */
    uint64_t            vec_hi;    /* not from each block: this part moves the elements of
                                      every block in [vec_lo, vec_hi) (dfccl_exec_cut_vector) */
    uint64_t            chunk_elems;
    uint64_t            slices;    /* slices moved so far (progress measure) */
    uint64_t            sent_bytes;
    char               *sendbuf;
    char               *recvbuf;
    size_t              esize;
    size_t              slice_elems;
    dfccl_dtype_t       dtype;
    dfccl_op_t          op;
    dfccl_fifo_t       *recv_fifo; /* receive connections, indexed by a step's recv_conn */
    dfccl_fifo_t       *send_fifo; /* send connections, indexed by a step's send_conn ... */
    const uint8_t      *more_conns;/* ... and those of its further sends (plan.h) */
    const uint32_t     *deps;      /* the steps' dependency lists (plan.h) */
    struct dfccl_exec_graph *graph;/* per-step progress (exec_graph.h); NULL: the steps
                                      run as one chain, round by round (below) */
    dfccl_wait_t        waiting;   /* why the last attempt gave up */
    int                 wait_peer; /* ... and the rank it waits for */
} dfccl_exec_t;

/* What one slice reads and writes; NULL where the step has no such part. */
typedef struct dfccl_slice {
    const char *in;    /* received slot */
    const char *src;   /* local input */
    char       *dst;   /* local output */
    char       *out;   /* slot to send */
    char       *out2;  /* a second peer's slot (multicast), or NULL */
    size_t      count; /* elements */
    int         reduce;
} dfccl_slice_t;

DFCCL_INLINE DFCCL_HD char *dfccl_exec_buf(const dfccl_exec_t *x, uint8_t which, uint64_t off)
{
    if (which == DFCCL_BUF_SEND) return x->sendbuf + off * x->esize;
    if (which == DFCCL_BUF_RECV) return x->recvbuf + off * x->esize;
    return NULL;
}

/* Part p of nparts of count elements, cut at 16-byte units (the tail short
 * of a whole unit goes to the last): returns its length and sets *off. */
DFCCL_INLINE DFCCL_HD uint64_t dfccl_exec_cut(uint32_t p, uint32_t nparts, size_t esize,
                                              uint64_t count, uint64_t *off)
{
    uint64_t unit = 16 / esize, units = count / unit, base, rem, len;

    base  = units / nparts;
    rem   = units % nparts;
    *off  = (p * base + (p < rem ? p : rem)) * unit;
    len   = (base + (p < rem)) * unit;
    if (p == nparts - 1) len += count % unit;
    return len;
}

/* This executor's part of step s's block: returns its length and sets *off,
 * its first element within the block. Each block is cut on its own, which
 * sender and receiver do alike, as both know its length; or, where a plan's
 * steps read what other steps wrote in blocks cut otherwise (the
 * hierarchical allreduce), every part takes the elements of its own range
 * of the vector (vec_lo, vec_hi), so that an element is always moved by the
 * same part. The block's place in the vector: its source offset, else its
 * destination's (alike on both ends of a FIFO in an allreduce). */
DFCCL_INLINE DFCCL_HD uint64_t dfccl_exec_part(const dfccl_exec_t *x, const dfccl_step_t *s,
                                               uint64_t *off)
{
    if (x->nparts <= 1) {
        *off = 0;
        return s->count;
    }
    if (x->vec_hi > 0) {
        uint64_t at = s->src_buf ? s->src_off : s->dst_off;
        uint64_t lo = at > x->vec_lo ? at : x->vec_lo;
        uint64_t hi = at + s->count < x->vec_hi ? at + s->count : x->vec_hi;
        *off = hi > lo ? lo - at : 0;
        return hi > lo ? hi - lo : 0;
    }
    return dfccl_exec_cut(x->part, x->nparts, x->esize, s->count, off);
}

/* Cuts the parts from a vector of count elements (see dfccl_exec_part);
 * needs part, nparts and esize set. */
DFCCL_INLINE DFCCL_HD void dfccl_exec_cut_vector(dfccl_exec_t *x, uint64_t count)
{
    uint64_t off, len = dfccl_exec_cut(x->part, x->nparts > 1 ? x->nparts : 1, x->esize, count, &off);

    x->vec_lo = off;
    x->vec_hi = off + len;
}

/* The index of the k-th connection step s sends to (k < s->send). */
DFCCL_INLINE DFCCL_HD uint32_t dfccl_exec_send_conn(const dfccl_exec_t *x, const dfccl_step_t *s,
                                                    uint32_t k)
{
    return k == 0 ? s->send_conn : x->more_conns[s->more_at + k - 1];
}

/* ... and that connection. */
DFCCL_INLINE DFCCL_HD dfccl_fifo_t *dfccl_exec_send_fifo(const dfccl_exec_t *x, const dfccl_step_t *s,
                                                         uint32_t k)
{
    return &x->send_fifo[dfccl_exec_send_conn(x, s, k)];
}

/* The slot the current slice of step s goes to on its k-th send connection. */
DFCCL_INLINE DFCCL_HD char *dfccl_exec_send_slot(const dfccl_exec_t *x, const dfccl_step_t *s,
                                                 uint32_t k)
{
    dfccl_fifo_t *f = dfccl_exec_send_fifo(x, s, k);
    return dfccl_fifo_slot(f, f->count);
}

/* Rounds this executor needs: enough for its part of the largest block.
 * Every rank takes part in every block of a ring collective, so all ranks
 * arrive at the same number. Needs steps, nsteps, esize, part, nparts and
 * chunk_elems set. */
DFCCL_INLINE DFCCL_HD uint64_t dfccl_exec_part_rounds(const dfccl_exec_t *x)
{
    uint64_t rounds = 0;
    for (uint32_t i = 0; i < x->nsteps; i++) {
        uint64_t off, len = dfccl_exec_part(x, &x->steps[i], &off);
        uint64_t r = (len + x->chunk_elems - 1) / x->chunk_elems;
        if (r > rounds) rounds = r;
    }
    return rounds;
}

/* Elements of the current step that belong to the current round; *lo: the
 * first of them, counted from the start of the step's block. */
DFCCL_INLINE DFCCL_HD uint64_t dfccl_exec_round_len(const dfccl_exec_t *x, uint64_t *lo)
{
    uint64_t part_off, count = dfccl_exec_part(x, &x->steps[x->step], &part_off);
    uint64_t first = x->round * x->chunk_elems;

    *lo = part_off + first;
    if (count <= first) return 0;
    return count - first < x->chunk_elems ? count - first : x->chunk_elems;
}

DFCCL_INLINE DFCCL_HD int dfccl_exec_done(dfccl_exec_t *x)
{
    uint64_t lo;
    /* skip finished parts (and empty ones) */
    while (x->round < x->nrounds) {
        if (x->offset < dfccl_exec_round_len(x, &lo)) return 0;
        x->offset = 0;
        if (++x->step == x->nsteps) {
            x->step = 0;
            x->round++;
        }
    }
    return 1;
}

/*
 * The chain (no graph): the steps in program order, round by round. The
 * GPU's ring runs so; the host runs every plan through exec_graph.h, which
 * uses the checks and the publishing below for the step it picked.
 */

/* 1 when step s can move a slice now: data on its receive connection and a
 * free slot on every send connection; else 0, and x->waiting says why. */
DFCCL_INLINE DFCCL_HD int dfccl_exec_step_ready(dfccl_exec_t *x, const dfccl_step_t *s)
{
    dfccl_fifo_t *in = &x->recv_fifo[s->recv_conn];

    if (s->recv && DFCCL_LOAD_ACQUIRE(&in->ctrl->tail) <= in->count) {
        x->waiting = DFCCL_WAIT_RECV;
        x->wait_peer = in->peer;
        return 0;
    }
    for (uint32_t k = 0; k < s->send; k++) {
        dfccl_fifo_t *f = dfccl_exec_send_fifo(x, s, k);
        if (f->count - DFCCL_LOAD_ACQUIRE(&f->ctrl->head) >= f->nslots) {
            x->waiting = DFCCL_WAIT_SEND;
            x->wait_peer = f->peer;
            return 0;
        }
    }
    x->waiting = DFCCL_WAIT_NONE;
    return 1;
}

/* The slice of step s at element lo + x->offset of its block, left
 * elements of its unit still to move. */
DFCCL_INLINE DFCCL_HD void dfccl_exec_slice_fill(const dfccl_exec_t *x, const dfccl_step_t *s,
                                                 uint64_t lo, uint64_t left, dfccl_slice_t *slice)
{
    dfccl_fifo_t *in = &x->recv_fifo[s->recv_conn];

    slice->count  = left < x->slice_elems ? (size_t)left : x->slice_elems;
    slice->reduce = s->reduce;
    slice->in  = s->recv ? dfccl_fifo_slot(in, in->count) : NULL;
    slice->out = s->send ? dfccl_exec_send_slot(x, s, 0) : NULL;
    slice->out2 = s->send > 1 ? dfccl_exec_send_slot(x, s, 1) : NULL;
    slice->src = s->src_buf ? dfccl_exec_buf(x, s->src_buf, s->src_off + lo + x->offset) : NULL;
    slice->dst = s->dst_buf ? dfccl_exec_buf(x, s->dst_buf, s->dst_off + lo + x->offset) : NULL;
}

/* Frees the received slot of step s and hands the sent ones over. */
DFCCL_INLINE DFCCL_HD void dfccl_exec_slice_publish(dfccl_exec_t *x, const dfccl_step_t *s,
                                                    const dfccl_slice_t *slice)
{
    if (s->recv) {
        dfccl_fifo_t *in = &x->recv_fifo[s->recv_conn];
        DFCCL_STORE_RELEASE(&in->ctrl->head, ++in->count);
    }
    for (uint32_t k = 0; k < s->send; k++) {
        dfccl_fifo_t *f = dfccl_exec_send_fifo(x, s, k);
        /* a connection that crosses nodes sends what was written, not the slot */
        if (f->lens != NULL) f->lens[f->count % f->nslots] = (uint32_t)(slice->count * x->esize);
        DFCCL_STORE_RELEASE(&f->ctrl->tail, ++f->count);
        x->sent_bytes += slice->count * x->esize;
    }
    x->slices++;
}

/*
 * Checks whether the next slice of the chain can move now. Returns 1 and
 * fills *slice when it can; 0 (and records why in x->waiting) when it must
 * wait. Must not be called when dfccl_exec_done() is true.
 */
DFCCL_INLINE DFCCL_HD int dfccl_exec_slice_begin(dfccl_exec_t *x, dfccl_slice_t *slice)
{
    const dfccl_step_t *s = &x->steps[x->step];
    uint64_t lo, left = dfccl_exec_round_len(x, &lo) - x->offset;

    if (!dfccl_exec_step_ready(x, s)) return 0;
    dfccl_exec_slice_fill(x, s, lo, left, slice);
    return 1;
}

/* Publishes the slice that was moved: frees the received slot, hands the
 * sent one over, and advances the saved context. */
DFCCL_INLINE DFCCL_HD void dfccl_exec_slice_end(dfccl_exec_t *x, const dfccl_slice_t *slice)
{
    dfccl_exec_slice_publish(x, &x->steps[x->step], slice);
    x->offset += slice->count;
}

#endif
