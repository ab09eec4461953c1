/*
 * trace.c - the GPU backend's latency trace (config gpu_trace, MCA
 * coll_dfccl_gpu_trace): for each collective, the host's clock at its post,
 * its publication in the submission queue and its completion, and the
 * daemon kernel's clock (globaltimer) at the steps it took there.
 *
 * Records are kept in memory and printed to stderr when the context ends,
 * or when 4096 have gathered (completions of this process then pause for
 * the few milliseconds the printing takes, once per 4096 collectives, with
 * no lock held that posting needs), so that tracing hardly slows the path it
 * measures. Host times are the monotonic clock; the kernel's clock runs
 * apart from it, so kernel steps are given from the moment the kernel saw
 * the submission, host steps from the post. A step the collective never
 * reached (it failed first) is printed as "none". Each line ends with the
 * two clocks' readings at the post and at the kernel seeing it, in ns: ranks
 * of one node share the host clock, ranks of one GPU the kernel's, so
 * contrib/bench/gpu_trace_ranks.py lines the ranks' steps up against each other.
 * Last come the SM clock cycles of parts of the kernel's work (clock64:
 * the global clock ticks in steps of about a microsecond, too coarse for
 * them) and the cycles from seeing the collective to completing it, which
 * over the global clock's interval give the SM clock's rate.
 */
#include <stdio.h>
#include <stdlib.h>
#include "util/clock.h"
#include "backends/gpu/trace.h"
#include "util/log.h"

/* 4096 records (about 400 KiB) cover a benchmark size's calls; a full
 * buffer is printed and refilled. */
#define GPU_TRACE_RECORDS 4096

struct gpu_trace_rec {
    uint64_t posted_ns, published_ns, drained_ns;   /* host, monotonic clock */
    uint64_t t[DFCCL_GPU_T_COUNT];                 /* kernel clock */
    uint64_t comm_key, seq, bytes;
    uint64_t move_max_ns, move_sum_ns;              /* kernel: time moving data */
    uint32_t cyc[DFCCL_GPU_C_COUNT];                /* kernel: cycles of its parts */
    int      rank, size;
    int      type, algo, algo_run, nparts;
};

void gpu_trace_start(dfccl_gpu_t *g)
{
    g->drain.trace_recs = calloc(GPU_TRACE_RECORDS, sizeof(*g->drain.trace_recs));
    if (g->drain.trace_recs == NULL) dfccl_error("GPU trace: out of memory; tracing off");
    g->drain.trace_n = 0;
}

/* dfccl_gpu_algo_t by name. */
static const char *gpu_trace_algo(int algo)
{
    static const char *const names[] = { "ring", "one-shot", "direct", "ll" };
    return algo >= 0 && algo < (int)(sizeof(names) / sizeof(names[0])) ? names[algo] : "?";
}

/* Microseconds from `from` to a kernel stamp, or "none" for a step not reached. */
static const char *gpu_trace_step(char *buf, size_t len, uint64_t stamp, uint64_t from)
{
    if (stamp == 0) return "none";
    snprintf(buf, len, "%.2f", ((double)stamp - (double)from) / 1e3);
    return buf;
}

/* One line per record: host microseconds from the post, kernel
 * microseconds from the kernel seeing it, and the host time since the
 * previous completion of this process (the gap between calls). */
