/* exec_host.c - the host backend's data mover around the portable core. */
#include <string.h>
#include "backends/host/exec_host.h"
#include "core/reduce.h"

static void host_slice_move(const dfccl_exec_t *x, const dfccl_slice_t *s)
{
    size_t bytes = s->count * x->esize;

    if (s->in && s->reduce) {
        if (s->dst && s->dst != s->src && s->dst < s->src + bytes && s->src < s->dst + bytes) {
            /* an in-place reduce-scatter's result moving to the front over
             * its own input: combine in the received slot (ours until it is
             * released), then copy */
            dfccl_reduce((char *)s->in, s->in, s->src, s->count, x->dtype, x->op);
            memmove(s->dst, s->in, bytes);
            if (s->out) memcpy(s->out, s->in, bytes);
        } else if (s->dst) {
            dfccl_reduce(s->dst, s->in, s->src, s->count, x->dtype, x->op);
            if (s->out) memcpy(s->out, s->dst, bytes);
        } else if (s->out) {
            dfccl_reduce(s->out, s->in, s->src, s->count, x->dtype, x->op);
        }
    } else if (s->in) {
        if (s->dst) memcpy(s->dst, s->in, bytes);
        if (s->out) memcpy(s->out, s->in, bytes);
    } else {
        if (s->dst && s->dst != s->src) memmove(s->dst, s->src, bytes);
        if (s->out) memcpy(s->out, s->src, bytes);
    }
}

/* The chain (x->graph NULL), as the GPU's ring runs: tested on the host. */
static dfccl_exec_result_t host_advance_chain(dfccl_exec_t *x, unsigned max_slices)
{
    unsigned moved = 0;
    dfccl_slice_t slice;

    while (!dfccl_exec_done(x)) {
        if (moved == max_slices) return DFCCL_EXEC_PROGRESS;
        if (!dfccl_exec_slice_begin(x, &slice))
            return moved ? DFCCL_EXEC_PROGRESS : DFCCL_EXEC_BLOCKED;
        host_slice_move(x, &slice);
        if (slice.out2 != NULL) memcpy(slice.out2, slice.out, slice.count * x->esize);
        dfccl_exec_slice_end(x, &slice);
        moved++;
    }
    return DFCCL_EXEC_DONE;
}

dfccl_exec_result_t dfccl_exec_host_advance(dfccl_exec_t *x, unsigned max_slices)
{
    unsigned moved = 0;
    dfccl_slice_t slice;

    if (x->graph == NULL) return host_advance_chain(x, max_slices);
    while (!dfccl_graph_done(x)) {
        const dfccl_step_t *s;
        if (moved == max_slices) return DFCCL_EXEC_PROGRESS;
        if (!dfccl_graph_slice_begin(x, &slice))
            return moved ? DFCCL_EXEC_PROGRESS : DFCCL_EXEC_BLOCKED;
        host_slice_move(x, &slice);
        s = &x->steps[x->step];
        /* multicast: the same value to every further peer */
        for (uint32_t k = 1; k < s->send; k++)
            memcpy(dfccl_exec_send_slot(x, s, k), slice.out, slice.count * x->esize);
        dfccl_graph_slice_end(x, &slice);
        moved++;
    }
    return DFCCL_EXEC_DONE;
}
