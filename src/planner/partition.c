/*
 * partition.c - time partitioning: where the MILP of the whole horizon is
 * too large to finish, solve a window of epochs at a time and continue from
 * the state it reached (what is held, what is on the way, which links are
 * still busy). In each window only that window's sends are integer; the
 * sends after it are fractions (the LP relaxation), and every GPU must
 * still get every chunk by the end, so that a window maximises progress
 * (the earliest finish, then the earliest deliveries) with the rest of the
 * work in view rather than grabbing links a later chunk will need. Its
 * integer sends are kept, the fractions thrown away, the next window
 * starts where it ended. Each window has a fraction of the integers of the
 * whole program, which is what makes branch and bound slow.
 *
 * Every window starts from the greedy completion of the state so far: that
 * completion sets the window's horizon (so the program is always feasible)
 * and CBC's cutoff, and its sends are kept where CBC finds nothing better,
 * so a window that runs out of time still makes greedy's progress. The
 * result is compared with greedy's alone.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "planner/milp.h"
#include "planner/state.h"

/* Epochs a chunk needs to cross the topology at most (no capacity limits):
 * a window shorter than that could leave chunks stranded in switches. */
static int crossing(const pl_instance_t *in)
{
    const pl_topology_t *t = in->topo;
    int *d = malloc(sizeof(int) * (size_t)t->nnodes), most = 1;
    pl_heap_t h = { 0 };
    pl_heap_item_t top;

    if (d == NULL) return 1;
    for (int g = 0; g < t->ngpus; g++) {
        for (int n = 0; n < t->nnodes; n++) d[n] = INT_MAX;
        d[t->gpu_node[g]] = 0;
        if (pl_heap_push(&h, 0, t->gpu_node[g]) != 0) break;
        while (pl_heap_pop(&h, &top)) {
            int u = (int)top.val;
            if (top.key > d[u]) continue;
            for (int i = t->out_start[u]; i < t->out_start[u + 1]; i++) {
                int l = t->out[i], v = t->links[l].dst;
                if (d[u] + pl_hop(in, l) < d[v]) {
                    d[v] = d[u] + pl_hop(in, l);
                    if (pl_heap_push(&h, d[v], v) != 0) break;
                }
            }
        }
        for (int q = 0; q < t->ngpus; q++)
            if (d[t->gpu_node[q]] != INT_MAX && d[t->gpu_node[q]] > most) most = d[t->gpu_node[q]];
    }
    free(d);
    pl_heap_free(&h);
    return most;
}

static int unmet(const pl_instance_t *in, pl_schedule_t *s)
{
    pl_state_t st;
    int n = -1;

    if (pl_state_init(&st, in, s) == 0) n = st.unmet;
    pl_state_fini(&st);
    return n;
}

/* Appends to cur the flows of from in epochs [k0, k1). */
static int append_window(pl_schedule_t *cur, const pl_schedule_t *from, int k0, int k1)
{
    for (size_t i = 0; i < from->nflows; i++) {
        const pl_flow_t *f = &from->flows[i];
        if (f->epoch >= k0 && f->epoch < k1 &&
            pl_schedule_add(cur, f->chunk, f->link, f->epoch, f->phase) != 0)
            return -1;
    }
    return 0;
}

/* One window: sends in [k0, k0 + width) fixed and appended to cur, done
 * by the time until (pl_now's clock), its greedy completion included. */
static int window(const pl_instance_t *in, const pl_options_t *o, int k0, int width,
                  double until, pl_schedule_t *cur, char *why, size_t whylen)
{
    pl_schedule_t start, sol;
    pl_milp_result_t res;
    pl_window_t w;
    double limit;
    int rc = -1;

    pl_schedule_init(&start);
    pl_schedule_init(&sol);
    if (pl_schedule_copy(&start, cur) != 0 || pl_greedy_from(in, &start, k0, why, whylen) != 0)
        goto out;
    limit = until - pl_now();
    if (limit < 0.01) limit = 0.01;
    w = (pl_window_t){ .k0 = k0, .bend = start.epochs, .prior = cur, .integer_end = k0 + width };
    if (pl_milp_solve(in, &w, &start, limit, o->gap, 0, &sol, &res, why, whylen) != 0) goto out;
    rc = append_window(cur, res.found ? &sol : &start, k0, k0 + width);
    if (rc != 0) pl_fail(why, whylen, "out of memory");
    if (o->verbose)
        fprintf(stderr, "dfccl_plan: partition: epochs %d-%d of %d: %d columns, %s\n", k0,
                k0 + width - 1, start.epochs, res.cols,
                res.found ? (res.optimal ? "optimal" : "stopped at the limit")
                : res.optimal ? "greedy's sends are optimal"
                              : "nothing better in time, greedy's sends kept");
out:
    pl_schedule_fini(&start);
    pl_schedule_fini(&sol);
    return rc;
}

int pl_partition(const pl_instance_t *in, const pl_options_t *o, pl_schedule_t *s, char *why,
                 size_t whylen)
{
    pl_schedule_t g, cur;
    double deadline = pl_now() + o->time_limit_s;
    int ahead, width, k0 = 0, left, rc = -1;
    char err[512];

    pl_schedule_init(&g);
    pl_schedule_init(&cur);
    if (pl_greedy(in, &g, why, whylen) != 0) goto out;
    pl_schedule_prune(in, &g);
    ahead = crossing(in);
    /* A quarter of greedy's length, so that four or so windows cover the
     * schedule, but as long as a chunk takes to cross the topology. */
    width = o->window > 0 ? o->window : (int)ceil(g.epochs / 4.0);
    if (o->window <= 0 && width < ahead + 1) width = ahead + 1;
    if (o->verbose)
        fprintf(stderr, "dfccl_plan: partition: windows of %d epochs (greedy needs %d)\n", width,
                g.epochs);
    while ((left = unmet(in, &cur)) > 0) {
        if (left < 0) {
            pl_fail(why, whylen, "out of memory");
            goto out;
        }
        /* the time left shared among the windows greedy's length suggests */
        int windows = (g.epochs - k0 + width - 1) / width;
        double limit = (deadline - pl_now()) / (windows > 1 ? windows : 1);
        if (limit < 0.1 || k0 > 4 * g.epochs) break; /* out of time: greedy finishes */
        if (window(in, o, k0, width, pl_now() + limit, &cur, why, whylen) != 0) goto out;
        k0 += width;
    }
    if (left > 0 && pl_greedy_from(in, &cur, k0, why, whylen) != 0) goto out;
    pl_schedule_prune(in, &cur);
    if (pl_check(in, &cur, &cur.epochs, err, sizeof(err)) != 0) {
        rc = pl_fail(why, whylen, "partition: the schedule does not replay (a bug): %s", err);
        goto out;
    }
    if (o->verbose)
        fprintf(stderr, "dfccl_plan: partition: %d epochs (greedy %d)\n", cur.epochs, g.epochs);
    pl_schedule_t *best = cur.epochs <= g.epochs ? &cur : &g;
    pl_schedule_fini(s);
    s->flows = best->flows;
    s->nflows = best->nflows;
    s->cap = best->cap;
    s->epochs = best->epochs;
    s->start_epochs = g.epochs;
    snprintf(s->method, sizeof(s->method), "%s", best == &cur ? "partition" : "greedy");
    best->flows = NULL;
    best->nflows = best->cap = 0;
    rc = 0;
out:
    pl_schedule_fini(&g);
    pl_schedule_fini(&cur);
    return rc;
}
