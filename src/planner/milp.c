/*
 * milp.c - the allgather solved exactly: the program of formulation.c over
 * the greedy schedule's length as horizon (the optimum is no longer), with
 * integer sends, handed to COIN-OR CBC through its C interface. The greedy
 * schedule's value is CBC's cutoff, and the result when CBC finds nothing
 * better, so that a run stopped by the time limit is never worse than
 * greedy. Also the solver of each window of time
 * partitioning (partition.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <Cbc_C_Interface.h>
#include <Clp_C_Interface.h>
#include "milp.h"

/* CBC's own arguments (as its command line takes them): the C interface
 * passes these to the solver run itself, where setters on the model can be
 * overridden by the run's defaults. */
static void set_param(Cbc_Model *cbc, const char *name, double v)
{
    char buf[64];

    snprintf(buf, sizeof(buf), "%.10g", v);
    Cbc_setParameter(cbc, name, buf);
}

/* CBC 2.10 bounds its branch and bound by its time limit but not its first
 * solve of the relaxation, which on a large program runs for many minutes
 * past any limit. So the relaxation is solved here first, by CLP, which
 * stops at a limit: 1 where it is solved within half of time_limit (CBC,
 * solving it again, then has the rest), else 0; -1 out of memory. CLP's
 * limit is CPU time, which a busy machine stretches. */
static int relaxation_fits(const pl_model_t *m, const CoinBigIndex *starts, double time_limit)
{
    Clp_Simplex *clp;
    double t0 = pl_now();
    int fits;

    if (time_limit <= 0) return 0; /* and CLP takes a negative limit for none */
    clp = Clp_newModel();
    if (clp == NULL) return -1;
    Clp_loadProblem(clp, m->ncols, m->nrows, starts, m->index, m->value, m->collb, m->colub,
                    m->obj, m->rowlb, m->rowub);
    Clp_setLogLevel(clp, 0);
    Clp_setMaximumSeconds(clp, time_limit / 2);
    Clp_initialSolve(clp);
    /* infeasible or unbounded relaxations are left for CBC to report */
    fits = Clp_status(clp) != 3 && pl_now() - t0 <= time_limit / 2;
    Clp_deleteModel(clp);
    return fits;
}

/* The objective value the start reaches, or 1 (no bound) where the start
 * does not fit the program. */
static double start_value(const pl_instance_t *in, const pl_window_t *w, const pl_model_t *m,
                          const pl_schedule_t *start)
{
    double *v = start ? pl_model_values_of(in, w, m, start) : NULL, z = 0;

    if (v == NULL) return 1;
    for (int j = 0; j < m->ncols; j++) z += m->obj[j] * v[j];
    free(v);
    return z;
}

