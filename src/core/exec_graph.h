/*
 * exec_graph.h - the dependency-driven executor: a rank's plan as a graph
 * whose steps move side by side, each as soon as it may.
 *
 * A step moves its block in rounds of chunk_elems (exec.h): its unit t is
 * elements [t * chunk, (t + 1) * chunk) of its part. Unit t of step j may
 * move once
 *   - the steps j depends on (the one before it where chain is set, those
 *     of its dependency list) have moved their unit t, or all their units;
 *   - it is next on every connection it uses. A connection (a "line" here)
 *     carries the units of the steps that use it in the order (round, step):
 *     all its steps' units of round t in program order, then round t + 1.
 *     Sender and receiver order alike, since both know every block's length.
 * Then a slice of it moves when its receive connection holds data and each
 * connection it sends to has a free slot (exec.h).
 *
 * A chain (each step depending on the one before) moves exactly as the
 * round-by-round executor does; a plan whose steps on different
 * connections do not depend on each other moves them at once, so a step
 * that waits for a slow peer does not hold up the others. A collective that
 * waits gives way first to another ready step of its own (the executor
 * looks at every line's next step), then to other collectives.
 *
 * Why it cannot deadlock where the plan checks pass (docs/plan-format.md,
 * src/engine/model/README.md): every wait of unit t points at units of
 * round t or earlier on the same rank, or at the matching unit of a peer, or
 * at a receive two units back on a FIFO; a cycle of waits lies within one
 * round, and the plan checks run round 0 of all ranks with these rules.
 * The conditions only ever turn true until the unit moves (monotone
 * counters), so the order in which ranks and steps are tried does not
 * matter.
 *
 * What is saved per step is its cursor {round, offset}: 16 bytes.
 */
#ifndef DFCCL_EXEC_GRAPH_H
#define DFCCL_EXEC_GRAPH_H

#include "core/exec.h"

typedef struct dfccl_exec_cursor {
    uint64_t round;    /* the unit it moves next */
    uint64_t offset;   /* elements of that unit moved */
} dfccl_exec_cursor_t;

/* One connection's queue: the steps that use it, in program order. */
typedef struct dfccl_exec_line {
    uint32_t first;    /* its steps: users[first .. first + n) */
    uint32_t n;
    uint32_t at;       /* the step whose unit is next ... */
    uint32_t reserved;
    uint64_t round;    /* ... in this round; round == rounds: nothing left */
    uint64_t rounds;   /* the most rounds of its steps */
} dfccl_exec_line_t;

typedef struct dfccl_exec_graph {
    dfccl_exec_cursor_t *cur;     /* per step */
    uint64_t            *rounds;  /* per step: units of its part */
    dfccl_exec_line_t   *lines;   /* receive connection c: lines[c]; send: lines[nrecv + c] */
    uint32_t            *users;
    uint32_t            *loose;   /* steps on no connection (local copies) */
    uint32_t             nrecv, nlines, nusers, nloose;
    uint32_t             left;    /* steps with units still to move */
    uint32_t             scan;    /* the line the next search for a ready step starts at */
} dfccl_exec_graph_t;

/* Lays the graph's arrays out from mem (NULL: only sizes them), each on 8
 * bytes, for nsteps steps and g's nlines, nusers and nloose; returns the
 * bytes they take. Position-free: a byte copy of the arrays is pointed at
 * anew by laying them out at the copy (the GPU does so after its upload). */
DFCCL_INLINE DFCCL_HD size_t dfccl_exec_graph_layout(dfccl_exec_graph_t *g, char *mem, uint32_t nsteps)
{
    size_t at = 0;

#define DFCCL_GRAPH_ARRAY(field, type, n)                   \
    g->field = (type *)(mem ? mem + at : NULL);             \
    at += (sizeof(type) * (size_t)(n) + 7) & ~(size_t)7
    DFCCL_GRAPH_ARRAY(cur, dfccl_exec_cursor_t, nsteps);
    DFCCL_GRAPH_ARRAY(rounds, uint64_t, nsteps);
    DFCCL_GRAPH_ARRAY(lines, dfccl_exec_line_t, g->nlines);
    DFCCL_GRAPH_ARRAY(users, uint32_t, g->nusers);
    DFCCL_GRAPH_ARRAY(loose, uint32_t, g->nloose);
#undef DFCCL_GRAPH_ARRAY
    return at;
}

