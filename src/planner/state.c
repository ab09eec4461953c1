/*
 * state.c - link occupancy and chunk holdings of a growing allgather
 * schedule (state.h).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "planner/state.h"

int pl_state_link_free(const pl_state_t *st, int l, int k)
{
    const pl_timing_t *tm = &st->in->timing[l];

    for (int t = k; t < k + tm->span && t < st->busy_len[l]; t++)
        if (st->busy[l][t] >= tm->per_epoch) return 0;
    return 1;
}

int pl_state_link_next(const pl_state_t *st, int l, int k)
{
    while (!pl_state_link_free(st, l, k)) k++;
    return k;
}

int pl_state_holds(const pl_state_t *st, int c, int n, int k)
{
    const pl_topology_t *t = st->in->topo;

    if (t->nodes[n].kind == PL_GPU) return pl_state_avail(st, c, t->nodes[n].rank) <= k;
    if (!pl_map_get(&st->at_switch, pl_key(c, n, t->nnodes, k), NULL)) return 0;
    return !PL_UNICAST(t, n) || !pl_map_get(&st->left_switch, pl_key(c, n, t->nnodes, k), NULL);
}

int pl_state_may_enter(const pl_state_t *st, int c, int n, int k)
{
    const pl_topology_t *t = st->in->topo;
    return !PL_UNICAST(t, n) || !pl_map_get(&st->at_switch, pl_key(c, n, t->nnodes, k), NULL);
}

/* A switch without copies has sent the chunk on: it holds it no more. */
static int leave(pl_state_t *st, int c, int l, int k)
{
    const pl_topology_t *t = st->in->topo;
    int u = t->links[l].src;

    if (!PL_UNICAST(t, u)) return 0;
    return pl_map_put(&st->left_switch, pl_key(c, u, t->nnodes, k), 1);
}

static int occupy(pl_state_t *st, int l, int k)
{
    const pl_timing_t *tm = &st->in->timing[l];
    int need = k + tm->span;

    if (need > st->busy_len[l]) {
        int len = st->busy_len[l] ? st->busy_len[l] : 16;
        while (len < need) len *= 2;
        int *b = realloc(st->busy[l], sizeof(int) * (size_t)len);
        if (b == NULL) return -1;
        memset(b + st->busy_len[l], 0, sizeof(int) * (size_t)(len - st->busy_len[l]));
        st->busy[l] = b;
        st->busy_len[l] = len;
    }
    for (int t = k; t < need; t++) st->busy[l][t]++;
    if (need > st->last) st->last = need;
    return 0;
}

/* The flow's effect on holdings: the far end holds the chunk from its
 * arrival (a GPU from then on, a switch in that epoch only). */
static int deliver(pl_state_t *st, int c, int l, int k)
{
    const pl_topology_t *t = st->in->topo;
    int v = t->links[l].dst, arr = k + pl_hop(st->in, l);

    if (arr > st->last) st->last = arr;
    if (t->nodes[v].kind == PL_GPU) {
        int *av = &st->avail[(size_t)c * t->ngpus + t->nodes[v].rank];
        if (*av == INT_MAX) {
            st->missing[c]--;
            st->unmet--;
        }
        if (arr < *av) *av = arr;
        return 0;
    }
    int64_t key = pl_key(c, v, t->nnodes, arr);
    if (pl_map_get(&st->at_switch, key, NULL)) return 0;
    if (pl_map_put(&st->at_switch, key, 1) != 0 ||
        pl_reserve((void **)&st->transits[c], &st->transits_cap[c], st->ntransits[c] + 1,
                   sizeof(pl_transit_t)) != 0)
        return -1;
    st->transits[c][st->ntransits[c]++] = (pl_transit_t){ v, arr };
    return 0;
}

int pl_state_send(pl_state_t *st, int c, int l, int k)
{
    if (occupy(st, l, k) != 0 || leave(st, c, l, k) != 0 || deliver(st, c, l, k) != 0) return -1;
    return pl_schedule_add(st->s, c, l, k, PL_PHASE_ONLY);
}

int pl_state_init(pl_state_t *st, const pl_instance_t *in, pl_schedule_t *s)
{
    const pl_topology_t *t = in->topo;
    size_t nc = (size_t)in->nchunks, ng = (size_t)t->ngpus;

    memset(st, 0, sizeof(*st));
    st->in = in;
    st->s = s;
    st->busy = calloc((size_t)t->nlinks, sizeof(int *));
    st->busy_len = calloc((size_t)t->nlinks, sizeof(int));
    st->avail = malloc(sizeof(int) * nc * ng);
    st->missing = malloc(sizeof(int) * nc);
    st->transits = calloc(nc, sizeof(pl_transit_t *));
    st->ntransits = calloc(nc, sizeof(size_t));
    st->transits_cap = calloc(nc, sizeof(size_t));
    if (!st->busy || !st->busy_len || !st->avail || !st->missing || !st->transits ||
        !st->ntransits || !st->transits_cap)
        return -1;
    for (size_t c = 0; c < nc; c++) {
        int owner = t->nodes[pl_chunk_owner_node(in, (int)c)].rank;
        for (size_t g = 0; g < ng; g++) st->avail[c * ng + g] = (int)g == owner ? 0 : INT_MAX;
        st->missing[c] = (int)ng - 1;
    }
    st->unmet = (int)(nc * (ng - 1));
    /* The flows already there, in time order so that holdings come out as
     * the schedule makes them. */
    pl_schedule_sort(s);
    for (size_t i = 0; i < s->nflows; i++)
        if (occupy(st, s->flows[i].link, s->flows[i].epoch) != 0 ||
            leave(st, s->flows[i].chunk, s->flows[i].link, s->flows[i].epoch) != 0 ||
            deliver(st, s->flows[i].chunk, s->flows[i].link, s->flows[i].epoch) != 0)
            return -1;
    return 0;
}

void pl_state_fini(pl_state_t *st)
{
    if (st->busy != NULL)
        for (int l = 0; l < st->in->topo->nlinks; l++) free(st->busy[l]);
    if (st->transits != NULL)
        for (int c = 0; c < st->in->nchunks; c++) free(st->transits[c]);
    free(st->busy);
    free(st->busy_len);
    free(st->avail);
    free(st->missing);
    free(st->transits);
    free(st->ntransits);
    free(st->transits_cap);
    pl_map_free(&st->at_switch);
    pl_map_free(&st->left_switch);
    memset(st, 0, sizeof(*st));
}

int pl_state_finish(const pl_state_t *st)
{
    size_t n = (size_t)st->in->nchunks * (size_t)st->in->topo->ngpus;
    int last = 0;

    for (size_t i = 0; i < n; i++)
        if (st->avail[i] > last) last = st->avail[i];
    return last;
}
