/*
 * topo_job.h - what dfccl_topo knows of the running job: its hosts, the
 * ranks on each, and the figures measured between them.
 */
#ifndef DFCCL_TOPO_JOB_H
#define DFCCL_TOPO_JOB_H

#include <stddef.h>

/* The planner keeps a GPU's "host" in 64 bytes (src/planner/planner.h):
 * longer names are shortened to fit, so that every file written loads. */
enum { TOPO_NAME_MAX = 64 };

/* One ping-pong between ranks a and b; a < 0 where nothing was measured. */
typedef struct {
    int a, b;
    double latency_us;      /* one way: half the median round trip of small messages */
    double bandwidth_GBps;  /* one way, large messages, the latency deducted */
    double bytes;           /* the large messages' size */
    int latency_reps, bandwidth_reps;  /* timed round trips behind each median */
} topo_figure_t;

typedef struct {
    int nranks, nhosts;
    char (*host_name)[TOPO_NAME_MAX];  /* per host, hosts in the order of their first rank */
    int *host_of;                      /* per rank: its host */
    int *numa;                         /* per rank: NUMA node, -1 where unknown */
    topo_figure_t *local;              /* per host: between its first two ranks */
    topo_figure_t *net;                /* per host h >= 1: its first rank with host 0's */
} topo_job_t;

#endif