/* 1 when step i has moved its unit t (or has no units left). */
DFCCL_INLINE DFCCL_HD int dfccl_graph_moved(const dfccl_exec_graph_t *g, uint32_t i, uint64_t t)
{
    return g->cur[i].round > t || g->cur[i].round >= g->rounds[i];
}

DFCCL_INLINE DFCCL_HD int dfccl_graph_line_next(const dfccl_exec_graph_t *g, uint32_t l,
                                                uint32_t j, uint64_t t)
{
    const dfccl_exec_line_t *L = &g->lines[l];
    return L->round == t && L->round < L->rounds && g->users[L->first + L->at] == j;
}

/* 1 when the units of step j's next round may move: what it depends on
 * has moved, and it is next on each of its connections. */
DFCCL_INLINE DFCCL_HD int dfccl_graph_may_move(const dfccl_exec_t *x, uint32_t j)
{
    const dfccl_exec_graph_t *g = x->graph;
    const dfccl_step_t *s = &x->steps[j];
    uint64_t t = g->cur[j].round;

    if (t >= g->rounds[j]) return 0;
    /* a chain: every step before it has moved its unit t; steps without
     * one (shorter blocks) pass the wait on to those before them */
    for (uint32_t i = j; x->steps[i].chain && i > 0; i--) {
        if (!dfccl_graph_moved(g, i - 1, t)) return 0;
        if (g->rounds[i - 1] > t) break;
    }
    for (uint32_t k = 0; k < s->ndeps; k++)
        if (!dfccl_graph_moved(g, x->deps[s->dep_at + k], t)) return 0;
    if (s->recv && !dfccl_graph_line_next(g, s->recv_conn, j, t)) return 0;
    for (uint32_t k = 0; k < s->send; k++)
        if (!dfccl_graph_line_next(g, g->nrecv + dfccl_exec_send_conn(x, s, k), j, t)) return 0;
    return 1;
}

/* Unit length of step j in its current round; *lo: its first element. */
DFCCL_INLINE DFCCL_HD uint64_t dfccl_graph_unit_len(const dfccl_exec_t *x, uint32_t j, uint64_t *lo)
{
    uint64_t part_off, count = dfccl_exec_part(x, &x->steps[j], &part_off);
    uint64_t first = x->graph->cur[j].round * x->chunk_elems;

    *lo = part_off + first;
    if (count <= first) return 0;
    return count - first < x->chunk_elems ? count - first : x->chunk_elems;
}

/* Makes j the step being moved when a slice of it can move now. */
DFCCL_INLINE DFCCL_HD int dfccl_graph_try(dfccl_exec_t *x, uint32_t j, dfccl_slice_t *slice,
                                          int *waited)
{
    dfccl_wait_t why = x->waiting;
    int peer = x->wait_peer;
    uint64_t lo, len;

    if (!dfccl_graph_may_move(x, j)) return 0;
    if (!dfccl_exec_step_ready(x, &x->steps[j])) {
        if (*waited) {   /* keep the first reason found */
            x->waiting = why;
            x->wait_peer = peer;
        }
        *waited = 1;
        return 0;
    }
    x->step = j;
    x->round = x->graph->cur[j].round;
    x->offset = x->graph->cur[j].offset;
    len = dfccl_graph_unit_len(x, j, &lo);
    dfccl_exec_slice_fill(x, &x->steps[j], lo, len - x->offset, slice);
    return 1;
}

DFCCL_INLINE DFCCL_HD int dfccl_graph_done(const dfccl_exec_t *x)
{
    return x->graph->left == 0;
}

