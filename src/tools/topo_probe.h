/*
 * topo_probe.h - ping-pong between two ranks of a job, bounded in time:
 * latency from small messages, bandwidth from large ones.
 */
#ifndef DFCCL_TOPO_PROBE_H
#define DFCCL_TOPO_PROBE_H

#include <mpi.h>
#include <stdbool.h>
#include "tools/topo_job.h"

typedef struct {
    int latency_reps;    /* timed round trips of TOPO_SMALL_BYTES, at most */
    int bandwidth_reps;  /* timed round trips of the large size, at most */
    size_t max_bytes;    /* the large size where the link is fast enough */
    double budget_s;     /* one measurement stops repeating after this */
    double wait_s;       /* any one message, or the wait for the others */
} topo_probe_opts_t;

enum { TOPO_SMALL_BYTES = 8 };

/*
 * Every rank of comm calls it with the same a and b: rank a times round
 * trips with rank b into *out (on rank a only), the others wait, sleeping,
 * until the pair is done, so that measurements never overlap.
 */
void topo_probe_pair(MPI_Comm comm, int a, int b, const topo_probe_opts_t *o,
                     topo_figure_t *out);

/*
 * Waits for req at most limit_s seconds; past that, says that what did
 * not finish and aborts the job, so that a lost peer never hangs it. idle:
 * sleep between polls (a rank that only waits leaves the cores to those
 * measuring).
 */
void topo_wait(MPI_Request *req, MPI_Status *status, double limit_s, bool idle,
               const char *what);

#endif
