/*
 * planner.h - the schedule planner: a collective on a topology planned as a
 * multi-commodity flow over time (docs/planner.md has the model).
 *
 * Nodes are GPUs and switches; directed links carry bytes at a bandwidth
 * after a latency. Time is cut into epochs; a chunk is the unit that moves.
 * A schedule lists every link hop of every chunk with the epoch it is sent
 * in; the checker replays any schedule against the model, every planner
 * (greedy, MILP, LP with rounding, time partitioning) is judged by it.
 */
#ifndef DFCCL_PLANNER_H
#define DFCCL_PLANNER_H

#include <stddef.h>
#include <stdint.h>

/* ---- topology (topology.c) --------------------------------------------- */

typedef enum { PL_GPU, PL_SWITCH } pl_kind_t;

typedef struct {
    int id;          /* as the topology file names it */
    pl_kind_t kind;
    int rank;        /* GPUs: position in ascending id order; switches: -1 */
    char host[64];   /* the "host" it is on, "" when the file names none */
    int copies;      /* switches: 1 may send what arrives to several links at once
                        (multicast, and in-network sums in reverse); 0 passes each
                        chunk on once (a unicast network: every copy its own stream) */
} pl_node_t;

/* A switch that passes each chunk on only once an epoch. */
#define PL_UNICAST(t, n) ((t)->nodes[n].kind == PL_SWITCH && !(t)->nodes[n].copies)

typedef struct {
    int src, dst;     /* node indices */
    double bandwidth; /* bytes per second */
    double latency;   /* seconds */
} pl_link_t;

typedef struct {
    int nnodes, nlinks, ngpus;
    pl_node_t *nodes;
    pl_link_t *links;
    int *gpu_node;          /* rank -> node index */
    int *out_start, *out;   /* links leaving node n: out[out_start[n] .. out_start[n+1]) */
    int *in_start, *in;     /* links entering node n, likewise */
} pl_topology_t;

/* Loads and checks a topology file; 0 on success, else -1 with why filled. */
int pl_topology_load(const char *path, pl_topology_t **out, char *why, size_t whylen);
/* The same nodes with every link turned round (reduce-scatter is planned as
 * an allgather on it, then reversed in time). */
pl_topology_t *pl_topology_transpose(const pl_topology_t *t);
void pl_topology_free(pl_topology_t *t);
/* Every GPU's host, numbered in rank order of first appearance (as the
 * engine numbers a communicator's nodes), into host[ngpus]; -1 (host
 * untouched) when some GPU names no host. */
int pl_topology_hosts(const pl_topology_t *t, int *host);
/* Node index of a file id, -1 when there is none. */
int pl_topology_node(const pl_topology_t *t, int id);
/* Link index from node src to node dst, -1 when there is none. */
int pl_topology_link(const pl_topology_t *t, int src, int dst);

/* ---- the epoch model (instance.c) -------------------------------------- */

typedef enum { PL_ALLGATHER, PL_REDUCESCATTER, PL_ALLREDUCE } pl_collective_t;

/* How one link behaves in epochs of a given length for chunks of a given size. */
typedef struct {
    int span;      /* epochs one chunk occupies the link (1 unless slower than a chunk an epoch) */
    int per_epoch; /* chunks that may be on the link at once */
    int delay;     /* epochs of latency after the last epoch of sending: ceil(latency /
                      epoch), or 0 where the latency is PL_LATENCY_THRESHOLD of an epoch or less */
    int hop;       /* epochs from sending to usable at the far end: span + delay, less one
                      from a switch to a GPU (switches pass chunks on as they arrive) */
} pl_timing_t;

/* Latency up to this fraction of an epoch costs no epoch (TE-CCL's
 * alpha_threshold): a hop may then take up to this much of an epoch longer
 * than modelled. */
#define PL_LATENCY_THRESHOLD 0.1

/* A topology with chunk and epoch sizes fixed: what every planner works on.
 * Chunk c belongs to rank c / chunks_per_gpu (its owner: the GPU whose input
 * it is for allgather, whose output it is for reduce-scatter). */
