/*
 * greedy.c - the greedy allgather planner: over and over, the (chunk, GPU)
 * delivery that can complete earliest, given everything already planned, is
 * planned along its earliest path. It always yields a valid schedule (the
 * fallback of every other planner, and their horizon).
 *
 * The earliest path is a search over (node, epoch): a GPU that holds a chunk
 * may send it in any later epoch where the link is free (store-and-forward),
 * so only its earliest departure on each link matters unless the far end is a
 * switch; a switch forwards only in the epoch a chunk reaches it, so for it
 * every arrival epoch is a state of its own. A path may copy from where the
 * chunk already passes a switch (multicast, where the switch copies), and
 * from any GPU holding it.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include "planner/state.h"

enum { GPU_READY, DEPART, AT_SWITCH, ARRIVE };

typedef struct {
    int node, epoch;   /* where the chunk is, from when */
    int link, depart;  /* the hop that brought it (link -1: a source) */
    int parent;        /* record it came from, -1 for sources */
} rec_t;

typedef struct {
    int type, rec;     /* DEPART: rec is where it leaves from */
    int link, depart;  /* DEPART only */
} item_t;

typedef struct {
    pl_state_t *st;
    int c;
    int from;      /* no send before this epoch */
    rec_t *recs;
    size_t nrecs, recs_cap;
    item_t *items;
    size_t nitems, items_cap;
    pl_heap_t heap;
    pl_map_t seen; /* switch states expanded in this search */
} search_t;

static int add_rec(search_t *s, int node, int epoch, int link, int depart, int parent)
{
    if (pl_reserve((void **)&s->recs, &s->recs_cap, s->nrecs + 1, sizeof(rec_t)) != 0) return -1;
    s->recs[s->nrecs] = (rec_t){ node, epoch, link, depart, parent };
    return (int)s->nrecs++;
}

static int push(search_t *s, int key, int type, int rec, int link, int depart)
{
    if (rec < 0 ||
        pl_reserve((void **)&s->items, &s->items_cap, s->nitems + 1, sizeof(item_t)) != 0)
        return -1;
    s->items[s->nitems] = (item_t){ type, rec, link, depart };
    return pl_heap_push(&s->heap, key, (int64_t)s->nitems++);
}

/* A hop from the state in record r over link l leaving in epoch k. */
static int hop(search_t *s, int r, int l, int k)
{
    const pl_instance_t *in = s->st->in;
    int v = in->topo->links[l].dst, arr = k + pl_hop(in, l);

    if (in->topo->nodes[v].kind == PL_GPU) {
        if (pl_state_avail(s->st, s->c, in->topo->nodes[v].rank) != INT_MAX) return 0;
        return push(s, arr, ARRIVE, add_rec(s, v, arr, l, k, r), -1, -1);
    }
    if (!pl_state_may_enter(s->st, s->c, v, arr)) return 0;
    return push(s, arr, AT_SWITCH, add_rec(s, v, arr, l, k, r), -1, -1);
}

static int expand(search_t *s, const item_t *it)
{
    const pl_instance_t *in = s->st->in;
    const pl_topology_t *t = in->topo;
    rec_t r = s->recs[it->rec];

    switch (it->type) {
    case GPU_READY:
        for (int i = t->out_start[r.node]; i < t->out_start[r.node + 1]; i++) {
            int l = t->out[i], k = pl_state_link_next(s->st, l, r.epoch);
            if (t->nodes[t->links[l].dst].kind == PL_GPU) {
                if (hop(s, it->rec, l, k) != 0) return -1;
            } else if (push(s, k + pl_hop(in, l), DEPART, it->rec, l, k) != 0) {
                return -1;
            }
        }
        return 0;
    case DEPART:
        /* Into a switch, a later departure may meet free links beyond it
         * where an earlier one does not: offer the next one in turn. */
        if (hop(s, it->rec, it->link, it->depart) != 0) return -1;
        {
            int k = pl_state_link_next(s->st, it->link, it->depart + 1);
            return push(s, k + pl_hop(in, it->link), DEPART, it->rec, it->link, k);
        }
    case AT_SWITCH: {
        int64_t key = pl_key(0, r.node, t->nnodes, r.epoch);
        if (pl_map_get(&s->seen, key, NULL)) return 0;
        if (pl_map_put(&s->seen, key, 1) != 0) return -1;
        for (int i = t->out_start[r.node]; i < t->out_start[r.node + 1]; i++) {
            /* never straight back: between two switches that would only
             * hold the chunk in the network (a delay line), which a later
             * departure from a GPU does without taking links */
            if (r.link >= 0 && t->links[t->out[i]].dst == t->links[r.link].src) continue;
            if (pl_state_link_free(s->st, t->out[i], r.epoch) &&
                hop(s, it->rec, t->out[i], r.epoch) != 0)
                return -1;
        }
        return 0;
    }
    }
    return -1;
}

/* Past this epoch every link is free, so any search has found its target:
 * reaching it means the state is broken. */
static int search_bound(const pl_state_t *st, int maxhop)
{
    return st->last + (st->in->topo->nnodes + 2) * (maxhop + 1) + 2;
}

/* The earliest delivery of chunk c to a GPU lacking it: the record of its
 * arrival, or -1 on failure. */
