/*
 * formulation.c - the allgather as a program over a window of epochs
 * (model.h; docs/planner.md has it in symbols):
 *
 *   send[c,l,k]  1 when chunk c starts over link l in epoch k (integer)
 *   hold[c,g,k]  1 when GPU g can send chunk c in epoch k
 *   done[k]      1 when every GPU holds every chunk in epoch k (integer)
 *
 *   hold[c,g,k] <= hold[c,g,k-1] + sum over links l into g of send[c,l,k-hop(l)]
 *   send[c,l,k] <= hold[c,src(l),k]                  from a GPU (store and forward)
 *   send[c,l,k] <= sum over l' into s of send[c,l',k-hop(l')]   from a switch s:
 *                  only in the epoch the chunk arrives (switches do not store),
 *                  to any number of links (copies)
 *   (hop(l) as pl_hop: 0 is possible from a switch to a GPU, never into a
 *   switch, so every row refers to sends of earlier epochs or to a switch's
 *   sends of the same one)
 *   at a switch s without copies, instead:
 *   sum over l out of s of send[c,l,k] <= sum over l' into s of send[c,l',k-hop(l')]
 *   sum over l' into s of send[c,l',k-hop(l')] <= 1    (it passes a chunk once an epoch)
 *   sum over sends on l in epochs k-span+1..k <= per_epoch(l) - prior use
 *   done[k] <= hold[c,g,k] for every chunk and GPU;  hold[c,g,bend] = 1
 *
 * maximising (D x epochs + 1) * sum done[k] + sum hold, with D the
 * deliveries still missing at k0: the earliest finish first, then every
 * delivery as early as it can be. It is stored negated, to be minimised, the
 * sense a cutoff (milp.c) is given in. Columns that cannot matter are left
 * out: sends before the chunk could reach the sender (ignoring capacity),
 * sends into a GPU that holds the chunk by their arrival, sends that arrive
 * too late to be of use, sends out of a switch that nothing could reach in
 * that epoch. That keeps the program near the size of what can happen.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "planner/model.h"
#include "planner/state.h"

typedef struct {
    const pl_instance_t *in;
    const pl_window_t *w;
    pl_model_t *m;
    pl_state_t st;          /* the prior flows' effect */
    pl_schedule_t prior;
    int *earliest;          /* [chunk][node]: no sooner can it be there */
    int *tail;              /* [node]: epochs from there to the nearest GPU */
} build_t;

/* Grows each of the arrays to hold cap elements of the sizes given. */
static int grow(size_t cap, int n, void **arrays[], const size_t sizes[])
{
    for (int i = 0; i < n; i++) {
        void *p = realloc(*arrays[i], cap * sizes[i]);
        if (p == NULL) return -1;
        *arrays[i] = p;
    }
    return 0;
}

static int add_col(pl_model_t *m, int kind, int chunk, int where, int epoch, double lb,
                   double ub, double obj, int integer)
{
    if ((size_t)m->ncols == m->cap_cols) {
        size_t cap = m->cap_cols ? 2 * m->cap_cols : 256;
        void **arrays[] = { (void **)&m->cols, (void **)&m->collb, (void **)&m->colub,
                            (void **)&m->obj, (void **)&m->integer };
        const size_t sizes[] = { sizeof(pl_col_t), sizeof(double), sizeof(double),
                                 sizeof(double), 1 };
        if (grow(cap, 5, arrays, sizes) != 0) return -1;
        m->cap_cols = cap;
    }
    m->cols[m->ncols] = (pl_col_t){ kind, chunk, where, epoch };
    m->collb[m->ncols] = lb;
    m->colub[m->ncols] = ub;
    m->obj[m->ncols] = obj;
    m->integer[m->ncols] = (char)integer;
    return m->ncols++;
}

