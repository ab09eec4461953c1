/*
 * plan_out.c - a checked schedule as the engine's plan file
 * (docs/plan-format.md): one program per rank, steps in the order the
 * schedule's epochs put them.
 *
 * The engine knows GPUs, not switches: a path through switches becomes one
 * send from the GPU it leaves to the GPUs it reaches (a switch's copies
 * become a step's several peers; a switch's sum in a
 * reduction becomes the sums' parts sent on to the GPU after it). A plan's
 * sends and receives between two ranks pair up in program order, so where
 * two chunks overtake each other on paths of different lengths the
 * receiver's steps follow the sender's order, and any step that uses a
 * chunk moves after the step that brings it. Plans are written as version 2:
 * the engine runs a step once the steps that bring what it reads have moved
 * (it derives them from the chunks), so a rank's sends do not wait for its
 * receives of other chunks. The result is checked by the engine's own
 * loader (dfccl_plan) before anyone runs it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "planner/planner.h"
#include "planner/util.h"

enum { BUF_NONE, BUF_SEND, BUF_RECV };

typedef struct {
    int64_t key;       /* position in the rank's program */
    int rank, chunk, phase;
    int recv;          /* rank it receives from, -1: none */
    int *send, nsend;  /* peers (its own list, freed with the steps) */
    int reduce, src, dst;
} step_t;

/* A GPU-to-GPU move of a chunk: sent by rank from in epoch k, there in a. */
typedef struct {
    int chunk, phase, from, to, k, a;
} move_t;

typedef struct {
    const pl_instance_t *in;
    const pl_schedule_t *s;
    step_t *steps;
    size_t nsteps, cap;
    move_t *moves;
    size_t nmoves, mcap;
    pl_map_t leaves;   /* (chunk*3+phase, switch, epoch) -> first flow leaving it, +1 */
    size_t *next_leave; /* flow -> next flow leaving the same switch transit, +1 */
    char *why;
    size_t whylen;
    uint64_t min_bytes, max_bytes;   /* the calls the plan serves */
} out_t;

/* Keys: epochs apart by far more than any nudge a step gets. */
#define KEY(epoch, sub) ((int64_t)(epoch) * 4096 + (sub))

static int add_step(out_t *o, step_t st)
{
    if (pl_reserve((void **)&o->steps, &o->cap, o->nsteps + 1, sizeof(step_t)) != 0) return -1;
    o->steps[o->nsteps++] = st;
    return 0;
}

static int add_move(out_t *o, move_t m)
{
    if (pl_reserve((void **)&o->moves, &o->mcap, o->nmoves + 1, sizeof(move_t)) != 0) return -1;
    o->moves[o->nmoves++] = m;
    return 0;
}

static int64_t transit_key(const out_t *o, const pl_flow_t *f, int node, int epoch)
{
    return pl_key(f->chunk * 3 + f->phase, node, o->in->topo->nnodes, epoch);
}

/* Follows flow f through switches to the GPUs it reaches. */
static int follow(out_t *o, size_t f0, size_t f, int depth)
{
    const pl_topology_t *t = o->in->topo;
    const pl_flow_t *fl = &o->s->flows[f], *first = &o->s->flows[f0];
    int v = t->links[fl->link].dst, arr = fl->epoch + pl_hop(o->in, fl->link);
    int64_t next;

    if (t->nodes[v].kind == PL_GPU)
        return add_move(o, (move_t){ first->chunk, first->phase,
                                     t->nodes[t->links[first->link].src].rank, t->nodes[v].rank,
                                     first->epoch, arr });
    if (depth > t->nnodes) return 0; /* a switch loop carries nothing on */
    if (!pl_map_get(&o->leaves, transit_key(o, fl, v, arr), &next)) return 0;
    for (size_t g = (size_t)next; g > 0; g = o->next_leave[g - 1])
        if (follow(o, f0, g - 1, depth + 1) != 0) return -1;
    return 0;
}

