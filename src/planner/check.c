/*
 * check.c - replays a schedule on the model and says whether it is valid:
 * no link carries more chunks at once than it can, nothing is sent before the
 * sender holds it (a switch forwards only what reaches it in that very
 * epoch), no contribution is reduced twice, and every demand is met. Every
 * planner's result goes through here, so a planner bug cannot yield a
 * schedule that silently breaks the model.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "planner/planner.h"
#include "planner/util.h"

typedef struct {
    const pl_instance_t *in;
    const pl_schedule_t *s;
    int words;           /* 64-bit words in a set of GPUs */
    int *avail;          /* gathered chunks: epoch each GPU holds each chunk, INT_MAX: not */
    uint64_t *acc;       /* reduced chunks: contributions each GPU has summed, per chunk */
    int *reduced_at;     /* reduced chunks: epoch the owner's sum is complete */
    uint64_t *payload;   /* reduced chunks: contributions each flow carries */
    pl_map_t transit;    /* (chunk, switch, epoch) -> pool slot of what is there */
    pl_map_t left;       /* (chunk, switch, epoch) sent on, at switches without copies */
    uint64_t *pool;
    size_t npool, cap;
    char *why;
    size_t whylen;
} replay_t;

static const char *node_name(const replay_t *r, int n, char *buf, size_t len)
{
    const pl_topology_t *t = r->in->topo;
    snprintf(buf, len, "%s %d", t->nodes[n].kind == PL_GPU ? "GPU" : "switch", t->nodes[n].id);
    return buf;
}

static const char *chunk_name(const replay_t *r, int c, char *buf, size_t len)
{
    const pl_instance_t *in = r->in;
    snprintf(buf, len, "[%d,%d]", in->topo->nodes[pl_chunk_owner_node(in, c)].id,
             c % in->chunks_per_gpu);
    return buf;
}

static int reduces(const replay_t *r, const pl_flow_t *f)
{
    return r->s->collective == PL_REDUCESCATTER || f->phase == PL_PHASE_REDUCE;
}

/* Capacity: at every epoch a link has at most per_epoch chunks on it; a
 * chunk is on it for span epochs from the one it is sent in. */
static int by_link_epoch(const void *a, const void *b)
{
    const pl_flow_t *x = *(const pl_flow_t *const *)a, *y = *(const pl_flow_t *const *)b;
    if (x->link != y->link) return x->link - y->link;
    return (x->epoch > y->epoch) - (x->epoch < y->epoch);
}

static int check_capacity(replay_t *r)
{
    const pl_instance_t *in = r->in;
    size_t n = r->s->nflows;
    const pl_flow_t **f = malloc(sizeof(*f) * (n ? n : 1));
    int rc = 0;

    if (f == NULL) return pl_fail(r->why, r->whylen, "out of memory");
    for (size_t i = 0; i < n; i++) f[i] = &r->s->flows[i];
    qsort(f, n, sizeof(*f), by_link_epoch);
    /* The most chunks on a link at once is reached at some send: count the
     * sends in the span that ends there. */
    for (size_t i = 0, lo = 0; i < n && rc == 0; i++) {
        const pl_timing_t *tm = &in->timing[f[i]->link];
        if (i > 0 && f[i]->link != f[i - 1]->link) lo = i;
        while (f[lo]->epoch <= f[i]->epoch - tm->span) lo++;
        if ((int)(i - lo + 1) > tm->per_epoch) {
            char a[48], b[48];
            const pl_link_t *k = &in->topo->links[f[i]->link];
            rc = pl_fail(r->why, r->whylen,
                         "capacity exceeded: link %s -> %s carries %zu chunks in epoch %d, "
                         "at most %d fit", node_name(r, k->src, a, sizeof(a)),
                         node_name(r, k->dst, b, sizeof(b)), i - lo + 1, f[i]->epoch,
                         tm->per_epoch);
        }
    }
    free(f);
    return rc;
}

