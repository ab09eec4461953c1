/*
 * plan_file_build.c - what a loaded plan tells its user: its shape, the
 * connections it needs, and a rank's program for one call, its chunks laid
 * onto the call's elements.
 */
#include "core/plan_build.h"
#include "engine/plan_file_model.h"

dfccl_coll_type_t dfccl_plan_file_type(const dfccl_plan_file_t *pf)
{
    return pf->type;
}

int dfccl_plan_file_ranks(const dfccl_plan_file_t *pf)
{
    return pf->ranks;
}

uint32_t dfccl_plan_file_chunks(const dfccl_plan_file_t *pf)
{
    return pf->chunks;
}

const char *dfccl_plan_file_name(const dfccl_plan_file_t *pf)
{
    return pf->name;
}

uint32_t dfccl_plan_file_max_steps(const dfccl_plan_file_t *pf)
{
    return pf->max_steps;
}

uint32_t dfccl_plan_file_max_more(const dfccl_plan_file_t *pf)
{
    return pf->max_more;
}

uint32_t dfccl_plan_file_max_deps(const dfccl_plan_file_t *pf)
{
    return pf->max_deps;
}

int dfccl_plan_file_in_place(const dfccl_plan_file_t *pf, const char **why)
{
    if (why != NULL) *why = pf->in_place ? "" : pf->in_place_why;
    return pf->in_place;
}

int dfccl_plan_file_send_peers(const dfccl_plan_file_t *pf, int rank, int *peers, int max)
{
    int n = 0;

    if (rank < 0 || rank >= pf->ranks) return -1;
    /* links are numbered by sender, then receiver: sorted already */
    for (uint32_t l = 0; l < pf->nlinks; l++)
        if (pf->link_from[l] == rank) {
            if (n < max) peers[n] = pf->link_to[l];
            n++;
        }
    return n;
}

/*
 * Elements of chunks [c, c + n) for a call of count elements per block: the
 * block's elements split into near-equal chunks as plan_split does, the
 * block placed where buf keeps it (allgather's send buffer and
 * reduce-scatter's receive buffer hold only the rank's own block, at 0).
 */
static void chunk_span(const dfccl_plan_file_t *pf, uint64_t count, dfccl_buf_t buf, uint32_t c,
                       uint32_t n, uint64_t *off, uint64_t *len)
{
    uint32_t per = pf_block_chunks(pf), block = c / per;
    uint64_t base = (uint64_t)block * count, first, last, last_len;

    if ((pf->type == DFCCL_COLL_ALLGATHER && buf == DFCCL_BUF_SEND) ||
        (pf->type == DFCCL_COLL_REDUCE_SCATTER && buf == DFCCL_BUF_RECV) ||
        pf->type == DFCCL_COLL_ALLREDUCE)
        base = 0;
    plan_split(base, count, (int)per, (int)(c % per), &first, len);
    plan_split(base, count, (int)per, (int)((c + n - 1) % per), &last, &last_len);
    *off = first;
    *len = last + last_len - first;
}

int dfccl_plan_file_fits(const dfccl_plan_file_t *pf, int size, const int *node)
{
    if (pf->ranks != size) return 0;
    for (int r = 0; pf->nodes != NULL && r < size; r++)
        if (pf->nodes[r] != node[r]) return 0;
    return 1;
}

int dfccl_plan_file_serves_bytes(const dfccl_plan_file_t *pf, uint64_t bytes)
{
    return bytes >= pf->min_bytes && bytes <= pf->max_bytes;
}

uint64_t dfccl_plan_file_digest(const dfccl_plan_file_t *pf) { return pf->digest; }

/* Whether the plan serves the call; count: elements per block. */
static dfccl_status_t call_served(const dfccl_plan_file_t *pf, const dfccl_plan_call_t *call,
                                  uint64_t *count)
{
    if (call->type != pf->type) return DFCCL_ERR_UNSUPPORTED;
    if (call->in_place && !pf->in_place) return DFCCL_ERR_UNSUPPORTED;
    *count = call->count;
    if (call->type == DFCCL_COLL_REDUCE_SCATTER) {
        if (call->counts == NULL) return DFCCL_ERR_INVALID_PARAM;
        /* the plan's blocks are alike: Reduce_scatter_block, or equal counts */
        for (int r = 1; r < pf->ranks; r++)
            if (call->counts[r] != call->counts[0]) return DFCCL_ERR_UNSUPPORTED;
        *count = call->counts[0];
    }
    return DFCCL_OK;
}

dfccl_status_t dfccl_plan_file_build(const dfccl_plan_file_t *pf, const dfccl_plan_call_t *call,
                                     int rank, dfccl_plan_t *plan)
{
    const pf_program_t *p;
    uint64_t count, max_block = 0;
    dfccl_status_t status;

    if (rank < 0 || rank >= pf->ranks) return DFCCL_ERR_INVALID_PARAM;
    if ((status = call_served(pf, call, &count)) != DFCCL_OK) return status;
    p = &pf->programs[rank];
    if (plan->cap < p->nsteps || plan->more_cap < p->nmore || plan->deps_cap < p->ndeps)
        return DFCCL_ERR_INVALID_PARAM;
    plan->nmore = plan->ndeps = 0;
    for (uint32_t i = 0; i < p->nsteps; i++) {
        const pf_step_t *f = &p->steps[i];
        dfccl_step_t *s = &plan->steps[i];
        dfccl_step_peers_t *q = &plan->peers[i];
        /* in place, the send buffer's chunks are at their places in the
         * receive buffer */
        dfccl_buf_t src = (dfccl_buf_t)f->src;
        uint64_t off = 0, len = 0;
        if (call->in_place && src == DFCCL_BUF_SEND) src = DFCCL_BUF_RECV;
        *s = (dfccl_step_t){ 0 };
        s->recv = f->recv >= 0;
        s->send = f->nsend;
        s->reduce = f->reduce;
        s->src_buf = (uint8_t)src;
        s->dst_buf = f->dst;
        if (f->src != DFCCL_BUF_NONE) {
            chunk_span(pf, count, src, f->chunk, f->nchunks, &off, &len);
            s->src_off = off;
        }
        if (f->dst != DFCCL_BUF_NONE) {
            chunk_span(pf, count, DFCCL_BUF_RECV, f->chunk, f->nchunks, &off, &len);
            s->dst_off = off;
        }
        /* a step without buffers (receive and send) has the same length */
        if (f->src == DFCCL_BUF_NONE && f->dst == DFCCL_BUF_NONE)
            chunk_span(pf, count, DFCCL_BUF_RECV, f->chunk, f->nchunks, &off, &len);
        s->count = len;
        if (len > max_block) max_block = len;
        q->recv = f->recv;
        q->send = f->nsend > 0 ? f->send[0] : -1;
        s->more_at = plan->nmore;
        for (uint32_t k = 1; k < f->nsend; k++) plan->more_peers[plan->nmore++] = f->send[k];
        /* version 1 runs in program order; version 2 by its dependencies */
        s->chain = pf->version < 2 && i > 0;
        s->dep_at = plan->ndeps;
        s->ndeps = f->ndeps;
        for (uint32_t k = 0; k < f->ndeps; k++) plan->deps[plan->ndeps++] = f->deps[k];
    }
    plan->nsteps = p->nsteps;
    plan->max_block = max_block;
    return DFCCL_OK;
}