/* A row lo <= sum vals[i] * x[cols[i]] <= hi. */
static int add_row(pl_model_t *m, double lo, double hi, int n, const int *cols, const double *vals)
{
    if ((size_t)m->nrows == m->cap_rows) {
        size_t cap = m->cap_rows ? 2 * m->cap_rows : 256;
        void **arrays[] = { (void **)&m->rowlb, (void **)&m->rowub };
        const size_t sizes[] = { sizeof(double), sizeof(double) };
        if (grow(cap, 2, arrays, sizes) != 0) return -1;
        m->cap_rows = cap;
    }
    if (m->ntr + (size_t)n > m->cap_tr) {
        size_t cap = m->cap_tr ? 2 * m->cap_tr : 1024;
        while (cap < m->ntr + (size_t)n) cap *= 2;
        void **arrays[] = { (void **)&m->tr_row, (void **)&m->tr_col, (void **)&m->tr_val };
        const size_t sizes[] = { sizeof(int), sizeof(int), sizeof(double) };
        if (grow(cap, 3, arrays, sizes) != 0) return -1;
        m->cap_tr = cap;
    }
    m->rowlb[m->nrows] = lo;
    m->rowub[m->nrows] = hi;
    for (int i = 0; i < n; i++) {
        m->tr_row[m->ntr] = m->nrows;
        m->tr_col[m->ntr] = cols[i];
        m->tr_val[m->ntr++] = vals[i];
    }
    m->nrows++;
    return 0;
}

static int col_of(const pl_map_t *map, const build_t *b, int c, int where, int epoch)
{
    int64_t j;

    if (epoch < 0) return -1;
    return pl_map_get(map, pl_key(c, where, b->in->topo->nnodes + b->in->topo->nlinks, epoch), &j)
               ? (int)j : -1;
}

static int put_col(pl_map_t *map, const build_t *b, int c, int where, int epoch, int j)
{
    return pl_map_put(map, pl_key(c, where, b->in->topo->nnodes + b->in->topo->nlinks, epoch), j);
}

/* Lower bounds on when each chunk can be anywhere, capacity ignored and
 * waiting allowed everywhere (Dijkstra from every place it is at k0). */
static int bounds(build_t *b)
{
    const pl_topology_t *t = b->in->topo;
    int nn = t->nnodes, k0 = b->w->k0;
    pl_heap_t h = { 0 };
    pl_heap_item_t top;

    b->earliest = malloc(sizeof(int) * (size_t)b->in->nchunks * (size_t)nn);
    b->tail = malloc(sizeof(int) * (size_t)nn);
    if (b->earliest == NULL || b->tail == NULL) return -1;
    for (int c = 0; c < b->in->nchunks; c++) {
        int *e = &b->earliest[(size_t)c * nn];
        for (int n = 0; n < nn; n++) e[n] = INT_MAX;
        for (int g = 0; g < t->ngpus; g++) {
            int av = pl_state_avail(&b->st, c, g);
            if (av != INT_MAX) e[t->gpu_node[g]] = av < k0 ? k0 : av;
        }
        for (size_t i = 0; i < b->st.ntransits[c]; i++) {
            pl_transit_t tr = b->st.transits[c][i];
            if (tr.epoch >= k0 && tr.epoch < e[tr.node]) e[tr.node] = tr.epoch;
        }
        for (int n = 0; n < nn; n++)
            if (e[n] != INT_MAX && pl_heap_push(&h, e[n], n) != 0) return -1;
        while (pl_heap_pop(&h, &top)) {
            int u = (int)top.val;
            if (top.key > e[u]) continue;
            for (int i = t->out_start[u]; i < t->out_start[u + 1]; i++) {
                int l = t->out[i], v = t->links[l].dst, d = e[u] + pl_hop(b->in, l);
                if (d < e[v]) {
                    e[v] = d;
                    if (pl_heap_push(&h, d, v) != 0) return -1;
                }
            }
        }
    }
    /* tail: backwards from every GPU */
    for (int n = 0; n < nn; n++) {
        b->tail[n] = t->nodes[n].kind == PL_GPU ? 0 : INT_MAX;
        if (b->tail[n] == 0 && pl_heap_push(&h, 0, n) != 0) return -1;
    }
    while (pl_heap_pop(&h, &top)) {
        int v = (int)top.val;
        if (top.key > b->tail[v]) continue;
        for (int i = t->in_start[v]; i < t->in_start[v + 1]; i++) {
            int l = t->in[i], u = t->links[l].src, d = b->tail[v] + pl_hop(b->in, l);
            if (d < b->tail[u]) {
                b->tail[u] = d;
                if (pl_heap_push(&h, d, u) != 0) return -1;
            }
        }
    }
    pl_heap_free(&h);
    return 0;
}

