/*
 * schedule.c - schedules in memory: a list of flows (a chunk sent over a link
 * in an epoch), pruned to trees and reversed in time.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "planner/planner.h"
#include "planner/util.h"

void pl_schedule_init(pl_schedule_t *s)
{
    memset(s, 0, sizeof(*s));
}

void pl_schedule_fini(pl_schedule_t *s)
{
    free(s->flows);
    s->flows = NULL;
    s->nflows = s->cap = 0;
}

void pl_schedule_swap_flows(pl_schedule_t *a, pl_schedule_t *b)
{
    pl_flow_t *flows = a->flows;
    size_t nflows = a->nflows, cap = a->cap;
    int epochs = a->epochs;

    a->flows = b->flows;
    a->nflows = b->nflows;
    a->cap = b->cap;
    a->epochs = b->epochs;
    b->flows = flows;
    b->nflows = nflows;
    b->cap = cap;
    b->epochs = epochs;
}

int pl_schedule_add(pl_schedule_t *s, int chunk, int link, int epoch, int phase)
{
    if (pl_reserve((void **)&s->flows, &s->cap, s->nflows + 1, sizeof(*s->flows)) != 0)
        return -1;
    s->flows[s->nflows++] = (pl_flow_t){ chunk, link, epoch, phase };
    return 0;
}

int pl_schedule_copy(pl_schedule_t *dst, const pl_schedule_t *src)
{
    pl_flow_t *f = NULL;

    if (src->nflows > 0) {
        f = malloc(sizeof(*f) * src->nflows);
        if (f == NULL) return -1;
        memcpy(f, src->flows, sizeof(*f) * src->nflows);
    }
    pl_schedule_fini(dst);
    *dst = *src;
    dst->flows = f;
    dst->cap = src->nflows;
    return 0;
}

static int flow_order(const void *a, const void *b)
{
    const pl_flow_t *x = a, *y = b;

    if (x->phase != y->phase) return x->phase - y->phase;
    if (x->epoch != y->epoch) return x->epoch < y->epoch ? -1 : 1;
    if (x->chunk != y->chunk) return x->chunk - y->chunk;
    return x->link - y->link;
}

/* Phase, then epoch, chunk and link: files list flows in the order they
 * happen, and the same schedule always prints the same. */
void pl_schedule_sort(pl_schedule_t *s)
{
    if (s->nflows > 1) qsort(s->flows, s->nflows, sizeof(*s->flows), flow_order);
}

/* qsort has no context argument in C11: the flows being ordered. */
static const pl_flow_t *desc_flows;

static int by_epoch_desc(const void *a, const void *b)
{
    const pl_flow_t *x = &desc_flows[*(const size_t *)a], *y = &desc_flows[*(const size_t *)b];

    if (x->epoch != y->epoch) return x->epoch > y->epoch ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

void pl_schedule_prune(const pl_instance_t *in, pl_schedule_t *s)
{
    const pl_topology_t *t = in->topo;
    size_t n = s->nflows, *order = malloc(sizeof(size_t) * (n ? n : 1));
    int64_t *first = malloc(sizeof(int64_t) * (size_t)in->nchunks * (size_t)t->ngpus);
    char *keep = calloc(n ? n : 1, 1);
    pl_map_t chosen = { 0 }, departs = { 0 };

    if (order == NULL || first == NULL || keep == NULL) goto out; /* pruning is optional */
    /* The first arrival of each chunk at each GPU is the one that counts;
     * later copies carry nothing new. */
    for (size_t i = 0; i < (size_t)in->nchunks * (size_t)t->ngpus; i++) first[i] = -1;
    for (size_t i = 0; i < n; i++) {
        const pl_flow_t *f = &s->flows[i];
        int v = t->links[f->link].dst, arr = f->epoch + pl_hop(in, f->link);
        if (t->nodes[v].kind == PL_GPU) {
            if (v == pl_chunk_owner_node(in, f->chunk)) continue;
            int64_t *slot = &first[(size_t)f->chunk * (size_t)t->ngpus + (size_t)t->nodes[v].rank];
            if (*slot < 0 || arr < s->flows[*slot].epoch + pl_hop(in, s->flows[*slot].link))
                *slot = (int64_t)i;
        } else if (!pl_map_get(&chosen, pl_key(f->chunk, v, t->nnodes, arr), NULL)) {
            /* one way into a switch at an epoch is enough to copy from */
            if (pl_map_put(&chosen, pl_key(f->chunk, v, t->nnodes, arr), (int64_t)i) != 0) goto out;
        }
    }
    for (size_t i = 0; i < (size_t)in->nchunks * (size_t)t->ngpus; i++)
        if (first[i] >= 0) keep[first[i]] = 1;
    /* Latest first: whether a path into a switch leads anywhere is known
     * once every flow leaving that switch later has been judged. */
    for (size_t i = 0; i < n; i++) order[i] = i;
    desc_flows = s->flows;
    qsort(order, n, sizeof(size_t), by_epoch_desc);
    for (size_t j = 0; j < n; j++) {
        size_t i = order[j];
        const pl_flow_t *f = &s->flows[i];
        int u = t->links[f->link].src, v = t->links[f->link].dst;
        if (t->nodes[v].kind == PL_SWITCH) {
            int64_t key = pl_key(f->chunk, v, t->nnodes, f->epoch + pl_hop(in, f->link)), who;
            keep[i] = pl_map_get(&chosen, key, &who) && who == (int64_t)i &&
                      pl_map_get(&departs, key, NULL);
        }
        if (keep[i] && t->nodes[u].kind == PL_SWITCH &&
            pl_map_put(&departs, pl_key(f->chunk, u, t->nnodes, f->epoch), 1) != 0) goto out;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (keep[i]) s->flows[m++] = s->flows[i];
    s->nflows = m;
out:
    free(order);
    free(first);
    free(keep);
    pl_map_free(&chosen);
    pl_map_free(&departs);
}

int pl_schedule_reverse(const pl_instance_t *in, const pl_schedule_t *ag, int epochs,
                        pl_schedule_t *rs)
{
    /* A hop sent at k arrives at k + hop; read backwards from the end at
     * `epochs`, it is sent at epochs - (k + hop). Occupancy windows keep
     * their length, so capacity holds; a GPU that forwarded a chunk after
     * receiving it now receives every part before sending the sum; a
     * switch that copied now reduces what meets there. A hop from a switch
     * to a GPU is one epoch shorter than the other way (pl_hop): turned
     * round, the hops into a GPU still end at epochs - k, and those out of
     * a switch leave an epoch later, when what meets there has arrived. */
    for (size_t i = 0; i < ag->nflows; i++) {
        const pl_flow_t *f = &ag->flows[i];
        int to_switch = in->topo->nodes[in->topo->links[f->link].dst].kind == PL_SWITCH;
        int k = epochs - f->epoch - pl_hop(in, f->link) + to_switch;
        if (k < 0) return -1;
        if (pl_schedule_add(rs, f->chunk, f->link, k, f->phase) != 0) return -1;
    }
    return 0;
}