static int collect_moves(out_t *o)
{
    const pl_topology_t *t = o->in->topo;
    size_t n = o->s->nflows;

    o->next_leave = calloc(n ? n : 1, sizeof(size_t));
    if (o->next_leave == NULL) return -1;
    for (size_t i = n; i-- > 0;) {
        const pl_flow_t *f = &o->s->flows[i];
        int u = t->links[f->link].src;
        int64_t head = 0;
        if (t->nodes[u].kind != PL_SWITCH) continue;
        pl_map_get(&o->leaves, transit_key(o, f, u, f->epoch), &head);
        o->next_leave[i] = (size_t)head;
        if (pl_map_put(&o->leaves, transit_key(o, f, u, f->epoch), (int64_t)i + 1) != 0) return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (t->nodes[t->links[o->s->flows[i].link].src].kind == PL_GPU && follow(o, i, i, 0) != 0)
            return -1;
    return 0;
}

static int by_sender(const void *a, const void *b)
{
    const move_t *x = a, *y = b;
    if (x->phase != y->phase) return x->phase - y->phase;
    if (x->from != y->from) return x->from - y->from;
    if (x->chunk != y->chunk) return x->chunk - y->chunk;
    if (x->k != y->k) return x->k - y->k;
    if (x->a != y->a) return x->a - y->a;
    return x->to - y->to;
}

/* Whether two moves leave one rank with one chunk in one epoch and arrive
 * together: one step then sends to both. Copies that arrive at different
 * times (over links of different speeds) go in steps of their own, which
 * move side by side: in one step every slice waits for the slowest link. */
static int same_send(const move_t *a, const move_t *b)
{
    return a->phase == b->phase && a->from == b->from && a->chunk == b->chunk && a->k == b->k &&
           a->a == b->a;
}

/* Gathering moves: receives, and sends grouped by (sender, chunk, epoch,
 * arrival) into one step to all their peers. */
static int gather_steps(out_t *o, int phase)
{
    int k = o->in->chunks_per_gpu;

    for (size_t i = 0; i < o->nmoves; i++) {
        const move_t *m = &o->moves[i];
        if (m->phase != phase) continue;
        if (add_step(o, (step_t){ KEY(m->a, 0), m->to, m->chunk, phase, m->from, NULL, 0, 0,
                                  BUF_NONE, BUF_RECV }) != 0)
            return -1;
    }
    for (size_t i = 0; i < o->nmoves;) {
        const move_t *m = &o->moves[i];
        size_t j = i;
        if (m->phase != phase) {
            i++;
            continue;
        }
        /* an allgather's own chunks come from the send buffer, anything
         * received (and an allreduce's sums) from the receive buffer */
        int src = o->s->collective == PL_ALLGATHER && m->chunk / k == m->from ? BUF_SEND : BUF_RECV;
        while (j < o->nmoves && same_send(&o->moves[j], m)) j++;
        step_t st = { KEY(m->k, 3), m->from, m->chunk, phase, -1, malloc(sizeof(int) * (j - i)),
                      0, 0, src, BUF_NONE };
        if (st.send == NULL) return -1;
        for (size_t q = i; q < j; q++) st.send[st.nsend++] = o->moves[q].to;
        if (add_step(o, st) != 0) {
            free(st.send);
            return -1;
        }
        i = j;
    }
    return 0;
}

/* Reducing moves: each GPU sends its chunk once (to the next GPU towards
 * the chunk's owner), after summing in what reaches it first. */
static int reduce_steps(out_t *o, int phase)
{
    const pl_topology_t *t = o->in->topo;
    int k = o->in->chunks_per_gpu, rs = o->s->collective == PL_REDUCESCATTER;
    int *got = calloc((size_t)o->in->nchunks * (size_t)t->ngpus, sizeof(int));

    if (got == NULL) return -1;
    /* receives, in the order they arrive at each rank */
    for (size_t i = 0; i < o->nmoves; i++) {
        const move_t *m = &o->moves[i];
        if (m->phase != phase) continue;
        int *n = &got[(size_t)m->chunk * t->ngpus + m->to], owner = m->chunk / k == m->to;
        if (rs && !owner) {
            /* a reduce-scatter's receive buffer holds only the rank's own
             * block: a partial sum elsewhere must go on in the same step */
            if (*n > 0) {
                free(got);
                return pl_fail(o->why, o->whylen, "rank %d sums chunk %d from more than one peer "
                               "before passing it on, which a reduce-scatter plan cannot hold "
                               "(plan an allreduce, or on a topology without switches)", m->to,
                               m->chunk);
            }
            (*n)++;
            continue;
        }
        if (add_step(o, (step_t){ KEY(m->a, 1), m->to, m->chunk, phase, m->from, NULL, 0, 1,
                                  *n ? BUF_RECV : BUF_SEND, BUF_RECV }) != 0) {
            free(got);
            return -1;
        }
        (*n)++;
    }
    for (size_t i = 0; i < o->nmoves; i++) {
        const move_t *m = &o->moves[i];
        if (m->phase != phase) continue;
        int n = got[(size_t)m->chunk * t->ngpus + m->from];
        step_t st = { KEY(m->k, 2), m->from, m->chunk, phase, -1, malloc(sizeof(int)), 1, 0,
                      n ? BUF_RECV : BUF_SEND, BUF_NONE };
        if (st.send == NULL) {
            free(got);
            return -1;
        }
        st.send[0] = m->to;
        if (rs && n > 0) {
            /* The receive, summed with the rank's own part, sent on; placed
             * where the receive is, not where the send is: a rank that sends
             * several chunks before it receives one fills a FIFO of two
             * chunks, and on a ring every rank would wait for room. */
            for (size_t j = 0; j < o->nmoves; j++)
                if (o->moves[j].phase == phase && o->moves[j].chunk == m->chunk &&
                    o->moves[j].to == m->from) {
                    st.recv = o->moves[j].from;
                    st.key = KEY(o->moves[j].a, 1);
                }
            st.reduce = 1;
            st.src = BUF_SEND;
        }
        if (add_step(o, st) != 0) {
            free(st.send);
            free(got);
            return -1;
        }
    }
    free(got);
    return 0;
}

static int by_rank_key(const void *a, const void *b)
{
    const step_t *x = a, *y = b;
    if (x->rank != y->rank) return x->rank - y->rank;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    if (x->chunk != y->chunk) return x->chunk - y->chunk;
    return (x->nsend ? x->send[0] : -1) - (y->nsend ? y->send[0] : -1);
}

static const step_t *order_of; /* qsort has no context argument in C11 */

static int by_rank_chunk_first(const void *a, const void *b)
{
    const step_t *x = &order_of[*(const size_t *)a], *y = &order_of[*(const size_t *)b];
    if (x->rank != y->rank) return x->rank - y->rank;
    if (x->chunk != y->chunk) return x->chunk - y->chunk;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* The receive at rank b from rank a of (chunk, phase). */
static int64_t recv_key(const out_t *o, int b, int a, int chunk, int phase)
{
    int64_t n = o->in->topo->ngpus;
    return (((int64_t)b * n + a) * o->in->nchunks + chunk) * 3 + phase;
}

static int by_index_key(const void *a, const void *b)
{
    return by_rank_key(&order_of[*(const size_t *)a], &order_of[*(const size_t *)b]);
}

/* One pass: each receive after its send and after the receive before it
 * on the same connection (sends and receives pair in program order), each
 * rank's steps on one chunk in the schedule's order. Whether a key moved;
 * -1 on failure. byk and last are scratch (steps; ranks squared). */
static int order_pass(out_t *o, const pl_map_t *recvs, const size_t *chunk_order, size_t *byk,
                      int64_t *last)
{
    size_t n = o->nsteps, ng = (size_t)o->in->topo->ngpus;
    int changed = 0;

    for (size_t i = 0; i < n; i++) byk[i] = i;
    order_of = o->steps;
    qsort(byk, n, sizeof(size_t), by_index_key);
    for (size_t q = 0; q < ng * ng; q++) last[q] = INT64_MIN;
    for (size_t q = 0; q < n; q++) {
        const step_t *s = &o->steps[byk[q]];
        for (int p = 0; p < s->nsend; p++) {
            int64_t j, *l = &last[(size_t)s->rank * ng + (size_t)s->send[p]];
            if (!pl_map_get(recvs, recv_key(o, s->send[p], s->rank, s->chunk, s->phase), &j))
                return pl_fail(o->why, o->whylen, "rank %d sends chunk %d to rank %d, which never "
                               "receives it (a bug)", s->rank, s->chunk, s->send[p]);
            step_t *r = &o->steps[j];
            int64_t least = s->key > *l ? s->key : *l;
            if (r->key <= least) r->key = least + 1, changed = 1;
            *l = r->key;
        }
    }
    for (size_t q = 1; q < n; q++) {
        const step_t *a = &o->steps[chunk_order[q - 1]];
        step_t *b = &o->steps[chunk_order[q]];
        if (a->rank == b->rank && a->chunk == b->chunk && b->key <= a->key)
            b->key = a->key + 1, changed = 1;
    }
    return changed;
}

/* Each receive goes as soon after the send it pairs with as the rank's
 * other steps on that chunk allow, in one order of all steps that every
 * rank's program follows: run in that order a FIFO holds little more than
 * the chunks just sent, so the ranks do not deadlock over FIFOs of two
 * chunks (the schedule's own times, with chunks in flight for several
 * epochs, would), and each connection's receives follow its sends. A
 * rank's steps on one chunk keep the schedule's order. Keys only grow;
 * passes repeat until nothing moves. The engine's loader has the last word. */
static int order_steps(out_t *o)
{
    size_t n = o->nsteps, ng = (size_t)o->in->topo->ngpus;
    size_t *chunk_order = malloc(sizeof(size_t) * (n ? n : 1));
    size_t *byk = malloc(sizeof(size_t) * (n ? n : 1));
    int64_t *last = malloc(sizeof(int64_t) * ng * ng);
    pl_map_t recvs = { 0 };
    int rc = -1, changed = 1;

    if (chunk_order == NULL || byk == NULL || last == NULL) goto out;
    qsort(o->steps, n, sizeof(step_t), by_rank_key);
    for (size_t i = 0; i < n; i++) chunk_order[i] = i;
    order_of = o->steps;
    qsort(chunk_order, n, sizeof(size_t), by_rank_chunk_first);
    for (size_t i = 0; i < n; i++)
        if (o->steps[i].recv >= 0 &&
            pl_map_put(&recvs, recv_key(o, o->steps[i].rank, o->steps[i].recv, o->steps[i].chunk,
                                        o->steps[i].phase), (int64_t)i) != 0)
            goto out;
    /* receives start as early as can be: their sends place them */
    for (size_t i = 0; i < n; i++)
        if (o->steps[i].recv >= 0) o->steps[i].key = INT64_MIN / 2;
    for (size_t pass = 0; pass < n + 10 && changed > 0; pass++)
        changed = order_pass(o, &recvs, chunk_order, byk, last);
    if (changed < 0) goto out;
    if (changed > 0) {
        pl_fail(o->why, o->whylen, "the steps could not be put in one order that every rank's "
                "program follows");
        goto out;
    }
    qsort(o->steps, n, sizeof(step_t), by_rank_key);
    rc = 0;
out:
    free(chunk_order);
    free(byk);
    free(last);
    pl_map_free(&recvs);
    return rc;
}

/* Where a rank sums a chunk in its receive buffer, the first sum reads its
 * own part from the send buffer and every later step the running sum. */
static void sum_sources(out_t *o)
{
    size_t n = o->nsteps;
    pl_map_t summed = { 0 };

    for (size_t i = 0; i < n; i++) {
        step_t *s = &o->steps[i];
        int64_t key = (int64_t)s->rank * o->in->nchunks + s->chunk;
        int reducing = s->phase == PL_PHASE_REDUCE || o->s->collective == PL_REDUCESCATTER;
        if (!reducing || (s->reduce && s->dst == BUF_NONE)) continue; /* summed on the way */
        s->src = pl_map_get(&summed, key, NULL) ? BUF_RECV : BUF_SEND;
        if (s->dst == BUF_RECV) pl_map_put(&summed, key, 1);
    }
    pl_map_free(&summed);
}

static const char *buf_name(int b)
{
    return b == BUF_SEND ? "\"send\"" : "\"recv\"";
}

static int write_json(out_t *o, const char *path)
{
    static const char *const names[] = { "allgather", "reduce_scatter", "allreduce" };
    FILE *f = fopen(path, "w");
    int n = o->in->topo->ngpus;

    if (f == NULL) return pl_fail(o->why, o->whylen, "%s: %s", path, strerror(errno));
    int *host = malloc(sizeof(int) * (size_t)n);

    if (host == NULL) {
        fclose(f);
        return pl_fail(o->why, o->whylen, "out of memory");
    }
    fprintf(f, "{ \"format\": \"dfccl-plan\", \"version\": 2, \"name\": \"%s-%d-planned\",\n"
               "  \"comment\": \"from a %s schedule of %d epochs (dfccl_plan)\",\n"
               "  \"collective\": \"%s\", \"ranks\": %d, \"chunks\": %d,\n",
            names[o->s->collective], n, o->s->method, o->s->epochs, names[o->s->collective], n,
            o->in->nchunks);
    /* where it applies: the hosts it was planned on, the sizes asked for */
    if (pl_topology_hosts(o->in->topo, host) == 0) {
        fprintf(f, "  \"nodes\": [");
        for (int r = 0; r < n; r++) fprintf(f, "%s%d", r ? ", " : "", host[r]);
        fprintf(f, "],\n");
    }
    free(host);
    fprintf(f, "  \"min_bytes\": %llu,", (unsigned long long)o->min_bytes);
    if (o->max_bytes != UINT64_MAX) fprintf(f, " \"max_bytes\": %llu,", (unsigned long long)o->max_bytes);
    fprintf(f, "\n  \"programs\": [");
    for (int r = 0, i = 0; r < n; r++) {
        int first = 1;
        fprintf(f, "%s\n    { \"rank\": %d, \"steps\": [", r ? "," : "", r);
        for (; i < (int)o->nsteps && o->steps[i].rank == r; i++) {
            const step_t *s = &o->steps[i];
            fprintf(f, "%s\n      {", first ? "" : ",");
            first = 0;
            if (s->recv >= 0) fprintf(f, "\"recv\": %d, ", s->recv);
            for (int p = 0; p < s->nsend; p++)
                fprintf(f, "%s%d%s", p ? ", " : "\"send\": [", s->send[p],
                        p + 1 == s->nsend ? "], " : "");
            if (s->reduce) fprintf(f, "\"reduce\": true, ");
            if (s->src != BUF_NONE) fprintf(f, "\"src\": %s, ", buf_name(s->src));
            if (s->dst != BUF_NONE) fprintf(f, "\"dst\": %s, ", buf_name(s->dst));
            fprintf(f, "\"chunk\": %d}", s->chunk);
        }
        fprintf(f, " ] }");
    }
    fprintf(f, " ] }\n");
    if (ferror(f) | (fclose(f) != 0)) return pl_fail(o->why, o->whylen, "%s: write failed", path);
    return 0;
}

int pl_plan_file_write(const pl_instance_t *in, const pl_schedule_t *s, const char *path,
                       uint64_t min_bytes, uint64_t max_bytes, char *why, size_t whylen)
{
    out_t o = { .in = in, .s = s, .why = why, .whylen = whylen, .min_bytes = min_bytes,
                .max_bytes = max_bytes };
    int rc = -1, k = in->chunks_per_gpu;

    pl_fail(why, whylen, "out of memory");
    if (collect_moves(&o) != 0) goto out;
    qsort(o.moves, o.nmoves, sizeof(move_t), by_sender);
    if (s->collective == PL_ALLGATHER) {
        /* each rank's own chunks into its receive buffer, before anything */
        for (int c = 0; c < in->nchunks; c++)
            if (add_step(&o, (step_t){ KEY(-1, c), c / k, c, PL_PHASE_ONLY, -1, NULL, 0, 0,
                                       BUF_SEND, BUF_RECV }) != 0)
                goto out;
        if (gather_steps(&o, PL_PHASE_ONLY) != 0) goto out;
    } else if (s->collective == PL_REDUCESCATTER) {
        if (reduce_steps(&o, PL_PHASE_ONLY) != 0) goto out;
    } else if (reduce_steps(&o, PL_PHASE_REDUCE) != 0 || gather_steps(&o, PL_PHASE_GATHER) != 0) {
        goto out;
    }
    if (order_steps(&o) != 0) goto out;
    sum_sources(&o);
    if (write_json(&o, path) != 0) goto out;
    rc = 0;
out:
    for (size_t i = 0; i < o.nsteps; i++) free(o.steps[i].send);
    free(o.steps);
    free(o.moves);
    free(o.next_leave);
    pl_map_free(&o.leaves);
    return rc;
}