/* Whether send[c,l,k] can matter (see the header). */
static int send_useful(const build_t *b, int c, int l, int k)
{
    const pl_topology_t *t = b->in->topo;
    int u = t->links[l].src, v = t->links[l].dst, arr = k + pl_hop(b->in, l);

    if (k < b->earliest[(size_t)c * t->nnodes + u]) return 0;
    if (t->nodes[v].kind == PL_GPU) {
        if (arr > b->w->bend) return 0;
        return pl_state_avail(&b->st, c, t->nodes[v].rank) > arr; /* not held by then */
    }
    if (b->tail[v] == INT_MAX || arr + b->tail[v] > b->w->bend) return 0;
    if (t->nodes[u].kind == PL_SWITCH && !pl_state_holds(&b->st, c, u, k)) {
        for (int i = t->in_start[u]; i < t->in_start[u + 1]; i++)
            if (col_of(&b->m->send_col, b, c, t->in[i], k - pl_hop(b->in, t->in[i])) >= 0) return 1;
        return 0;
    }
    return 1;
}

static int add_sends(build_t *b)
{
    const pl_topology_t *t = b->in->topo;

    /* epoch by epoch, so that a switch's way in exists before its way out;
     * up to bend itself, where a switch may still reach a GPU (pl_hop 0) */
    for (int k = b->w->k0; k <= b->w->bend; k++)
        for (int c = 0; c < b->in->nchunks; c++)
            for (int l = 0; l < t->nlinks; l++) {
                if (!send_useful(b, c, l, k)) continue;
                int j = add_col(b->m, PL_COL_SEND, c, l, k, 0, 1, 0, k < b->w->integer_end);
                if (j < 0 || put_col(&b->m->send_col, b, c, l, k, j) != 0) return -1;
            }
    b->m->nsends = (size_t)b->m->ncols;
    return 0;
}

static int add_holds(build_t *b, double weight)
{
    const pl_topology_t *t = b->in->topo;

    for (int c = 0; c < b->in->nchunks; c++)
        for (int g = 0; g < t->ngpus; g++) {
            int av = pl_state_avail(&b->st, c, g);
            int e = b->earliest[(size_t)c * t->nnodes + t->gpu_node[g]];
            if (av <= b->w->k0) continue; /* held throughout: a constant */
            /* from k0 on: a switch may bring it in the epoch it sends (pl_hop 0) */
            for (int k = e > b->w->k0 ? e : b->w->k0; k <= b->w->bend; k++) {
                int must = k == b->w->bend;
                int j = add_col(b->m, PL_COL_HOLD, c, g, k, must, 1, -weight, 0);
                if (j < 0 || put_col(&b->m->hold_col, b, c, t->nnodes + g, k, j) != 0) return -1;
            }
            if (col_of(&b->m->hold_col, b, c, t->nnodes + g, b->w->bend) < 0)
                return -2;
        }
    return 0;
}

/* hold[c,g,k] - hold[c,g,k-1] - sends arriving at k <= arrived before */
static int hold_rows(build_t *b, int *cols, double *vals)
{
    const pl_topology_t *t = b->in->topo;
    pl_model_t *m = b->m;

    for (int j = (int)m->nsends; j < m->ncols; j++) {
        if (m->cols[j].kind != PL_COL_HOLD) continue;
        int c = m->cols[j].chunk, g = m->cols[j].where, k = m->cols[j].epoch;
        int v = t->gpu_node[g], n = 0;
        int prev = col_of(&m->hold_col, b, c, t->nnodes + g, k - 1);
        cols[n] = j, vals[n++] = 1;
        if (prev >= 0) cols[n] = prev, vals[n++] = -1;
        for (int i = t->in_start[v]; i < t->in_start[v + 1]; i++) {
            int s = col_of(&m->send_col, b, c, t->in[i], k - pl_hop(b->in, t->in[i]));
            if (s >= 0) cols[n] = s, vals[n++] = -1;
        }
        if (add_row(m, -1e30, pl_state_avail(&b->st, c, g) == k ? 1 : 0, n, cols, vals) != 0)
            return -1;
    }
    return 0;
}