typedef struct {
    const pl_topology_t *topo;
    int chunks_per_gpu, nchunks;
    double chunk_bytes, epoch_s;
    pl_timing_t *timing; /* per link */
} pl_instance_t;

/* Epoch length: one chunk over the fastest link, or over the slowest. */
typedef enum { PL_EPOCH_FAST, PL_EPOCH_SLOW } pl_epoch_rule_t;
double pl_epoch_length(const pl_topology_t *t, double chunk_bytes, pl_epoch_rule_t rule);
int pl_instance_init(pl_instance_t *in, const pl_topology_t *t, int chunks_per_gpu,
                     double chunk_bytes, double epoch_s, char *why, size_t whylen);
void pl_instance_fini(pl_instance_t *in);
/* The longest latency the model leaves out (seconds): of links whose
 * latency is at most PL_LATENCY_THRESHOLD of an epoch. Each hop over such a
 * link may take up to that much longer than modelled. */
double pl_latency_left_out(const pl_instance_t *in);
static inline int pl_chunk_owner_node(const pl_instance_t *in, int c)
{
    return in->topo->gpu_node[c / in->chunks_per_gpu];
}
/* Epochs from sending on link l to the chunk being usable at its far end
 * (0 possible only from a switch to a GPU). */
static inline int pl_hop(const pl_instance_t *in, int l)
{
    return in->timing[l].hop;
}
const char *pl_collective_name(pl_collective_t c);
/* A byte count: plain, or with K M G T (powers of 1000) or Ki Mi Gi Ti
 * (powers of 1024), an optional B after; a whole number of bytes. 0 or -1. */
int pl_parse_bytes(const char *s, uint64_t *out);
int pl_collective_parse(const char *s, pl_collective_t *c);

/* ---- schedules (schedule.c, schedule_json.c) --------------------------- */

/* Allreduce flows say which half they belong to; the others are PL_PHASE_ONLY. */
enum { PL_PHASE_ONLY = 0, PL_PHASE_REDUCE = 1, PL_PHASE_GATHER = 2 };

typedef struct {
    int chunk; /* owner rank * chunks_per_gpu + index */
    int link;
    int epoch; /* the epoch it starts being sent in */
    int phase;
} pl_flow_t;

typedef struct {
    pl_collective_t collective;
    uint64_t output_bytes;
    double chunk_bytes, epoch_s;
    int chunks_per_gpu;
    int epochs;        /* the epoch by which every demand is met */
    int start_epochs;  /* the greedy schedule a solver (milp, lp, partition) started from,
                          its warm start (horizon, cutoff, fallback): its epochs; 0 for
                          methods that start from nothing. An allreduce adds its halves'. */
    double solver_s;
    char method[16];
    pl_flow_t *flows;
    size_t nflows, cap;
} pl_schedule_t;

void pl_schedule_init(pl_schedule_t *s);
void pl_schedule_fini(pl_schedule_t *s);
/* Exchanges the flows (and lengths) of two schedules: keeping the better
 * of two, the other is then freed with its own. */
void pl_schedule_swap_flows(pl_schedule_t *a, pl_schedule_t *b);
int pl_schedule_add(pl_schedule_t *s, int chunk, int link, int epoch, int phase);
int pl_schedule_copy(pl_schedule_t *dst, const pl_schedule_t *src);
void pl_schedule_sort(pl_schedule_t *s);
/* Allgather schedules: drops flows that deliver nothing new (a second copy
 * to a GPU, a path into a switch that goes nowhere), so that every chunk
 * travels as a tree; reversing that tree in time gives a reduction. */
void pl_schedule_prune(const pl_instance_t *in, pl_schedule_t *s);
/* An allgather schedule planned on the transposed topology, turned into a
 * reduce-scatter on the original one: every hop reversed in time. */
int pl_schedule_reverse(const pl_instance_t *in, const pl_schedule_t *ag, int epochs,
                        pl_schedule_t *rs);

