/*
 * instance.c - the epoch model: how long an epoch is, and what each link
 * does in epochs (how many chunks it carries, for how many epochs, after how
 * much latency). Every planner and the checker derive link behaviour here
 * only, so that they can never disagree about it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "planner/planner.h"
#include "planner/util.h"

/* Ratios that are whole numbers up to rounding must count as whole: a chunk
 * that exactly fills an epoch takes one epoch, not two. */
#define PL_EPS 1e-9
/* Beyond this many epochs for one hop the model is the wrong tool (and
 * horizons would not fit in memory): the epoch is far too short. */
#define PL_MAX_HOP_EPOCHS 100000

double pl_epoch_length(const pl_topology_t *t, double chunk_bytes, pl_epoch_rule_t rule)
{
    double bw = t->links[0].bandwidth;

    for (int l = 1; l < t->nlinks; l++) {
        if (rule == PL_EPOCH_FAST && t->links[l].bandwidth > bw) bw = t->links[l].bandwidth;
        if (rule == PL_EPOCH_SLOW && t->links[l].bandwidth < bw) bw = t->links[l].bandwidth;
    }
    return chunk_bytes / bw;
}

static int link_timing(const pl_link_t *k, double epoch_s, double chunk_bytes, pl_timing_t *tm)
{
    double per_epoch = k->bandwidth * epoch_s / chunk_bytes;
    double delay = k->latency / epoch_s;

    if (per_epoch >= 1 - PL_EPS) {
        /* At least a chunk an epoch: whole chunks only, the rest of an
         * epoch's capacity is not used (the model moves whole chunks). */
        tm->span = 1;
        per_epoch = floor(per_epoch + PL_EPS);
        tm->per_epoch = per_epoch > PL_MAX_HOP_EPOCHS ? PL_MAX_HOP_EPOCHS : (int)per_epoch;
    } else {
        double span = ceil(1 / per_epoch - PL_EPS);
        if (span > PL_MAX_HOP_EPOCHS) return -1;
        tm->span = (int)span;
        tm->per_epoch = 1;
    }
    /* TE-CCL's rule: latency costs whole epochs, but none where it is at
     * most a tenth of one (short against the chunk time that the span
     * already counts); a hop may take that much longer than modelled. */
    delay = delay > PL_LATENCY_THRESHOLD + PL_EPS ? ceil(delay - PL_EPS) : 0;
    if (delay > PL_MAX_HOP_EPOCHS) return -1;
    tm->delay = (int)delay;
    return 0;
}

int pl_instance_init(pl_instance_t *in, const pl_topology_t *t, int chunks_per_gpu,
                     double chunk_bytes, double epoch_s, char *why, size_t whylen)
{
    memset(in, 0, sizeof(*in));
    if (chunks_per_gpu < 1 || chunks_per_gpu > 65536)
        return pl_fail(why, whylen, "chunks per GPU must be 1 to 65536, not %d", chunks_per_gpu);
    if (!(chunk_bytes > 0) || !(epoch_s > 0))
        return pl_fail(why, whylen, "chunk size and epoch length must be above 0");
    if ((int64_t)chunks_per_gpu * t->ngpus > INT32_MAX / 4)
        return pl_fail(why, whylen, "too many chunks");
    in->topo = t;
    in->chunks_per_gpu = chunks_per_gpu;
    in->nchunks = chunks_per_gpu * t->ngpus;
    in->chunk_bytes = chunk_bytes;
    in->epoch_s = epoch_s;
    in->timing = calloc((size_t)(t->nlinks > 0 ? t->nlinks : 1), sizeof(*in->timing));
    if (in->timing == NULL) return pl_fail(why, whylen, "out of memory");
    for (int l = 0; l < t->nlinks; l++)
        if (link_timing(&t->links[l], epoch_s, chunk_bytes, &in->timing[l]) != 0) {
            free(in->timing);
            in->timing = NULL;
            return pl_fail(why, whylen,
                           "link %d->%d needs over %d epochs of %.3g us for one chunk: "
                           "the epoch is too short for it",
                           t->nodes[t->links[l].src].id, t->nodes[t->links[l].dst].id,
                           PL_MAX_HOP_EPOCHS, epoch_s * 1e6);
        }
    /* A switch passes a chunk on as it arrives (cut-through): the hop out
     * of it to a GPU is an epoch shorter than its span and delay, the
     * epoch it is taken on in overlapping the one it came in. A path GPU -
     * switch - GPU then takes span1 + span2 - 1 epochs besides the delays:
     * the slower link's span where either span is 1, more where both are
     * longer, never less than the path takes. Hops into switches keep their
     * full length, so that no chunk goes round switches within an epoch. */
    for (int l = 0; l < t->nlinks; l++) {
        pl_timing_t *tm = &in->timing[l];
        tm->hop = tm->span + tm->delay;
        if (t->nodes[t->links[l].src].kind == PL_SWITCH && t->nodes[t->links[l].dst].kind == PL_GPU)
            tm->hop--;
    }
    return 0;
}

double pl_latency_left_out(const pl_instance_t *in)
{
    double most = 0;

    for (int l = 0; l < in->topo->nlinks; l++)
        if (in->timing[l].delay == 0 && in->topo->links[l].latency > most)
            most = in->topo->links[l].latency;
    return most;
}

void pl_instance_fini(pl_instance_t *in)
{
    free(in->timing);
    in->timing = NULL;
}

static const char *const coll_names[] = { "allgather", "reducescatter", "allreduce" };

const char *pl_collective_name(pl_collective_t c)
{
    return coll_names[c];
}

int pl_collective_parse(const char *s, pl_collective_t *c)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(s, coll_names[i]) == 0) {
            *c = (pl_collective_t)i;
            return 0;
        }
    return -1;
}

static const char *const method_names[] = { "auto", "milp", "lp", "partition", "greedy",
                                            "ring", "hier" };

const char *pl_method_name(pl_method_t m)
{
    return method_names[m];
}

int pl_method_parse(const char *s, pl_method_t *m)
{
    for (int i = 0; i < (int)(sizeof(method_names) / sizeof(method_names[0])); i++)
        if (strcmp(s, method_names[i]) == 0) {
            *m = (pl_method_t)i;
            return 0;
        }
    return -1;
}

void pl_options_default(pl_options_t *o)
{
    memset(o, 0, sizeof(*o));
    o->method = PL_AUTO;
    o->time_limit_s = 60;
    o->gap = 0;
    o->window = 0;
    o->verbose = 0;
}