/* send <= hold at a GPU; send <= what arrives at a switch */
static int source_rows(build_t *b, int *cols, double *vals)
{
    const pl_topology_t *t = b->in->topo;
    pl_model_t *m = b->m;

    for (int j = 0; j < (int)m->nsends; j++) {
        int c = m->cols[j].chunk, l = m->cols[j].where, k = m->cols[j].epoch;
        int u = t->links[l].src, n = 0;
        if (PL_UNICAST(t, u)) continue;   /* unicast_rows */
        cols[n] = j, vals[n++] = 1;
        if (t->nodes[u].kind == PL_GPU) {
            if (pl_state_avail(&b->st, c, t->nodes[u].rank) <= b->w->k0) continue;
            int h = col_of(&m->hold_col, b, c, t->nnodes + t->nodes[u].rank, k);
            if (h < 0) return -1; /* send_useful admits no send before the hold exists */
            cols[n] = h, vals[n++] = -1;
        } else {
            if (pl_state_holds(&b->st, c, u, k)) continue;
            for (int i = t->in_start[u]; i < t->in_start[u + 1]; i++) {
                int s = col_of(&m->send_col, b, c, t->in[i], k - pl_hop(b->in, t->in[i]));
                if (s >= 0) cols[n] = s, vals[n++] = -1;
            }
        }
        if (add_row(m, -1e30, 0, n, cols, vals) != 0) return -1;
    }
    return 0;
}

/* Switches without copies: what leaves in an epoch is at most what arrives
 * then (or was left there by the prior flows), and at most one arrives. */
static int unicast_rows(build_t *b, int *cols, double *vals)
{
    const pl_topology_t *t = b->in->topo;
    pl_model_t *m = b->m;

    for (int u = 0; u < t->nnodes; u++) {
        if (!PL_UNICAST(t, u)) continue;
        for (int c = 0; c < b->in->nchunks; c++)
            for (int k = b->w->k0; k <= b->w->bend; k++) {
                int n = 0, nin, there = pl_map_get(&b->st.at_switch, pl_key(c, u, t->nnodes, k), NULL);
                for (int i = t->in_start[u]; i < t->in_start[u + 1]; i++) {
                    int s = col_of(&m->send_col, b, c, t->in[i], k - pl_hop(b->in, t->in[i]));
                    if (s >= 0) cols[n] = s, vals[n++] = -1;
                }
                nin = n;
                for (int i = t->out_start[u]; i < t->out_start[u + 1]; i++) {
                    int s = col_of(&m->send_col, b, c, t->out[i], k);
                    if (s >= 0) cols[n] = s, vals[n++] = 1;
                }
                if (n > nin && add_row(m, -1e30, pl_state_holds(&b->st, c, u, k) ? 1 : 0, n, cols,
                                       vals) != 0)
                    return -1;
                for (int i = 0; i < nin; i++) vals[i] = 1;
                if (nin > 1 || (nin > 0 && there))
                    if (add_row(m, -1e30, there ? 0 : 1, nin, cols, vals) != 0) return -1;
            }
    }
    return 0;
}

static const pl_col_t *sort_cols; /* qsort has no context argument in C11 */

static int by_link_then_epoch(const void *a, const void *b)
{
    const pl_col_t *x = &sort_cols[*(const int *)a], *y = &sort_cols[*(const int *)b];
    if (x->where != y->where) return x->where - y->where;
    if (x->epoch != y->epoch) return x->epoch - y->epoch;
    return *(const int *)a - *(const int *)b;
}

