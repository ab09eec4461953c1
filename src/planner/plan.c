/*
 * plan.c - planning a collective end to end: chunk and epoch sizes from the
 * request, an allgather planner chosen and run, reduce-scatter as an
 * allgather on the transposed topology reversed in time, allreduce as the
 * two one after the other; the result replayed by the checker before it is
 * handed out.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "planner/planner.h"
#include "planner/util.h"

/* Below these many flow variables (chunks x links x horizon epochs) the MILP
 * of the whole horizon is worth trying within a time limit; below the next,
 * windows of it (time partitioning); below the last, the LP relaxation; the
 * greedy planner beyond. The bounds are rough: solver time grows faster than
 * the variable count, and the machine's speed varies. */
#define AUTO_MILP_VARS 20000
#define AUTO_PARTITION_VARS 200000
#define AUTO_LP_VARS 2000000

static pl_method_t choose(const pl_instance_t *in, int horizon)
{
    double vars = (double)in->nchunks * in->topo->nlinks * horizon;

    if (vars <= AUTO_MILP_VARS) return PL_MILP;
    if (vars <= AUTO_PARTITION_VARS) return PL_PARTITION;
    if (vars <= AUTO_LP_VARS) return PL_LP;
    return PL_GREEDY;
}

static int run_method(const pl_instance_t *in, pl_method_t m, const pl_options_t *o,
                      pl_schedule_t *s, char *why, size_t whylen)
{
    switch (m) {
    case PL_GREEDY: return pl_greedy(in, s, why, whylen);
    case PL_RING: return pl_ring(in, s, why, whylen);
    case PL_HIER: return pl_hier(in, s, why, whylen);
    case PL_MILP: return pl_milp(in, o, s, why, whylen);
    case PL_LP: return pl_lp(in, o, s, why, whylen);
    case PL_PARTITION: return pl_partition(in, o, s, why, whylen);
    case PL_AUTO: break;
    }
    return pl_fail(why, whylen, "no such method");
}

/* auto: the hierarchical schedule (rings of the GPUs of one local index
 * across hosts, then all-to-all inside each host) where it is shorter than
 * what the method found; cheap, and on hosts whose GPUs send at a rate of
 * their own (a copy budget) greedy's earliest-first paths can load a few
 * GPUs with most of the forwarding, which the hierarchy spreads. Where the
 * topology names no hosts, or hosts of unequal sizes, s stays. */
static void keep_hier_if_shorter(const pl_instance_t *in, pl_schedule_t *s)
{
    pl_schedule_t h;
    char why[256], err[256];

    pl_schedule_init(&h);
    h.collective = PL_ALLGATHER;
    if (pl_hier(in, &h, why, sizeof(why)) == 0) {
        pl_schedule_prune(in, &h);
        if (pl_check(in, &h, &h.epochs, err, sizeof(err)) == 0 && h.epochs < s->epochs) {
            pl_schedule_swap_flows(s, &h);   /* the method's are freed below */
            s->start_epochs = 0;             /* built, not searched from a start */
            memcpy(s->method, h.method, sizeof(s->method));
        }
    }
    pl_schedule_fini(&h);
}

/* An allgather on in's topology into s (empty), pruned to trees and
 * replayed; s->epochs is when it completes. */
static int solve_allgather(const pl_instance_t *in, const pl_options_t *o, pl_schedule_t *s,
                           char *why, size_t whylen)
{
    pl_method_t m = o->method;
    pl_collective_t coll = s->collective;
    pl_options_t chosen = *o;
    double t0 = pl_now();
    char err[512];

    int have = 0;

    if (m == PL_AUTO) {
        /* The greedy schedule's length is the horizon every other method
         * would work with: it sizes their programs. */
        pl_schedule_t g;
        pl_schedule_init(&g);
        if (pl_greedy(in, &g, why, whylen) != 0) {
            pl_schedule_fini(&g);
            return -1;
        }
        m = choose(in, g.epochs);
        /* the limit is the whole run's: what sizing took is spent */
        chosen.time_limit_s = o->time_limit_s - (pl_now() - t0);
        if (chosen.time_limit_s < 0.01) chosen.time_limit_s = 0.01;
        if (o->verbose)
            fprintf(stderr, "dfccl_plan: about %.0f flow variables over %d epochs: method %s\n",
                    (double)in->nchunks * in->topo->nlinks * g.epochs, g.epochs, pl_method_name(m));
        if (m == PL_GREEDY) {
            pl_schedule_fini(s);
            s->flows = g.flows;
            s->nflows = g.nflows;
            s->cap = g.cap;
            s->epochs = g.epochs;
            s->start_epochs = 0;
            memcpy(s->method, g.method, sizeof(s->method));
            have = 1;
        } else {
            pl_schedule_fini(&g);
        }
    }
    s->collective = PL_ALLGATHER;
    if (!have && run_method(in, m, &chosen, s, why, whylen) != 0) return -1;
    pl_schedule_prune(in, s);
    if (pl_check(in, s, &s->epochs, err, sizeof(err)) != 0)
        return pl_fail(why, whylen, "%s planned an invalid allgather (a bug): %s", s->method, err);
    if (o->method == PL_AUTO) keep_hier_if_shorter(in, s);
    s->collective = coll;
    return 0;
}