static int search(search_t *s, int bound)
{
    const pl_instance_t *in = s->st->in;
    const pl_topology_t *t = in->topo;
    pl_heap_item_t top;
    int c = s->c;

    s->nrecs = s->nitems = 0;
    s->heap.n = 0;
    pl_map_free(&s->seen);
    for (int g = 0; g < t->ngpus; g++) {
        int av = pl_state_avail(s->st, c, g);
        if (av != INT_MAX && av < s->from) av = s->from;
        if (av != INT_MAX && push(s, av, GPU_READY, add_rec(s, t->gpu_node[g], av, -1, -1, -1),
                                  -1, -1) != 0)
            return -1;
    }
    for (size_t i = 0; i < s->st->ntransits[c]; i++) {
        pl_transit_t tr = s->st->transits[c][i];
        if (tr.epoch < s->from) continue; /* gone: switches do not keep it */
        if (!pl_state_holds(s->st, c, tr.node, tr.epoch)) continue; /* passed on, no copies */
        if (push(s, tr.epoch, AT_SWITCH, add_rec(s, tr.node, tr.epoch, -1, -1, -1), -1, -1) != 0)
            return -1;
    }
    while (pl_heap_pop(&s->heap, &top)) {
        item_t it = s->items[top.val];
        if (top.key > bound) break;
        if (it.type == ARRIVE) return it.rec;
        if (expand(s, &it) != 0) return -1;
    }
    return -1;
}

/* Plans the path that ends in record r. */
static int commit(search_t *s, int r)
{
    int hops[64], n = 0, *path = hops, rc = 0;

    for (int i = r; s->recs[i].parent >= 0; i = s->recs[i].parent) n++;
    if (n > 64 && (path = malloc(sizeof(int) * (size_t)n)) == NULL) return -1;
    for (int i = r, j = n; s->recs[i].parent >= 0; i = s->recs[i].parent) path[--j] = i;
    for (int j = 0; j < n && rc == 0; j++)
        rc = pl_state_send(s->st, s->c, s->recs[path[j]].link, s->recs[path[j]].depart);
    if (path != hops) free(path);
    return rc;
}

/* Earliest delivery first; with rarest, among equally early ones the chunk
 * fewest GPUs hold: a slow link that could carry a new chunk or a second
 * copy of one a neighbour already has should carry the new one, the copy
 * can travel over faster local links later. Both parts only grow as others
 * are planned, so the key stays a lower bound. */
static int64_t priority(const pl_state_t *st, int c, int arrival, int rarest)
{
    int n = st->in->topo->ngpus;
    return (int64_t)arrival * (n + 1) + (rarest ? n - st->missing[c] : 0);
}

static int greedy_pass(const pl_instance_t *in, pl_schedule_t *sched, int from, int rarest,
                       char *why, size_t whylen)
{
    pl_state_t st;
    search_t s = { 0 };
    pl_heap_t todo = { 0 };
    pl_heap_item_t top;
    int rc = -1, maxhop = 0;

    if (pl_state_init(&st, in, sched) != 0) {
        pl_state_fini(&st);
        return pl_fail(why, whylen, "out of memory");
    }
    pl_fail(why, whylen, "out of memory"); /* what a failure below means, unless it says */
    s.st = &st;
    s.from = from;
    for (int l = 0; l < in->topo->nlinks; l++)
        if (pl_hop(in, l) > maxhop) maxhop = pl_hop(in, l);
    /* Lazily: a chunk's earliest delivery only gets later as others take
     * links, so a stale key is a lower bound; a chunk is planned when its
     * fresh key is still the smallest. */
    for (int c = 0; c < in->nchunks; c++)
        if (st.missing[c] > 0 && pl_heap_push(&todo, 0, c) != 0) goto out;
    while (st.unmet > 0) {
        if (!pl_heap_pop(&todo, &top)) break;
        s.c = (int)top.val;
        if (st.missing[s.c] == 0) continue;
        int r = search(&s, search_bound(&st, maxhop) + from);
        if (r < 0) {
            pl_fail(why, whylen, "greedy: no path found for a chunk (a bug)");
            goto out;
        }
        int64_t key = priority(&st, s.c, s.recs[r].epoch, rarest);
        if (todo.n > 0 && key > todo.items[0].key) {
            if (pl_heap_push(&todo, key, s.c) != 0) goto out;
            continue;
        }
        if (commit(&s, r) != 0) goto out;
        key = priority(&st, s.c, s.recs[r].epoch, rarest);
        if (st.missing[s.c] > 0 && pl_heap_push(&todo, key, s.c) != 0) goto out;
    }
    if (st.unmet > 0) {
        pl_fail(why, whylen, "greedy: demands left unplanned (a bug)");
        goto out;
    }
    sched->epochs = pl_state_finish(&st);
    snprintf(sched->method, sizeof(sched->method), "greedy");
    rc = 0;
out:
    free(s.recs);
    free(s.items);
    pl_heap_free(&s.heap);
    pl_map_free(&s.seen);
    pl_heap_free(&todo);
    pl_state_fini(&st);
    return rc;
}

/* Neither tie-break wins everywhere (rarest first shines where slow links
 * feed fast local ones, plain earliest first on a single switch): both run,
 * as they take little time next to any solver, and the shorter is kept. */
int pl_greedy_from(const pl_instance_t *in, pl_schedule_t *sched, int from, char *why,
                   size_t whylen)
{
    pl_schedule_t other;
    int rc;

    pl_schedule_init(&other);
    if (pl_schedule_copy(&other, sched) != 0) return pl_fail(why, whylen, "out of memory");
    rc = greedy_pass(in, sched, from, 1, why, whylen);
    if (rc == 0) rc = greedy_pass(in, &other, from, 0, why, whylen);
    if (rc == 0 && other.epochs < sched->epochs) pl_schedule_swap_flows(sched, &other);
    pl_schedule_fini(&other);
    return rc;
}

int pl_greedy(const pl_instance_t *in, pl_schedule_t *sched, char *why, size_t whylen)
{
    return pl_greedy_from(in, sched, 0, why, whylen);
}
