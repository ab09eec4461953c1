/* plan.c - ring programs for allreduce, allgather and reduce-scatter. */
#include "plan.h"

typedef struct {
    dfccl_step_t *steps;
    uint32_t      n;
} plan_builder_t;

static void plan_push(plan_builder_t *b, int recv, int send, int reduce,
                      dfccl_buf_t src_buf, uint64_t src_off,
                      dfccl_buf_t dst_buf, uint64_t dst_off, uint64_t count)
{
    dfccl_step_t *s = &b->steps[b->n++];
    s->recv    = (uint8_t)recv;
    s->send    = (uint8_t)send;
    s->reduce  = (uint8_t)reduce;
    s->src_buf = (uint8_t)src_buf;
    s->src_off = src_off;
    s->dst_buf = (uint8_t)dst_buf;
    s->dst_off = dst_off;
    s->count   = count;
}

static int ring_index(int rank, int delta, int size)
{
    return ((rank + delta) % size + size) % size;
}

uint32_t dfccl_plan_max_steps(int size)
{
    /* allreduce: 2 (size - 1) transfer steps; size 1 needs one copy. */
    return 2u * (uint32_t)size + 1u;
}

/* Allreduce cuts the buffer into size chunks of near-equal length. */
static void allreduce_chunk(size_t count, int size, int c, uint64_t *off, uint64_t *len)
{
    size_t base = count / (size_t)size, rem = count % (size_t)size;
    *len = base + ((size_t)c < rem);
    *off = (uint64_t)c * base + ((size_t)c < rem ? (size_t)c : rem);
}

static void plan_allreduce(plan_builder_t *b, int r, int n, int in_place, size_t count)
{
    dfccl_buf_t src = in_place ? DFCCL_BUF_RECV : DFCCL_BUF_SEND;
    uint64_t off, len;
    int j, c;

    if (n == 1) {
        if (!in_place) plan_push(b, 0, 0, 0, src, 0, DFCCL_BUF_RECV, 0, count);
        return;
    }
    /* reduce-scatter phase: after it, this rank holds chunk r fully reduced */
    c = ring_index(r, -1, n);
    allreduce_chunk(count, n, c, &off, &len);
    plan_push(b, 0, 1, 0, src, off, DFCCL_BUF_NONE, 0, len);
    for (j = 2; j < n; j++) {
        c = ring_index(r, -j, n);
        allreduce_chunk(count, n, c, &off, &len);
        plan_push(b, 1, 1, 1, src, off, DFCCL_BUF_NONE, 0, len);
    }
    allreduce_chunk(count, n, r, &off, &len);
    plan_push(b, 1, 1, 1, src, off, DFCCL_BUF_RECV, off, len);
    /* allgather phase: forward the reduced chunks around the ring */
    for (j = 1; j < n - 1; j++) {
        c = ring_index(r, -j, n);
        allreduce_chunk(count, n, c, &off, &len);
        plan_push(b, 1, 1, 0, DFCCL_BUF_NONE, 0, DFCCL_BUF_RECV, off, len);
    }
    c = ring_index(r, 1, n);
    allreduce_chunk(count, n, c, &off, &len);
    plan_push(b, 1, 0, 0, DFCCL_BUF_NONE, 0, DFCCL_BUF_RECV, off, len);
}

static void plan_allgather(plan_builder_t *b, int r, int n, int in_place, size_t count)
{
    uint64_t own = (uint64_t)r * count;
    int j;

    if (in_place) {
        if (n > 1) plan_push(b, 0, 1, 0, DFCCL_BUF_RECV, own, DFCCL_BUF_NONE, 0, count);
    } else {
        plan_push(b, 0, n > 1, 0, DFCCL_BUF_SEND, 0, DFCCL_BUF_RECV, own, count);
    }
    for (j = 1; j < n - 1; j++) {
        uint64_t c = (uint64_t)ring_index(r, -j, n);
        plan_push(b, 1, 1, 0, DFCCL_BUF_NONE, 0, DFCCL_BUF_RECV, c * count, count);
    }
    if (n > 1) {
        uint64_t c = (uint64_t)ring_index(r, 1, n);
        plan_push(b, 1, 0, 0, DFCCL_BUF_NONE, 0, DFCCL_BUF_RECV, c * count, count);
    }
}

static uint64_t displacement(const size_t *counts, int c)
{
    uint64_t d = 0;
    for (int i = 0; i < c; i++) d += counts[i];
    return d;
}

static void plan_reduce_scatter(plan_builder_t *b, int r, int n, int in_place,
                                const size_t *counts)
{
    dfccl_buf_t src = in_place ? DFCCL_BUF_RECV : DFCCL_BUF_SEND;
    uint64_t own_off = displacement(counts, r);
    int j, c;

    if (n == 1) {
        if (!in_place) plan_push(b, 0, 0, 0, src, 0, DFCCL_BUF_RECV, 0, counts[0]);
        return;
    }
    c = ring_index(r, -1, n);
    plan_push(b, 0, 1, 0, src, displacement(counts, c), DFCCL_BUF_NONE, 0, counts[c]);
    for (j = 2; j < n; j++) {
        c = ring_index(r, -j, n);
        plan_push(b, 1, 1, 1, src, displacement(counts, c), DFCCL_BUF_NONE, 0, counts[c]);
    }
    /* In place, the result goes straight to the front: rounds move ascending
     * element ranges, so every input element still to be read (this round's
     * later slices, later rounds) lies past what has been written, and the
     * movers combine in the received slot where this slice's source and
     * destination overlap. The rest of the buffer keeps the caller's input,
     * as MPI's in-place reduce-scatter leaves it. */
    plan_push(b, 1, 0, 1, src, own_off, DFCCL_BUF_RECV, 0, counts[r]);
}

int dfccl_plan_parts_allowed(dfccl_coll_type_t type, int in_place, const size_t *counts, int size)
{
    uint64_t displ = 0;

    if (type != DFCCL_COLL_REDUCE_SCATTER || !in_place) return 1;
    for (int r = 0; r < size; r++) {
        if (displ != 0 && counts[r] != 0) return 0;   /* rank r moves its result */
        displ += counts[r];
    }
    return 1;
}

uint64_t dfccl_plan_chunk_elems(size_t slot_bytes, uint32_t nslots, size_t esize)
{
    uint32_t slices = nslots / 2 ? nslots / 2 : 1;
    return (uint64_t)slices * (slot_bytes / esize);
}

dfccl_status_t dfccl_plan_ring(dfccl_coll_type_t type, int rank, int size, int in_place,
                               size_t count, const size_t *counts,
                               dfccl_step_t *steps, uint32_t *nsteps, uint64_t *max_block)
{
    plan_builder_t b = { steps, 0 };

    if (size < 1 || rank < 0 || rank >= size) return DFCCL_ERR_INVALID_PARAM;
    switch (type) {
    case DFCCL_COLL_ALLREDUCE:
        plan_allreduce(&b, rank, size, in_place, count);
        break;
    case DFCCL_COLL_ALLGATHER:
        plan_allgather(&b, rank, size, in_place, count);
        break;
    case DFCCL_COLL_REDUCE_SCATTER:
        if (counts == NULL) return DFCCL_ERR_INVALID_PARAM;
        plan_reduce_scatter(&b, rank, size, in_place, counts);
        break;
    default:
        return DFCCL_ERR_INVALID_PARAM;
    }
    *nsteps = b.n;
    *max_block = 0;
    for (uint32_t i = 0; i < b.n; i++)
        if (steps[i].count > *max_block) *max_block = steps[i].count;
    return DFCCL_OK;
}
