/*
 * milp.c - the allgather solved exactly: the program of formulation.c over
 * the greedy schedule's length as horizon (the optimum is no longer), with
 * integer sends, handed to COIN-OR CBC through its C interface. The greedy
 * schedule is also CBC's first incumbent, so that a run stopped by the time
 * limit is never worse than greedy. Also the solver of each window of time
 * partitioning (partition.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <Cbc_C_Interface.h>
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

int pl_milp_solve(const pl_instance_t *in, const pl_window_t *w, const pl_schedule_t *start,
                  double time_limit, double gap, int verbose, pl_schedule_t *out,
                  pl_milp_result_t *res, char *why, size_t whylen)
{
    pl_model_t m;
    Cbc_Model *cbc;
    CoinBigIndex *starts;
    const double *x;
    int rc = 0;

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
    Cbc_loadProblem(cbc, m.ncols, m.nrows, starts, m.index, m.value, m.collb, m.colub, m.obj,
                    m.rowlb, m.rowub);
    for (int j = 0; j < m.ncols; j++)
        if (m.integer[j]) Cbc_setInteger(cbc, j);
    Cbc_setObjSense(cbc, -1); /* maximise */
    Cbc_setLogLevel(cbc, 0);
    set_param(cbc, "log", 0);
    set_param(cbc, "seconds", time_limit);
    set_param(cbc, "ratioGap", gap);
    if (start != NULL) {
        double *v = pl_model_values_of(in, w, &m, start);
        int *idx = malloc(sizeof(int) * ((size_t)m.ncols + 1));
        if (v != NULL && idx != NULL) {
            for (int j = 0; j < m.ncols; j++) idx[j] = j;
            Cbc_setMIPStartI(cbc, m.ncols, idx, v);
            /* CBC 2.10 loses the start's columns when preprocessing
             * reshapes the program (the run then ends without a result);
             * the start is worth more than what preprocessing gains here */
            Cbc_setParameter(cbc, "preprocess", "off");
        }
        free(idx);
        free(v);
    }
    res->status = Cbc_solve(cbc);
    res->optimal = Cbc_isProvenOptimal(cbc);
    res->bound = Cbc_getBestPossibleObjValue(cbc);
    res->objective = Cbc_getObjValue(cbc);
    x = Cbc_bestSolution(cbc);
    if (x == NULL || Cbc_isProvenInfeasible(cbc)) {
        res->found = 0;
    } else {
        res->found = 1;
        for (size_t j = 0; j < m.nsends && rc == 0; j++)
            if (x[j] > 0.5 && pl_schedule_add(out, m.cols[j].chunk, m.cols[j].where,
                                              m.cols[j].epoch, PL_PHASE_ONLY) != 0)
                rc = pl_fail(why, whylen, "out of memory");
    }
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
    w = (pl_window_t){ 0, g.epochs, g.epochs, 1, NULL };
    if (pl_milp_solve(in, &w, &g, o->time_limit_s, o->gap, o->verbose, &best, &res, why, whylen) != 0)
        goto out;
    best.collective = PL_ALLGATHER;
    if (!res.found) {
        /* the horizon is feasible (greedy meets it): only a limit stops CBC
         * short of a solution */
        if (o->verbose)
            fprintf(stderr, "dfccl_plan: milp: no solution within the limit, keeping greedy's\n");
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