int pl_schedule_write(const pl_schedule_t *s, const pl_topology_t *t, const char *path,
                      char *why, size_t whylen);
int pl_schedule_read(const char *path, const pl_topology_t *t, pl_schedule_t *s, char *why,
                     size_t whylen);

/* ---- the checker (check.c) --------------------------------------------- */

/* Replays a schedule on the model: link capacity in every epoch, nothing
 * sent before it is held, every demand met, no contribution reduced twice.
 * On success returns 0 and the epoch by which every demand is met. */
int pl_check(const pl_instance_t *in, const pl_schedule_t *s, int *epochs, char *why,
             size_t whylen);

/* ---- planners ---------------------------------------------------------- */

typedef enum { PL_AUTO, PL_MILP, PL_LP, PL_PARTITION, PL_GREEDY, PL_RING, PL_HIER } pl_method_t;

typedef struct {
    pl_method_t method;
    double time_limit_s; /* per solver call for milp and lp, in all for partition */
    double gap;          /* relative optimality gap the MILP may stop at */
    int window;          /* partition: epochs a window (0: chosen) */
    int verbose;         /* progress lines on stderr */
} pl_options_t;

void pl_options_default(pl_options_t *o);
const char *pl_method_name(pl_method_t m);
int pl_method_parse(const char *s, pl_method_t *m);

/* Allgather planners: each fills s (flows, epochs, method) with a schedule
 * that starts from the flows already in s (all before any it adds) or, for
 * those that take no start, from nothing. Return 0 or -1 with why. */
int pl_greedy(const pl_instance_t *in, pl_schedule_t *s, char *why, size_t whylen);
/* The same, sending nothing before epoch from (the flows already in s are
 * taken as fixed: time partitioning continues from them). */
int pl_greedy_from(const pl_instance_t *in, pl_schedule_t *s, int from, char *why,
                   size_t whylen);
int pl_ring(const pl_instance_t *in, pl_schedule_t *s, char *why, size_t whylen);
/* The hierarchical allgather (hosts with equal numbers of GPUs): a ring
 * across hosts among the GPUs of each local index, then every GPU sends
 * what it holds to its host's other GPUs. As the engine's hierarchical
 * allreduce is, once reduce-scatter and allgather are built from it. */
int pl_hier(const pl_instance_t *in, pl_schedule_t *s, char *why, size_t whylen);
int pl_milp(const pl_instance_t *in, const pl_options_t *o, pl_schedule_t *s, char *why,
            size_t whylen);
int pl_lp(const pl_instance_t *in, const pl_options_t *o, pl_schedule_t *s, char *why,
          size_t whylen);
int pl_partition(const pl_instance_t *in, const pl_options_t *o, pl_schedule_t *s,
                 char *why, size_t whylen);

/* The size of a chunk when output_bytes (the whole buffer: allgather's
 * output, reduce-scatter's input, allreduce's buffer) is cut into
 * chunks_per_gpu chunks for every GPU. */
double pl_chunk_bytes(const pl_topology_t *t, uint64_t output_bytes, int chunks_per_gpu);
/* The whole job: plans the collective (reduce-scatter by reversal, allreduce
 * as reduce-scatter then allgather) in epochs of epoch_s, checks the result
 * and fills s with epochs and solver time. Returns 0 or -1 with why. */
int pl_plan(const pl_topology_t *t, pl_collective_t coll, uint64_t output_bytes,
            int chunks_per_gpu, double epoch_s, const pl_options_t *o, pl_schedule_t *s,
            char *why, size_t whylen);

/* Writes the engine's plan file (docs/plan-format.md) for a checked
 * schedule, to serve calls of min_bytes to max_bytes (whole buffer;
 * UINT64_MAX: no upper bound) on the topology's hosts (when every GPU
 * names one). */
int pl_plan_file_write(const pl_instance_t *in, const pl_schedule_t *s, const char *path,
                       uint64_t min_bytes, uint64_t max_bytes, char *why, size_t whylen);

#endif