void gpu_trace_flush(dfccl_gpu_t *g)
{
    for (size_t i = 0; i < g->drain.trace_n; i++) {
        const struct gpu_trace_rec *r = &g->drain.trace_recs[i];
        uint64_t seen = r->t[DFCCL_GPU_T_SEEN];
        double post = (double)r->posted_ns;
        double gap = i > 0 ? (post - (double)g->drain.trace_recs[i - 1].drained_ns) / 1e3 : 0.0;
        char b[6][32];
        fprintf(stderr, "dfccl gpu trace: rank %d of %d comm %#llx %s #%llu %llu B %s: published"
                " %.2f drained %.2f gap %.2f kernel: admitted %s first-move %s sent %s last-move %s"
                " received %s finished %s us; moving: slowest channel %.2f, mean %.2f us over %d (%s);"
                " clocks: post %llu seen %llu; cycles: poll %u issue %u copy %u admit %u start %u"
                " send %u receive %u first %u lines %u polls %u retry %u attempts %u complete %u"
                " take %u load %u fill %u store %u total %u\n",
                r->rank, r->size, (unsigned long long)r->comm_key,
                dfccl_coll_type_name((dfccl_coll_type_t)r->type), (unsigned long long)r->seq,
                (unsigned long long)r->bytes, gpu_trace_algo(r->algo),
                ((double)r->published_ns - post) / 1e3, ((double)r->drained_ns - post) / 1e3, gap,
                gpu_trace_step(b[0], sizeof(b[0]), r->t[DFCCL_GPU_T_ADMITTED], seen),
                gpu_trace_step(b[1], sizeof(b[1]), r->t[DFCCL_GPU_T_FIRST_MOVE], seen),
                gpu_trace_step(b[2], sizeof(b[2]), r->t[DFCCL_GPU_T_SENT], seen),
                gpu_trace_step(b[3], sizeof(b[3]), r->t[DFCCL_GPU_T_LAST_MOVE], seen),
                gpu_trace_step(b[4], sizeof(b[4]), r->t[DFCCL_GPU_T_RECEIVED], seen),
                gpu_trace_step(b[5], sizeof(b[5]), r->t[DFCCL_GPU_T_FINISHED], seen),
                (double)r->move_max_ns / 1e3,
                r->nparts > 0 ? (double)r->move_sum_ns / 1e3 / r->nparts : 0.0, r->nparts,
                gpu_trace_algo(r->algo_run), (unsigned long long)r->posted_ns,
                (unsigned long long)seen, r->cyc[DFCCL_GPU_C_POLL], r->cyc[DFCCL_GPU_C_ISSUE],
                r->cyc[DFCCL_GPU_C_COPY], r->cyc[DFCCL_GPU_C_ADMIT], r->cyc[DFCCL_GPU_C_START],
                r->cyc[DFCCL_GPU_C_SEND], r->cyc[DFCCL_GPU_C_RECEIVE], r->cyc[DFCCL_GPU_C_FIRST],
                r->cyc[DFCCL_GPU_C_LINES],
                r->cyc[DFCCL_GPU_C_POLLS], r->cyc[DFCCL_GPU_C_RETRY],
                r->cyc[DFCCL_GPU_C_ATTEMPTS], r->cyc[DFCCL_GPU_C_COMPLETE], r->cyc[DFCCL_GPU_C_TAKE],
                r->cyc[DFCCL_GPU_C_LOAD], r->cyc[DFCCL_GPU_C_FILL], r->cyc[DFCCL_GPU_C_STORE],
                r->cyc[DFCCL_GPU_C_TOTAL]);
    }
    fflush(stderr);
    g->drain.trace_n = 0;
}

/* Before a completion is recorded (drain.lock held, sq.lock not):
 * a full buffer is printed now, so that no record is lost and posting is
 * not held up. */
void gpu_trace_make_room(dfccl_gpu_t *g)
{
    if (g->drain.trace_recs != NULL && g->drain.trace_n == GPU_TRACE_RECORDS) gpu_trace_flush(g);
}

/* A completion entry drained (drain.lock held). */
void gpu_trace_record(dfccl_gpu_t *g, const gpu_job_t *job, const dfccl_gpu_cqe_t *e)
{
    struct gpu_trace_rec *r;

    if (g->drain.trace_recs == NULL || g->drain.trace_n == GPU_TRACE_RECORDS) return;
    r = &g->drain.trace_recs[g->drain.trace_n++];
    r->posted_ns = job->posted_ns;
    r->published_ns = job->published_ns;
    r->drained_ns = dfccl_now_ns();
    for (int k = 0; k < DFCCL_GPU_T_COUNT; k++) r->t[k] = e->t[k];
    r->comm_key = job->coll->comm->key;
    r->seq = job->coll->seq;
    r->bytes = job->coll->total_count * job->desc.esize;
    r->rank = job->coll->comm->rank;
    r->size = job->coll->comm->size;
    r->type = job->coll->type;
    r->algo = job->desc.algo;
    r->algo_run = (int)e->algo_run;
    r->nparts = (int)e->nparts;
    r->move_max_ns = e->move_max_ns;
    r->move_sum_ns = e->move_sum_ns;
    for (int k = 0; k < DFCCL_GPU_C_COUNT; k++) r->cyc[k] = e->cyc[k];
}

void gpu_trace_stop(dfccl_gpu_t *g)
{
    if (g->drain.trace_recs == NULL) return;
    gpu_trace_flush(g);
    free(g->drain.trace_recs);
    g->drain.trace_recs = NULL;
}
