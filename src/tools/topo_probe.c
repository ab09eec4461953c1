/*
 * topo_probe.c - ping-pong between two ranks, bounded in time.
 *
 * Rank a sends, rank b echoes whatever arrives until a message tagged
 * STOP, so that a alone decides sizes and repetitions. Latency is half the
 * median round trip of 8 bytes; bandwidth the large size over half the
 * median round trip less that latency, which is how the planner's model
 * charges a chunk (size over bandwidth, plus latency). The large size is
 * 4 MiB unless a round trip of it would not fit the budget a few times over
 * (a slow link), then smaller: every measurement ends within its budget
 * and a few round trips.
 */
#include "tools/topo_probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { TAG_PING = 71, TAG_PONG = 72, TAG_STOP = 73 };
enum { PROBE_BYTES = 64 * 1024 };  /* sizes the large messages on slow links */

void topo_wait(MPI_Request *req, MPI_Status *status, double limit_s, bool idle,
               const char *what)
{
    double start = MPI_Wtime();
    int done = 0;
    const struct timespec nap = {0, 200 * 1000};

    for (;;) {
        MPI_Test(req, &done, status ? status : MPI_STATUS_IGNORE);
        if (done) return;
        if (MPI_Wtime() - start > limit_s) break;
        if (idle) nanosleep(&nap, NULL);
    }
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "dfccl_topo: rank %d: %s did not finish within %.0f s: aborting the job\n",
            rank, what, limit_s);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static int by_value(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct {
    MPI_Comm comm;
    int peer;
    char *out, *in;
    const topo_probe_opts_t *o;
    char what[160];
} pinger_t;

static double round_trip(pinger_t *p, size_t bytes)
{
    MPI_Request req[2];
    double t0 = MPI_Wtime();

    MPI_Irecv(p->in, (int)bytes, MPI_BYTE, p->peer, TAG_PONG, p->comm, &req[1]);
    MPI_Isend(p->out, (int)bytes, MPI_BYTE, p->peer, TAG_PING, p->comm, &req[0]);
    topo_wait(&req[0], NULL, p->o->wait_s, false, p->what);
    topo_wait(&req[1], NULL, p->o->wait_s, false, p->what);
    return MPI_Wtime() - t0;
}

/* Up to reps timed round trips of bytes, stopping once budget_s is spent
 * (one at least); their median, and how many into *done. */
static double timed(pinger_t *p, size_t bytes, int reps, double budget_s, double *times,
                    int *done)
{
    double start = MPI_Wtime();
    int n = 0;

    while (n < reps && (n == 0 || MPI_Wtime() - start < budget_s))
        times[n++] = round_trip(p, bytes);
    *done = n;
    return median(times, n);
}

static void measure(pinger_t *p, topo_figure_t *out)
{
    const topo_probe_opts_t *o = p->o;
    int most = o->latency_reps > o->bandwidth_reps ? o->latency_reps : o->bandwidth_reps;
    double *times = malloc(sizeof(double) * (size_t)(most > 0 ? most : 1));
    size_t bytes = o->max_bytes;

    if (times == NULL) {
        fprintf(stderr, "dfccl_topo: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* Untimed first round trips: connections are made on first use. */
    round_trip(p, TOPO_SMALL_BYTES);
    round_trip(p, TOPO_SMALL_BYTES);
    double small = timed(p, TOPO_SMALL_BYTES, o->latency_reps, o->budget_s / 4, times,
                         &out->latency_reps);
    /* A quarter of the budget went to latency; the rest must hold a
     * warm-up and every timed round trip of the large size. */
    double per_trip = o->budget_s * 3 / 4 / (o->bandwidth_reps + 1);
    double moving = round_trip(p, PROBE_BYTES) - small;  /* what grows with the size */
    while (bytes > PROBE_BYTES && small + moving * (double)bytes / PROBE_BYTES > per_trip)
        bytes /= 2;
    round_trip(p, bytes);
    double large = timed(p, bytes, o->bandwidth_reps, o->budget_s * 3 / 4, times,
                         &out->bandwidth_reps);
    double one_way = large / 2, lat = small / 2;
    /* Latency deducted as the model adds it back; where noise leaves
     * nothing to deduct from, the plain rate. */
    double data = one_way - lat > one_way / 10 ? one_way - lat : one_way;
    out->latency_us = lat * 1e6;
    out->bandwidth_GBps = (double)bytes / data / 1e9;
    out->bytes = (double)bytes;
    free(times);
}

static void echo(MPI_Comm comm, int peer, char *buf, size_t max, const topo_probe_opts_t *o,
                 const char *what)
{
    for (;;) {
        MPI_Request req;
        MPI_Status st;
        int count;
        MPI_Irecv(buf, (int)max, MPI_BYTE, peer, MPI_ANY_TAG, comm, &req);
        /* The next ping comes once the pinger has our pong: one of its waits. */
        topo_wait(&req, &st, o->wait_s * 2, false, what);
        if (st.MPI_TAG == TAG_STOP) return;
        MPI_Get_count(&st, MPI_BYTE, &count);
        MPI_Isend(buf, count, MPI_BYTE, peer, TAG_PONG, comm, &req);
        topo_wait(&req, NULL, o->wait_s, false, what);
    }
}

void topo_probe_pair(MPI_Comm comm, int a, int b, const topo_probe_opts_t *o,
                     topo_figure_t *out)
{
    int rank;
    char what[160];
    MPI_Request req;

    MPI_Comm_rank(comm, &rank);
    snprintf(what, sizeof(what), "the ping-pong between ranks %d and %d", a, b);
    if (rank == a || rank == b) {
        char *buf = malloc(o->max_bytes * 2);
        if (buf == NULL) {
            fprintf(stderr, "dfccl_topo: rank %d: out of memory\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        memset(buf, rank & 0xff, o->max_bytes * 2);
        if (rank == a) {
            pinger_t p = {.comm = comm, .peer = b, .out = buf, .in = buf + o->max_bytes, .o = o};
            snprintf(p.what, sizeof(p.what), "%s", what);
            memset(out, 0, sizeof(*out));
            out->a = a;
            out->b = b;
            measure(&p, out);
            MPI_Isend(NULL, 0, MPI_BYTE, b, TAG_STOP, comm, &req);
            topo_wait(&req, NULL, o->wait_s, false, what);
        } else {
            echo(comm, a, buf, o->max_bytes, o, what);
        }
        free(buf);
    }
    /* The whole measurement, for the others: its budget and the last waits
     * of the pair, which report a lost peer first. */
    snprintf(what, sizeof(what), "the barrier after the ping-pong between ranks %d and %d "
             "(a rank lost or stopped?)", a, b);
    MPI_Ibarrier(comm, &req);
    topo_wait(&req, NULL, o->budget_s + o->wait_s * 3, rank != a && rank != b, what);
}