/* A reduce-scatter: an allgather on the transposed topology, every hop then
 * reversed in time; appended to s with the given phase. Its epochs returned
 * in *epochs. */
static int solve_reducescatter(const pl_instance_t *in, const pl_options_t *o, int phase,
                               pl_schedule_t *s, int *epochs, char *why, size_t whylen)
{
    pl_topology_t *tt = pl_topology_transpose(in->topo);
    pl_instance_t tin;
    pl_schedule_t ag;
    int rc = -1;

    pl_schedule_init(&ag);
    if (tt == NULL) return pl_fail(why, whylen, "out of memory");
    if (pl_instance_init(&tin, tt, in->chunks_per_gpu, in->chunk_bytes, in->epoch_s, why,
                         whylen) == 0) {
        if (solve_allgather(&tin, o, &ag, why, whylen) == 0) {
            size_t first = s->nflows;
            if (pl_schedule_reverse(&tin, &ag, ag.epochs, s) != 0) {
                pl_fail(why, whylen, "out of memory");
            } else {
                for (size_t i = first; i < s->nflows; i++) s->flows[i].phase = phase;
                memcpy(s->method, ag.method, sizeof(s->method));
                s->start_epochs = ag.start_epochs;
                *epochs = ag.epochs;
                rc = 0;
            }
        }
        pl_instance_fini(&tin);
    }
    pl_schedule_fini(&ag);
    pl_topology_free(tt);
    return rc;
}

/* An allreduce: reduce-scatter, then allgather from the epoch it ends. */
static int solve_allreduce(const pl_instance_t *in, const pl_options_t *o, pl_schedule_t *s,
                           char *why, size_t whylen)
{
    pl_schedule_t ag;
    int rs_epochs, rc;

    if (solve_reducescatter(in, o, PL_PHASE_REDUCE, s, &rs_epochs, why, whylen) != 0) return -1;
    pl_schedule_init(&ag);
    ag.collective = PL_ALLGATHER;
    rc = solve_allgather(in, o, &ag, why, whylen);
    if (rc == 0) s->start_epochs = s->start_epochs && ag.start_epochs
                                       ? s->start_epochs + ag.start_epochs : 0;
    for (size_t i = 0; rc == 0 && i < ag.nflows; i++)
        if (pl_schedule_add(s, ag.flows[i].chunk, ag.flows[i].link,
                            ag.flows[i].epoch + rs_epochs, PL_PHASE_GATHER) != 0)
            rc = pl_fail(why, whylen, "out of memory");
    pl_schedule_fini(&ag);
    return rc;
}

double pl_chunk_bytes(const pl_topology_t *t, uint64_t output_bytes, int chunks_per_gpu)
{
    /* Whole bytes; where the buffer does not split evenly the model moves
     * the larger chunk every time, which errs on the slow side. */
    return ceil((double)output_bytes / ((double)t->ngpus * chunks_per_gpu));
}

int pl_plan(const pl_topology_t *t, pl_collective_t coll, uint64_t output_bytes,
            int chunks_per_gpu, double epoch_s, const pl_options_t *o, pl_schedule_t *s,
            char *why, size_t whylen)
{
    pl_instance_t in;
    double start = pl_now(), chunks = (double)t->ngpus * chunks_per_gpu;
    int rc, epochs;
    char err[512];

    pl_schedule_init(s);
    if ((double)output_bytes < chunks)
        return pl_fail(why, whylen, "%llu bytes cannot be cut into %.0f chunks",
                       (unsigned long long)output_bytes, chunks);
    s->collective = coll;
    s->output_bytes = output_bytes;
    s->chunks_per_gpu = chunks_per_gpu;
    s->chunk_bytes = pl_chunk_bytes(t, output_bytes, chunks_per_gpu);
    s->epoch_s = epoch_s;
    if (pl_instance_init(&in, t, chunks_per_gpu, s->chunk_bytes, s->epoch_s, why, whylen) != 0)
        return -1;
    if (o->verbose)
        fprintf(stderr, "dfccl_plan: planning %s on %d GPUs, %d chunks of %.0f bytes, epochs of "
                "%.4g us, method %s\n", pl_collective_name(coll), t->ngpus, in.nchunks,
                s->chunk_bytes, epoch_s * 1e6, pl_method_name(o->method));
    if (coll == PL_ALLGATHER) rc = solve_allgather(&in, o, s, why, whylen);
    else if (coll == PL_REDUCESCATTER)
        rc = solve_reducescatter(&in, o, PL_PHASE_ONLY, s, &epochs, why, whylen);
    else rc = solve_allreduce(&in, o, s, why, whylen);
    if (rc == 0) {
        pl_schedule_sort(s);
        if (pl_check(&in, s, &s->epochs, err, sizeof(err)) != 0)
            rc = pl_fail(why, whylen, "the planned %s is invalid (a bug): %s",
                         pl_collective_name(coll), err);
    }
    s->solver_s = pl_now() - start;
    pl_instance_fini(&in);
    if (rc != 0) pl_schedule_fini(s);
    return rc;
}
