/*
 * milp.c - the allgather solved exactly: the program of formulation.c over
 * the greedy schedule's length as horizon (the optimum is no longer), with
 * integer sends, handed to COIN-OR CBC through its C interface. The greedy
 * schedule's value is CBC's cutoff, and the result when CBC finds nothing
 * better, so that a run stopped by the time limit is never worse than
 * greedy. Also the solver of each window of time
 * partitioning (partition.c).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <Cbc_C_Interface.h>
#include "planner/milp.h"

/* CBC's own arguments (as its command line takes them): the C interface
 * passes these to the solver run itself, where setters on the model can be
 * overridden by the run's defaults. */
static void set_param(Cbc_Model *cbc, const char *name, double v)
{
    char buf[64];

    snprintf(buf, sizeof(buf), "%.10g", v);
    Cbc_setParameter(cbc, name, buf);
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

/* CBC's verdict on a solved program, as a child process hands it back. */
typedef struct {
    int status, found, optimal;
    double bound, objective;
} verdict_t;

/* The verdict, and in chosen (nsends bytes) which sends the best solution
 * found takes; bound is the start's value (the cutoff). */
static void verdict_of(Cbc_Model *cbc, double bound, size_t nsends, verdict_t *v, char *chosen)
{
    const double *x = Cbc_bestSolution(cbc);

    v->found = x != NULL && !Cbc_isProvenInfeasible(cbc);
    /* nothing better than the start, proven: the start is optimal */
    v->optimal = v->found ? Cbc_isProvenOptimal(cbc) : bound <= 0 && Cbc_isProvenInfeasible(cbc);
    v->bound = Cbc_getBestPossibleObjValue(cbc);
    v->objective = v->found ? Cbc_getObjValue(cbc) : bound;
    for (size_t j = 0; j < nsends; j++) chosen[j] = v->found && x[j] > 0.5;
}

static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;

    while (n > 0) {
        ssize_t put = write(fd, p, n);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0) return -1;
        p += put;
        n -= (size_t)put;
    }
    return 0;
}

/* n bytes from fd by the deadline (pl_now's clock): 0, or -1 where the
 * deadline passes or the writer ends first. */
static int read_by(int fd, void *buf, size_t n, double deadline)
{
    char *p = buf;

    while (n > 0) {
        double left = deadline - pl_now();
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        if (left <= 0) return -1;
        int ready = poll(&pfd, 1, (int)(left * 1000) + 1);
        if (ready < 0 && errno != EINTR) return -1;
        if (ready <= 0) continue;
        ssize_t got = read(fd, p, n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return -1;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

/* CBC 2.10 holds branch and bound to its time limit, but not its first
 * solve of the relaxation nor its preprocessing, and on large programs
 * (32 GPUs, or long horizons) either alone runs minutes past the limit.
 * So CBC runs in a child process, which is killed where it has not
 * answered by the deadline: nothing found, as when CBC finds nothing in
 * time. Where no child can be started it runs here, unbounded. */
static void solve_by(Cbc_Model *cbc, double bound, size_t nsends, double deadline, verdict_t *v,
                     char *chosen)
{
    int fds[2] = { -1, -1 }, ok;
    pid_t pid = -1;

    memset(v, 0, sizeof(*v));
    if (pipe(fds) != 0 || (pid = fork()) < 0) {
        if (fds[0] >= 0) close(fds[0]), close(fds[1]);
        v->status = Cbc_solve(cbc);
        verdict_of(cbc, bound, nsends, v, chosen);
        return;
    }
    if (pid == 0) {
        close(fds[0]);
        v->status = Cbc_solve(cbc);
        verdict_of(cbc, bound, nsends, v, chosen);
        ok = write_all(fds[1], v, sizeof(*v)) == 0 && write_all(fds[1], chosen, nsends) == 0;
        _exit(ok ? 0 : 1);
    }
    close(fds[1]);
    if (read_by(fds[0], v, sizeof(*v), deadline) != 0 ||
        read_by(fds[0], chosen, nsends, deadline) != 0) {
        kill(pid, SIGKILL);
        memset(v, 0, sizeof(*v));
        v->status = -1;
        v->objective = bound;
    }
    close(fds[0]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
}

int pl_milp_solve(const pl_instance_t *in, const pl_window_t *w, const pl_schedule_t *start,
                  double time_limit, double gap, int verbose, pl_schedule_t *out,
                  pl_milp_result_t *res, char *why, size_t whylen)
{
    pl_model_t m;
    Cbc_Model *cbc;
    CoinBigIndex *starts;
    char *chosen;
    verdict_t v;
    /* The limit is the caller's (dfccl_plan's --time-limit): CBC is told to
     * stop a little before it, so that it can hand back what it found, and
     * killed at it where it does not stop. */
    double bound, t0 = pl_now(), deadline = t0 + time_limit;
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
    chosen = malloc(m.nsends ? m.nsends : 1);
    cbc = Cbc_newModel();
    if (starts == NULL || chosen == NULL || cbc == NULL) {
        free(starts);
        free(chosen);
        if (cbc) Cbc_deleteModel(cbc);
        pl_model_free(&m);
        return pl_fail(why, whylen, "out of memory");
    }
    for (int j = 0; j <= m.ncols; j++) starts[j] = m.start[j];
    Cbc_loadProblem(cbc, m.ncols, m.nrows, starts, m.index, m.value, m.collb, m.colub, m.obj,
                    m.rowlb, m.rowub);
    for (int j = 0; j < m.ncols; j++)
        if (m.integer[j]) Cbc_setInteger(cbc, j);
    Cbc_setLogLevel(cbc, 0);
    set_param(cbc, "log", 0);
    set_param(cbc, "seconds", 0.9 * (deadline - pl_now()) > 0.01 ? 0.9 * (deadline - pl_now()) : 0.01);
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
    solve_by(cbc, bound, m.nsends, deadline, &v, chosen);
    if (v.status < 0 && verbose)
        fprintf(stderr, "dfccl_plan: milp: CBC stopped, %.4g s past the limit\n",
                pl_now() - t0 - time_limit);
    res->status = v.status;
    res->found = v.found;
    res->optimal = v.optimal;
    res->bound = v.bound;
    res->objective = v.objective;
    for (size_t j = 0; res->found && j < m.nsends && rc == 0; j++)
        if (chosen[j] && pl_schedule_add(out, m.cols[j].chunk, m.cols[j].where, m.cols[j].epoch,
                                         PL_PHASE_ONLY) != 0)
            rc = pl_fail(why, whylen, "out of memory");
    Cbc_deleteModel(cbc);
    free(starts);
    free(chosen);
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
    double t0 = pl_now(), left;

    pl_schedule_init(&g);
    pl_schedule_init(&best);
    if (pl_greedy(in, &g, why, whylen) != 0) goto out;
    pl_schedule_prune(in, &g);
    w = (pl_window_t){ .k0 = 0, .bend = g.epochs, .prior = NULL, .integer_end = g.epochs };
    /* the limit covers the warm start too */
    left = o->time_limit_s - (pl_now() - t0);
    if (pl_milp_solve(in, &w, &g, left > 0.01 ? left : 0.01, o->gap, o->verbose, &best, &res, why,
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
            s->start_epochs = g.epochs;
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
        s->start_epochs = g.epochs;
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
    s->start_epochs = g.epochs;
    rc = 0;
out:
    pl_schedule_fini(&g);
    pl_schedule_fini(&best);
    return rc;
}