/* For each link and epoch, the sends on it then at most what is left. */
static int capacity_rows(build_t *b, int *cols, double *vals)
{
    pl_model_t *m = b->m;
    size_t n = m->nsends;
    int *order = malloc(sizeof(int) * (n ? n : 1));

    if (order == NULL) return -1;
    for (size_t i = 0; i < n; i++) order[i] = (int)i;
    sort_cols = m->cols;
    qsort(order, n, sizeof(int), by_link_then_epoch);
    for (size_t lo = 0; lo < n;) {
        int l = m->cols[order[lo]].where;
        const pl_timing_t *tm = &b->in->timing[l];
        size_t hi = lo;
        while (hi < n && m->cols[order[hi]].where == l) hi++;
        /* epochs t where some send is on the link: from the first start to
         * the last start's span */
        int first = m->cols[order[lo]].epoch, last = m->cols[order[hi - 1]].epoch + tm->span - 1;
        size_t a = lo;
        for (int t = first; t <= last; t++) {
            while (a < hi && m->cols[order[a]].epoch <= t - tm->span) a++;
            int k = 0;
            for (size_t i = a; i < hi && m->cols[order[i]].epoch <= t; i++)
                cols[k] = order[i], vals[k++] = 1;
            int used = t < b->st.busy_len[l] ? b->st.busy[l][t] : 0;
            int room = tm->per_epoch - used;
            if (k > room && add_row(m, -1e30, room > 0 ? room : 0, k, cols, vals) != 0) {
                free(order);
                return -1;
            }
        }
        lo = hi;
    }
    free(order);
    return 0;
}

/* done[k] <= hold[c,g,k] for every pair still missing at k0 */
static int done_rows(build_t *b, double weight)
{
    const pl_topology_t *t = b->in->topo;
    pl_model_t *m = b->m;
    int cols[2];
    double vals[2] = { 1, -1 };

    for (int k = b->w->k0 + 1; k <= b->w->bend; k++) {
        int z = add_col(m, PL_COL_DONE, -1, -1, k, 0, 1, -weight, 1);
        if (z < 0) return -1;
        for (int c = 0; c < b->in->nchunks; c++)
            for (int g = 0; g < t->ngpus; g++) {
                if (pl_state_avail(&b->st, c, g) <= b->w->k0) continue;
                int h = col_of(&m->hold_col, b, c, t->nnodes + g, k);
                if (h < 0) {
                    m->colub[z] = 0; /* cannot be done yet */
                    continue;
                }
                cols[0] = z, cols[1] = h;
                if (add_row(m, -1e30, 0, 2, cols, vals) != 0) return -1;
            }
    }
    return 0;
}

/* The entries, made row by row, gathered column by column. */
static int to_columns(pl_model_t *m)
{
    int *fill = calloc((size_t)m->ncols + 1, sizeof(int));

    m->start = calloc((size_t)m->ncols + 1, sizeof(int));
    m->index = malloc(sizeof(int) * (m->ntr ? m->ntr : 1));
    m->value = malloc(sizeof(double) * (m->ntr ? m->ntr : 1));
    if (fill == NULL || m->start == NULL || m->index == NULL || m->value == NULL) {
        free(fill);
        return -1;
    }
    for (size_t i = 0; i < m->ntr; i++) m->start[m->tr_col[i] + 1]++;
    for (int j = 0; j < m->ncols; j++) m->start[j + 1] += m->start[j];
    for (size_t i = 0; i < m->ntr; i++) {
        int j = m->tr_col[i], p = m->start[j] + fill[j]++;
        m->index[p] = m->tr_row[i];
        m->value[p] = m->tr_val[i];
    }
    free(fill);
    free(m->tr_row);
    free(m->tr_col);
    free(m->tr_val);
    m->tr_row = m->tr_col = NULL;
    m->tr_val = NULL;
    m->ntr = m->cap_tr = 0;
    return 0;
}