/* Events in time order; at one epoch, arrivals before sends, since a chunk
 * usable from epoch a may be sent on in epoch a. A hop from a switch to a
 * GPU may arrive in the epoch it is sent (pl_hop): within an epoch, first
 * what was sent before it, then the switches' sends, what they bring to
 * GPUs at once, and the GPUs' sends. */
enum { EV_ARRIVAL, EV_SWITCH_SEND, EV_SAME_EPOCH_ARRIVAL, EV_GPU_SEND };

typedef struct {
    int epoch, order; /* EV_* */
    size_t flow;
} event_t;

static int by_time(const void *a, const void *b)
{
    const event_t *x = a, *y = b;
    if (x->epoch != y->epoch) return x->epoch < y->epoch ? -1 : 1;
    if (x->order != y->order) return x->order - y->order;
    return x->flow < y->flow ? -1 : x->flow > y->flow;
}

static uint64_t *slot(replay_t *r, size_t i)
{
    return &r->pool[i * (size_t)r->words];
}

/* The set of contributions (or, gathering, a mark) a switch holds for a
 * chunk at an epoch; created empty on first use when create is set. An
 * allreduce's two phases move the same chunks and never meet at a switch. */
static int transit(replay_t *r, const pl_flow_t *f, int w, int e, int create, uint64_t **out)
{
    int64_t key = pl_key(f->chunk * 3 + f->phase, w, r->in->topo->nnodes, e), i;

    if (pl_map_get(&r->transit, key, &i)) {
        *out = slot(r, (size_t)i);
        return 1;
    }
    if (!create) return 0;
    if (pl_reserve((void **)&r->pool, &r->cap, (r->npool + 1) * (size_t)r->words,
                   sizeof(uint64_t)) != 0 ||
        pl_map_put(&r->transit, key, (int64_t)r->npool) != 0)
        return -1;
    *out = slot(r, r->npool++);
    memset(*out, 0, sizeof(uint64_t) * (size_t)r->words);
    return 1;
}

/* dst gains src; two sets that share a GPU would count it twice. */
static int merge(replay_t *r, uint64_t *dst, const uint64_t *src)
{
    for (int w = 0; w < r->words; w++)
        if (dst[w] & src[w]) return -1;
    for (int w = 0; w < r->words; w++) dst[w] |= src[w];
    return 0;
}

static int full(const replay_t *r, const uint64_t *set)
{
    int n = r->in->topo->ngpus;
    for (int g = 0; g < n; g++)
        if (!(set[g / 64] >> (g % 64) & 1)) return 0;
    return 1;
}

static int send(replay_t *r, size_t i)
{
    const pl_instance_t *in = r->in;
    const pl_flow_t *f = &r->s->flows[i];
    int u = in->topo->links[f->link].src, ok;
    uint64_t *set = NULL;
    char a[48], b[48];

    if (PL_UNICAST(in->topo, u)) {
        int64_t key = pl_key(f->chunk * 3 + f->phase, u, in->topo->nnodes, f->epoch);
        if (pl_map_get(&r->left, key, NULL))
            return pl_fail(r->why, r->whylen, "copied at a switch without copies: %s sends chunk "
                           "%s on twice in epoch %d", node_name(r, u, a, sizeof(a)),
                           chunk_name(r, f->chunk, b, sizeof(b)), f->epoch);
        if (pl_map_put(&r->left, key, 1) != 0) return pl_fail(r->why, r->whylen, "out of memory");
    }
    if (in->topo->nodes[u].kind == PL_SWITCH) {
        ok = transit(r, f, u, f->epoch, 0, &set) == 1;
        if (ok && reduces(r, f)) memcpy(&r->payload[i * (size_t)r->words], set,
                                        sizeof(uint64_t) * (size_t)r->words);
    } else if (reduces(r, f)) {
        ok = 1; /* a GPU always has its own contribution to send */
        memcpy(&r->payload[i * (size_t)r->words],
               &r->acc[((size_t)f->chunk * in->topo->ngpus + in->topo->nodes[u].rank) * r->words],
               sizeof(uint64_t) * (size_t)r->words);
    } else {
        ok = r->avail[(size_t)f->chunk * in->topo->ngpus + in->topo->nodes[u].rank] <= f->epoch;
    }
    if (!ok)
        return pl_fail(r->why, r->whylen, "sent before it arrived: %s sends chunk %s in epoch %d "
                       "but %s", node_name(r, u, a, sizeof(a)),
                       chunk_name(r, f->chunk, b, sizeof(b)), f->epoch,
                       in->topo->nodes[u].kind == PL_SWITCH
                           ? "nothing brings it there in that epoch (switches do not store)"
                           : "does not hold it yet");
    return 0;
}

