/*
 * lp.c - the allgather for instances too large for the MILP: the same
 * program (formulation.c) with sends allowed to be fractions, solved by
 * COIN-OR CLP, then rounded into a valid schedule. The LP runs in
 * polynomial time where branch and bound may not finish; its fractions say
 * which chunk the optimum would like on which link when.
 *
 * Rounding: the fractional sends, earliest epoch first and larger fraction
 * first within an epoch, are taken whole wherever the schedule so far
 * allows (the sender holds the chunk, the link has room, the receiver does
 * not have it by then); what they leave undelivered the greedy planner
 * completes from there. Every step keeps the schedule valid, so the result
 * is valid whatever the LP says.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <Clp_C_Interface.h>
#include "planner/model.h"
#include "planner/state.h"

/* Sends below half a chunk are left to the greedy completion: taken
 * whole, the LP's many small fractions crowd out what it is sure of. */
#define LP_MIN_FRACTION 0.5

typedef struct {
    int col;
    double x;
    int epoch;
} wish_t;

static int by_epoch_then_size(const void *a, const void *b)
{
    const wish_t *p = a, *q = b;
    if (p->epoch != q->epoch) return p->epoch - q->epoch;
    if (p->x != q->x) return p->x > q->x ? -1 : 1;
    return p->col - q->col;
}

/* Solves the relaxation; x gets the column values (caller frees). */
static int solve_lp(const pl_model_t *m, double time_limit, double **x, int *status, char *why,
                    size_t whylen)
{
    Clp_Simplex *clp = Clp_newModel();
    CoinBigIndex *starts = malloc(sizeof(CoinBigIndex) * ((size_t)m->ncols + 1));
    int rc = 0;

    *x = malloc(sizeof(double) * ((size_t)m->ncols + 1));
    if (clp == NULL || starts == NULL || *x == NULL) {
        rc = pl_fail(why, whylen, "out of memory");
        goto out;
    }
    for (int j = 0; j <= m->ncols; j++) starts[j] = m->start[j];
    Clp_loadProblem(clp, m->ncols, m->nrows, starts, m->index, m->value, m->collb, m->colub,
                    m->obj, m->rowlb, m->rowub);
    Clp_setLogLevel(clp, 0);
    Clp_setMaximumSeconds(clp, time_limit);
    Clp_initialSolve(clp);
    *status = Clp_status(clp);
    /* 0 optimal, 3 stopped by the limit: either way the values are a
     * guide, and rounding copes with any */
    if (*status != 0 && *status != 3) {
        rc = pl_fail(why, whylen, "lp: CLP ends with status %d", *status);
        goto out;
    }
    memcpy(*x, Clp_getColSolution(clp), sizeof(double) * (size_t)m->ncols);
out:
    if (clp != NULL) Clp_deleteModel(clp);
    free(starts);
    if (rc != 0) {
        free(*x);
        *x = NULL;
    }
    return rc;
}

/* Takes the LP's sends whole where the schedule so far allows (see top). */
static int round_sends(const pl_instance_t *in, const pl_model_t *m, const double *x,
                       pl_schedule_t *r)
{
    const pl_topology_t *t = in->topo;
    wish_t *w = malloc(sizeof(wish_t) * (m->nsends ? m->nsends : 1));
    size_t n = 0;
    pl_state_t st;
    int rc = 0;

    if (w == NULL || pl_state_init(&st, in, r) != 0) {
        free(w);
        return -1;
    }
    for (size_t j = 0; j < m->nsends; j++)
        if (x[j] >= LP_MIN_FRACTION) w[n++] = (wish_t){ (int)j, x[j], m->cols[j].epoch };
    qsort(w, n, sizeof(*w), by_epoch_then_size);
    for (size_t i = 0; i < n && rc == 0; i++) {
        const pl_col_t *col = &m->cols[w[i].col];
        int c = col->chunk, l = col->where, k = col->epoch, v = t->links[l].dst;
        if (t->nodes[v].kind == PL_GPU &&
            pl_state_avail(&st, c, t->nodes[v].rank) <= k + pl_hop(in, l))
            continue;
        if (!pl_state_holds(&st, c, t->links[l].src, k) || !pl_state_link_free(&st, l, k) ||
            !pl_state_may_enter(&st, c, v, k + pl_hop(in, l)))
            continue;
        rc = pl_state_send(&st, c, l, k);
    }
    pl_state_fini(&st);
    free(w);
    return rc;
}

int pl_lp(const pl_instance_t *in, const pl_options_t *o, pl_schedule_t *s, char *why,
          size_t whylen)
{
    pl_schedule_t g, r;
    pl_model_t m;
    pl_window_t w;
    double *x = NULL;
    int status = -1, rc = -1;
    char err[512];

    pl_schedule_init(&g);
    pl_schedule_init(&r);
    if (pl_greedy(in, &g, why, whylen) != 0) goto out;
    pl_schedule_prune(in, &g);
    w = (pl_window_t){ .k0 = 0, .bend = g.epochs, .prior = NULL, .integer_end = g.epochs };
    if (pl_model_build(in, &w, &m, why, whylen) != 0) goto out;
    if (o->verbose)
        fprintf(stderr, "dfccl_plan: lp: %d columns, %d rows, %d epochs, limit %.4g s\n", m.ncols,
                m.nrows, g.epochs, o->time_limit_s);
    rc = solve_lp(&m, o->time_limit_s, &x, &status, why, whylen);
    if (rc == 0) {
        r.collective = PL_ALLGATHER;
        if (round_sends(in, &m, x, &r) != 0) rc = pl_fail(why, whylen, "out of memory");
    }
    pl_model_free(&m);
    free(x);
    if (rc != 0) goto out;
    /* what rounding left undelivered, planned greedily from there */
    pl_schedule_prune(in, &r);
    size_t rounded = r.nflows;
    if (pl_greedy(in, &r, why, whylen) != 0) {
        rc = -1;
        goto out;
    }
    pl_schedule_prune(in, &r);
    if (pl_check(in, &r, &r.epochs, err, sizeof(err)) != 0) {
        rc = pl_fail(why, whylen, "lp: the rounded schedule does not replay (a bug): %s", err);
        goto out;
    }
    if (o->verbose)
        fprintf(stderr, "dfccl_plan: lp: %s; %zu sends rounded, %zu planned after: %d epochs "
                "(greedy %d)\n", status == 0 ? "optimal" : "stopped at the limit", rounded,
                r.nflows - rounded, r.epochs, g.epochs);
    /* rounding can lose to greedy alone: keep the better, named for what made it */
    pl_schedule_t *best = r.epochs <= g.epochs ? &r : &g;
    snprintf(best->method, sizeof(best->method), "%s", best == &r ? "lp" : "greedy");
    pl_schedule_fini(s);
    s->flows = best->flows;
    s->nflows = best->nflows;
    s->cap = best->cap;
    s->epochs = best->epochs;
    s->start_epochs = g.epochs;
    memcpy(s->method, best->method, sizeof(s->method));
    best->flows = NULL;
    best->nflows = best->cap = 0;
    rc = 0;
out:
    pl_schedule_fini(&g);
    pl_schedule_fini(&r);
    return rc;
}