int pl_model_build(const pl_instance_t *in, const pl_window_t *w, pl_model_t *m, char *why,
                   size_t whylen)
{
    build_t b = { in, w, m, { 0 }, { 0 }, NULL, NULL };
    const pl_topology_t *t = in->topo;
    size_t most = (size_t)t->nlinks + (size_t)t->nnodes + 4;
    int *cols = NULL, rc = -1, missing = 0;
    double *vals = NULL, weight;

    memset(m, 0, sizeof(*m));
    pl_schedule_init(&b.prior);
    if (w->prior != NULL && pl_schedule_copy(&b.prior, w->prior) != 0) goto out;
    if (pl_state_init(&b.st, in, &b.prior) != 0 || bounds(&b) != 0 || add_sends(&b) != 0) goto out;
    /* Capacity rows list at most every send on a link */
    if (m->nsends + 4 > most) most = m->nsends + 4;
    cols = malloc(sizeof(int) * most);
    vals = malloc(sizeof(double) * most);
    if (cols == NULL || vals == NULL) goto out;
    for (int c = 0; c < in->nchunks; c++)
        for (int g = 0; g < t->ngpus; g++) missing += pl_state_avail(&b.st, c, g) > w->k0;
    weight = (double)missing * (w->bend - w->k0 + 1) + 1;
    int h = add_holds(&b, 1);
    if (h == -2) {
        rc = pl_fail(why, whylen, "the horizon of %d epochs is too short for every chunk to "
                     "reach every GPU", w->bend);
        goto out_quiet;
    }
    if (h != 0 || hold_rows(&b, cols, vals) != 0 || source_rows(&b, cols, vals) != 0 ||
        unicast_rows(&b, cols, vals) != 0 ||
        capacity_rows(&b, cols, vals) != 0 || done_rows(&b, weight) != 0 ||
        to_columns(m) != 0)
        goto out;
    rc = 0;
out:
    if (rc != 0) pl_fail(why, whylen, "out of memory building the program");
out_quiet:
    free(cols);
    free(vals);
    free(b.earliest);
    free(b.tail);
    pl_state_fini(&b.st);
    pl_schedule_fini(&b.prior);
    if (rc != 0) pl_model_free(m);
    return rc;
}

void pl_model_free(pl_model_t *m)
{
    free(m->cols);
    free(m->collb);
    free(m->colub);
    free(m->obj);
    free(m->integer);
    free(m->rowlb);
    free(m->rowub);
    free(m->start);
    free(m->index);
    free(m->value);
    free(m->tr_row);
    free(m->tr_col);
    free(m->tr_val);
    pl_map_free(&m->send_col);
    pl_map_free(&m->hold_col);
    memset(m, 0, sizeof(*m));
}

double *pl_model_values_of(const pl_instance_t *in, const pl_window_t *w, const pl_model_t *m,
                           const pl_schedule_t *s)
{
    build_t b = { in, w, (pl_model_t *)m, { 0 }, { 0 }, NULL, NULL };
    double *x = calloc((size_t)m->ncols + 1, sizeof(double));
    int ok = x != NULL;

    pl_schedule_init(&b.prior);
    for (size_t i = 0; ok && i < s->nflows; i++) {
        const pl_flow_t *f = &s->flows[i];
        int j = col_of(&m->send_col, &b, f->chunk, f->link, f->epoch);
        if (f->epoch >= w->k0 && j < 0) ok = 0;
        if (pl_schedule_add(&b.prior, f->chunk, f->link, f->epoch, f->phase) != 0) ok = 0;
        if (j >= 0) x[j] = 1;
    }
    /* holdings and completion as those flows make them */
    ok = ok && pl_state_init(&b.st, in, &b.prior) == 0;
    for (int j = 0; ok && j < m->ncols; j++) {
        const pl_col_t *col = &m->cols[j];
        if (col->kind == PL_COL_HOLD)
            x[j] = pl_state_avail(&b.st, col->chunk, col->where) <= col->epoch;
        if (col->kind == PL_COL_DONE)
            x[j] = b.st.unmet == 0 && pl_state_finish(&b.st) <= col->epoch;
    }
    if (b.st.in != NULL) pl_state_fini(&b.st);
    pl_schedule_fini(&b.prior);
    if (!ok) {
        free(x);
        return NULL;
    }
    return x;
}