int pl_milp_solve(const pl_instance_t *in, const pl_window_t *w, const pl_schedule_t *start,
                  double time_limit, double gap, int verbose, pl_schedule_t *out,
                  pl_milp_result_t *res, char *why, size_t whylen)
{
    pl_model_t m;
    Cbc_Model *cbc;
    CoinBigIndex *starts;
    const double *x;
    double bound, t0 = pl_now();
    int rc = 0, fits;

    memset(res, 0, sizeof(*res));
    if (pl_model_build(in, w, &m, why, whylen) != 0) return -1;
    res->cols = m.ncols;
    res->rows = m.nrows;
    if (verbose)
        fprintf(stderr, "dfccl_plan: milp: %d columns, %d rows, epochs %d to %d, limit %.4g s\n",
                m.ncols, m.nrows, w->k0, w->bend, time_limit);
    /* CoinBigIndex may be wider than int */
    starts = malloc(sizeof(CoinBigIndex) * ((size_t)m.ncols + 1));
    cbc = Cbc_newModel();
    if (starts == NULL || cbc == NULL) {
        free(starts);
        if (cbc) Cbc_deleteModel(cbc);
        pl_model_free(&m);
        return pl_fail(why, whylen, "out of memory");
    }
    for (int j = 0; j <= m.ncols; j++) starts[j] = m.start[j];
    fits = relaxation_fits(&m, starts, time_limit - (pl_now() - t0));
    if (fits <= 0) {
        /* nothing found, nothing proven: the caller keeps the start */
        if (fits == 0 && verbose)
            fprintf(stderr, "dfccl_plan: milp: the relaxation takes over half the limit\n");
        Cbc_deleteModel(cbc);
        free(starts);
        pl_model_free(&m);
        return fits < 0 ? pl_fail(why, whylen, "out of memory") : 0;
    }
    Cbc_loadProblem(cbc, m.ncols, m.nrows, starts, m.index, m.value, m.collb, m.colub, m.obj,
                    m.rowlb, m.rowub);
    for (int j = 0; j < m.ncols; j++)
        if (m.integer[j]) Cbc_setInteger(cbc, j);
    Cbc_setLogLevel(cbc, 0);
    set_param(cbc, "log", 0);
    set_param(cbc, "seconds", time_limit - (pl_now() - t0));
    /* the limit is the caller's wait: wall time, not CPU time (CBC's default) */
    Cbc_setParameter(cbc, "timeMode", "elapsed");
    set_param(cbc, "ratioGap", gap);
    /* The start (greedy's schedule) as a cutoff, not as CBC's first
     * incumbent: CBC 2.10 spends untimed effort completing a given start
     * (and loses it when preprocessing), while a cutoff prunes as well.
     * Objective values are whole numbers, so only strictly better
     * solutions pass; none found means the start stays. */
    bound = start_value(in, w, &m, start);
    if (bound <= 0) set_param(cbc, "cutoff", bound - 0.5);
    res->status = Cbc_solve(cbc);
    x = Cbc_bestSolution(cbc);
    res->found = x != NULL && !Cbc_isProvenInfeasible(cbc);
    /* nothing better than the start, proven: the start is optimal */
    res->optimal =
        res->found ? Cbc_isProvenOptimal(cbc) : bound <= 0 && Cbc_isProvenInfeasible(cbc);
    res->bound = Cbc_getBestPossibleObjValue(cbc);
    res->objective = res->found ? Cbc_getObjValue(cbc) : bound;
    for (size_t j = 0; res->found && j < m.nsends && rc == 0; j++)
        if (x[j] > 0.5 && pl_schedule_add(out, m.cols[j].chunk, m.cols[j].where, m.cols[j].epoch,
                                          PL_PHASE_ONLY) != 0)
            rc = pl_fail(why, whylen, "out of memory");
    Cbc_deleteModel(cbc);
    free(starts);
    pl_model_free(&m);
    return rc;
}

int pl_milp(const pl_instance_t *in, const pl_options_t *o, pl_schedule_t *s, char *why,
            size_t whylen)
{
    pl_schedule_t g, best;
    pl_milp_result_t res;
    pl_window_t w;
    char err[512];
    int epochs, rc = -1;

    pl_schedule_init(&g);
    pl_schedule_init(&best);
    if (pl_greedy(in, &g, why, whylen) != 0) goto out;
    pl_schedule_prune(in, &g);
    w = (pl_window_t){ .k0 = 0, .bend = g.epochs, .prior = NULL, .integer_end = g.epochs };
    if (pl_milp_solve(in, &w, &g, o->time_limit_s, o->gap, o->verbose, &best, &res, why,
                      whylen) != 0)
        goto out;
    best.collective = PL_ALLGATHER;
    if (!res.found) {
        if (o->verbose)
            fprintf(stderr, "dfccl_plan: milp: %s, keeping greedy's %d epochs\n",
                    res.optimal ? "nothing better exists" : "nothing better found in time",
                    g.epochs);
        if (res.optimal) {
            pl_schedule_fini(s);
            s->flows = g.flows;
            s->nflows = g.nflows;
            s->cap = g.cap;
            g.flows = NULL;
            g.nflows = g.cap = 0;
            s->epochs = g.epochs;
            snprintf(s->method, sizeof(s->method), "milp"); /* proven optimal by it */
            rc = 0;
            goto out;
        }
    } else if (pl_check(in, &best, &epochs, err, sizeof(err)) != 0) {
        rc = pl_fail(why, whylen, "milp: the solution does not replay (a bug): %s", err);
        goto out;
    } else if (epochs <= g.epochs) {
        if (o->verbose)
            fprintf(stderr, "dfccl_plan: milp: %d epochs (%s; greedy %d)\n", epochs,
                    res.optimal ? "optimal" : "stopped at the limit, maybe not optimal", g.epochs);
        pl_schedule_fini(s);
        s->flows = best.flows;
        s->nflows = best.nflows;
        s->cap = best.cap;
        best.flows = NULL;
        best.nflows = best.cap = 0;
        s->epochs = epochs;
        snprintf(s->method, sizeof(s->method), "milp");
        rc = 0;
        goto out;
    }
    pl_schedule_fini(s);
    s->flows = g.flows;
    s->nflows = g.nflows;
    s->cap = g.cap;
    g.flows = NULL;
    g.nflows = g.cap = 0;
    s->epochs = g.epochs;
    snprintf(s->method, sizeof(s->method), "greedy");
    rc = 0;
out:
    pl_schedule_fini(&g);
    pl_schedule_fini(&best);
    return rc;
}