static int arrive(replay_t *r, size_t i, int epoch)
{
    const pl_instance_t *in = r->in;
    const pl_flow_t *f = &r->s->flows[i];
    int v = in->topo->links[f->link].dst, rank = in->topo->nodes[v].rank;
    uint64_t *set;
    char a[48], b[48];

    if (rank < 0) {
        if (PL_UNICAST(in->topo, v) && transit(r, f, v, epoch, 0, &set) == 1)
            return pl_fail(r->why, r->whylen, "merged at a switch without copies: chunk %s "
                           "reaches %s twice in epoch %d", chunk_name(r, f->chunk, b, sizeof(b)),
                           node_name(r, v, a, sizeof(a)), epoch);
        if (transit(r, f, v, epoch, 1, &set) < 0)
            return pl_fail(r->why, r->whylen, "out of memory");
        if (!reduces(r, f)) return 0;
    } else if (!reduces(r, f)) {
        int *av = &r->avail[(size_t)f->chunk * in->topo->ngpus + rank];
        if (epoch < *av) *av = epoch;
        return 0;
    } else {
        set = &r->acc[((size_t)f->chunk * in->topo->ngpus + rank) * r->words];
    }
    if (merge(r, set, &r->payload[i * (size_t)r->words]) != 0)
        return pl_fail(r->why, r->whylen, "reduced twice: in epoch %d %s gets a contribution to "
                       "chunk %s that it already has", epoch, node_name(r, v, a, sizeof(a)),
                       chunk_name(r, f->chunk, b, sizeof(b)));
    if (rank >= 0 && v == pl_chunk_owner_node(in, f->chunk) && r->reduced_at[f->chunk] == INT_MAX &&
        full(r, set)) {
        r->reduced_at[f->chunk] = epoch;
        /* an allreduce gathers the sum from the epoch it is complete */
        r->avail[(size_t)f->chunk * in->topo->ngpus + rank] = epoch;
    }
    return 0;
}

/* Every demand met; the epoch by which the last one is. */
static int demands(replay_t *r, int *epochs)
{
    const pl_instance_t *in = r->in;
    int n = in->topo->ngpus, last = 0, gathers = r->s->collective != PL_REDUCESCATTER;
    char a[48], b[48];

    for (int c = 0; c < in->nchunks; c++) {
        int owner = pl_chunk_owner_node(in, c);
        if (r->s->collective != PL_ALLGATHER) {
            if (r->reduced_at[c] == INT_MAX)
                return pl_fail(r->why, r->whylen, "demand unmet: %s never holds the sum of every "
                               "GPU's chunk %s", node_name(r, owner, a, sizeof(a)),
                               chunk_name(r, c, b, sizeof(b)));
            if (r->reduced_at[c] > last) last = r->reduced_at[c];
        }
        for (int g = 0; gathers && g < n; g++) {
            int av = r->avail[(size_t)c * n + g];
            if (av == INT_MAX)
                return pl_fail(r->why, r->whylen, "demand unmet: %s never receives chunk %s",
                               node_name(r, in->topo->gpu_node[g], a, sizeof(a)),
                               chunk_name(r, c, b, sizeof(b)));
            if (av > last) last = av;
        }
    }
    *epochs = last;
    return 0;
}