/*
 * Finds a slice that can move now: first of the step that moved last, then
 * of the next step of each connection in turn, then of the local copies.
 * Returns 1 and fills *slice (x->step is its step), or 0 when every step
 * waits (x->waiting and x->wait_peer: the first peer found waited for).
 * Must not be called when dfccl_graph_done() is true.
 */
DFCCL_INLINE DFCCL_HD int dfccl_graph_slice_begin(dfccl_exec_t *x, dfccl_slice_t *slice)
{
    dfccl_exec_graph_t *g = x->graph;
    int waited = 0;

    if (x->step < x->nsteps && dfccl_graph_try(x, x->step, slice, &waited)) return 1;
    for (uint32_t n = 0; n < g->nlines; n++) {
        uint32_t l = (g->scan + n) % g->nlines;
        const dfccl_exec_line_t *L = &g->lines[l];
        if (L->round >= L->rounds) continue;
        if (dfccl_graph_try(x, g->users[L->first + L->at], slice, &waited)) {
            g->scan = (l + 1) % g->nlines;   /* the others' turn next time */
            return 1;
        }
    }
    for (uint32_t n = 0; n < g->nloose; n++)
        if (dfccl_graph_try(x, g->loose[n], slice, &waited)) return 1;
    return 0;
}

/* The line's next unit: the next step in program order that has one in
 * this round, else the first of the next round. */
DFCCL_INLINE DFCCL_HD void dfccl_graph_line_settle(dfccl_exec_graph_t *g, dfccl_exec_line_t *L)
{
    while (L->round < L->rounds && g->rounds[g->users[L->first + L->at]] <= L->round)
        if (++L->at == L->n) {
            L->at = 0;
            L->round++;
        }
}

DFCCL_INLINE DFCCL_HD void dfccl_graph_line_pass(dfccl_exec_graph_t *g, uint32_t l)
{
    dfccl_exec_line_t *L = &g->lines[l];
    if (++L->at == L->n) {
        L->at = 0;
        L->round++;
    }
    dfccl_graph_line_settle(g, L);
}

/* Publishes the slice that was moved and advances its step; a finished
 * unit passes each of the step's connections on to their next step. */
DFCCL_INLINE DFCCL_HD void dfccl_graph_slice_end(dfccl_exec_t *x, const dfccl_slice_t *slice)
{
    dfccl_exec_graph_t *g = x->graph;
    uint32_t j = x->step;
    const dfccl_step_t *s = &x->steps[j];
    dfccl_exec_cursor_t *c = &g->cur[j];
    uint64_t lo;

    dfccl_exec_slice_publish(x, s, slice);
    c->offset += slice->count;
    x->offset = c->offset;
    if (c->offset < dfccl_graph_unit_len(x, j, &lo)) return;
    c->offset = 0;
    c->round++;
    if (s->recv) dfccl_graph_line_pass(g, s->recv_conn);
    for (uint32_t k = 0; k < s->send; k++)
        dfccl_graph_line_pass(g, g->nrecv + dfccl_exec_send_conn(x, s, k));
    if (c->round >= g->rounds[j]) g->left--;
}

#ifndef __CUDACC__
/* Host side: lays the graph's arrays out in mem (dfccl_exec_graph_bytes of
 * it), fills them from x's steps (x: steps, nsteps, esize, part, nparts and
 * chunk_elems set; nrecv / nsend: how many connections each way the steps
 * may name) and attaches the graph to x, ready to run. */
size_t dfccl_exec_graph_bytes(const dfccl_step_t *steps, uint32_t nsteps, uint32_t nrecv,
                              uint32_t nsend);
void dfccl_exec_graph_init(dfccl_exec_t *x, dfccl_exec_graph_t *g, void *mem, uint32_t nrecv,
                           uint32_t nsend);
/* After a byte copy of the graph and its arrays to mem: points g at them. */
void dfccl_exec_graph_rebase(dfccl_exec_graph_t *g, void *mem, uint32_t nsteps);
#endif

#endif