static int replay(replay_t *r, int *epochs)
{
    const pl_instance_t *in = r->in;
    size_t n = r->s->nflows, ng = (size_t)in->topo->ngpus;
    event_t *ev = malloc(sizeof(*ev) * 2 * (n ? n : 1));
    int rc = 0;

    r->avail = malloc(sizeof(int) * (size_t)in->nchunks * ng);
    r->acc = calloc((size_t)in->nchunks * ng * (size_t)r->words, sizeof(uint64_t));
    r->reduced_at = malloc(sizeof(int) * (size_t)in->nchunks);
    r->payload = calloc((n ? n : 1) * (size_t)r->words, sizeof(uint64_t));
    if (ev == NULL || r->avail == NULL || r->acc == NULL || r->reduced_at == NULL ||
        r->payload == NULL) {
        free(ev);
        return pl_fail(r->why, r->whylen, "out of memory");
    }
    for (int c = 0; c < in->nchunks; c++) {
        int owner = in->topo->nodes[pl_chunk_owner_node(in, c)].rank;
        r->reduced_at[c] = INT_MAX;
        for (size_t g = 0; g < ng; g++) {
            /* gathering, the owner starts with its chunk, unless an
             * allreduce must first sum it there */
            r->avail[(size_t)c * ng + g] =
                (int)g == owner && r->s->collective == PL_ALLGATHER ? 0 : INT_MAX;
            r->acc[((size_t)c * ng + g) * r->words + g / 64] |= 1ull << (g % 64);
        }
    }
    for (size_t i = 0; i < n; i++) {
        const pl_flow_t *f = &r->s->flows[i];
        int hop = pl_hop(in, f->link);
        int from_switch = in->topo->nodes[in->topo->links[f->link].src].kind == PL_SWITCH;
        ev[2 * i] = (event_t){ f->epoch, from_switch ? EV_SWITCH_SEND : EV_GPU_SEND, i };
        ev[2 * i + 1] = (event_t){ f->epoch + hop, hop > 0 ? EV_ARRIVAL : EV_SAME_EPOCH_ARRIVAL, i };
    }
    qsort(ev, 2 * n, sizeof(*ev), by_time);
    for (size_t j = 0; j < 2 * n && rc == 0; j++)
        rc = ev[j].order == EV_SWITCH_SEND || ev[j].order == EV_GPU_SEND
                 ? send(r, ev[j].flow)
                 : arrive(r, ev[j].flow, ev[j].epoch);
    free(ev);
    return rc != 0 ? rc : demands(r, epochs);
}

int pl_check(const pl_instance_t *in, const pl_schedule_t *s, int *epochs, char *why,
             size_t whylen)
{
    replay_t r = { .in = in, .s = s, .why = why, .whylen = whylen };
    int rc;

    r.words = (in->topo->ngpus + 63) / 64;
    for (size_t i = 0; i < s->nflows; i++) {
        const pl_flow_t *f = &s->flows[i];
        if (f->chunk < 0 || f->chunk >= in->nchunks || f->link < 0 ||
            f->link >= in->topo->nlinks || f->epoch < 0)
            return pl_fail(why, whylen, "flow %zu names no chunk, link or epoch of the model", i);
        if ((s->collective == PL_ALLREDUCE) != (f->phase != PL_PHASE_ONLY))
            return pl_fail(why, whylen, "flow %zu: allreduce flows, and only they, have a phase",
                           i);
    }
    rc = check_capacity(&r);
    if (rc == 0) rc = replay(&r, epochs);
    free(r.avail);
    free(r.acc);
    free(r.reduced_at);
    free(r.payload);
    free(r.pool);
    pl_map_free(&r.transit);
    pl_map_free(&r.left);
    return rc;
}
