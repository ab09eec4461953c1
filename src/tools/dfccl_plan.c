/*
 * dfccl_plan.c - plans a collective on a topology (docs/planner.md) and
 * writes the schedule, optionally the engine's plan file; or, with --check,
 * replays a schedule file on the model. Either way it prints the modelled
 * finish next to the ring's on the same topology, the yardstick a planned
 * schedule has to beat. Exit status 0 on success, 1 on any failure (an
 * invalid schedule included), 2 for bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "engine/plan_file.h"
#include "planner/planner.h"

typedef struct {
    const char *topology, *schedule, *check, *plan_dir;
    pl_collective_t collective;
    uint64_t bytes;
    uint64_t serve_min, serve_max;   /* calls the plan file serves */
    int serve_set;
    int chunks;
    pl_epoch_rule_t epoch;
    pl_options_t opt;
} args_t;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: dfccl_plan --topology FILE --collective allgather|reducescatter|allreduce\n"
            "                  --bytes SIZE [--chunks K] [--epoch fast|slow]\n"
            "                  [--method auto|milp|lp|partition|greedy|ring|hier]\n"
            "                  [--time-limit S]\n"
            "                  [--gap G] [--window EPOCHS] [--quiet]\n"
            "                  --schedule OUT.json [--plan-dir DIR [--serve MIN:MAX]]\n"
            "       dfccl_plan --check SCHEDULE.json --topology FILE\n"
            "Plans the collective as a flow over time on the topology and writes the\n"
            "schedule (and with --plan-dir the engine's plan file); --check replays a\n"
            "schedule on the model. SIZE is the whole buffer (allgather's output,\n"
            "reduce-scatter's input), plain or with K M G (10^3..) or Ki Mi Gi (2^10..).\n"
            "The plan file serves calls whose whole buffer is MIN to MAX bytes (either\n"
            "may be left out: no bound); by default the power-of-two class of SIZE,\n"
            "2^k <= SIZE < 2^(k+1).\n");
}

static int bad(const char *fmt, const char *what)
{
    fprintf(stderr, "dfccl_plan: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, " (--help for usage)\n");
    return 2;
}

/* MIN:MAX, each a size as --bytes takes it or empty (no bound). */
static int parse_serve(const char *s, uint64_t *lo, uint64_t *hi)
{
    const char *colon = strchr(s, ':');
    char min[64];

    if (colon == NULL || (size_t)(colon - s) >= sizeof(min)) return -1;
    memcpy(min, s, (size_t)(colon - s));
    min[colon - s] = '\0';
    *lo = 0;
    *hi = UINT64_MAX;
    if (min[0] != '\0' && pl_parse_bytes(min, lo) != 0) return -1;
    if (colon[1] != '\0' && pl_parse_bytes(colon + 1, hi) != 0) return -1;
    return *lo <= *hi ? 0 : -1;
}

static int number(const char *s, double lo, double hi, double *out)
{
    char *end;

    errno = 0;
    *out = strtod(s, &end);
    return errno == 0 && end != s && *end == '\0' && *out >= lo && *out <= hi ? 0 : -1;
}

static int parse(int argc, char **argv, args_t *a)
{
    static const struct option longopts[] = {
        { "topology", required_argument, NULL, 't' },
        { "collective", required_argument, NULL, 'c' },
        { "bytes", required_argument, NULL, 'b' },    { "chunks", required_argument, NULL, 'k' },
        { "epoch", required_argument, NULL, 'e' },    { "method", required_argument, NULL, 'm' },
        { "time-limit", required_argument, NULL, 'l' }, { "gap", required_argument, NULL, 'g' },
        { "window", required_argument, NULL, 'w' },   { "schedule", required_argument, NULL, 's' },
        { "plan-dir", required_argument, NULL, 'p' }, { "check", required_argument, NULL, 'x' },
        { "serve", required_argument, NULL, 'v' },
        { "quiet", no_argument, NULL, 'q' },          { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    int ch, have_coll = 0;
    double v;

    memset(a, 0, sizeof(*a));
    a->chunks = 1;
    a->epoch = PL_EPOCH_FAST;
    pl_options_default(&a->opt);
    a->opt.verbose = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (ch) {
        case 't': a->topology = optarg; break;
        case 's': a->schedule = optarg; break;
        case 'p': a->plan_dir = optarg; break;
        case 'x': a->check = optarg; break;
        case 'q': a->opt.verbose = 0; break;
        case 'c':
            if (pl_collective_parse(optarg, &a->collective) != 0)
                return bad("--collective %s: allgather, reducescatter or allreduce", optarg);
            have_coll = 1;
            break;
        case 'b':
            if (pl_parse_bytes(optarg, &a->bytes) != 0)
                return bad("--bytes %s: a whole number of bytes, e.g. 1G, 64Mi or 4096", optarg);
            break;
        case 'k':
            if (number(optarg, 1, 65536, &v) != 0 || v != (int)v)
                return bad("--chunks %s: a whole number from 1 to 65536", optarg);
            a->chunks = (int)v;
            break;
        case 'e':
            if (strcmp(optarg, "fast") == 0) a->epoch = PL_EPOCH_FAST;
            else if (strcmp(optarg, "slow") == 0) a->epoch = PL_EPOCH_SLOW;
            else return bad("--epoch %s: fast or slow", optarg);
            break;
        case 'm':
            if (pl_method_parse(optarg, &a->opt.method) != 0)
                return bad("--method %s: auto, milp, lp, partition, greedy, ring or hier", optarg);
            break;
        case 'l':
            if (number(optarg, 0.01, 1e7, &a->opt.time_limit_s) != 0)
                return bad("--time-limit %s: seconds, above 0", optarg);
            break;
        case 'g':
            if (number(optarg, 0, 1, &a->opt.gap) != 0)
                return bad("--gap %s: a fraction from 0 to 1", optarg);
            break;
        case 'w':
            if (number(optarg, 1, 1e6, &v) != 0 || v != (int)v)
                return bad("--window %s: a whole number of epochs", optarg);
            a->opt.window = (int)v;
            break;
        case 'v':
            if (parse_serve(optarg, &a->serve_min, &a->serve_max) != 0)
                return bad("--serve %s: MIN:MAX in bytes (as SIZE), either may be empty", optarg);
            a->serve_set = 1;
            break;
        case 'h': usage(stdout); exit(0);
        default: return bad("%s: unknown option or missing value", argv[optind - 1]);
        }
    }
    if (optind < argc) return bad("%s: unexpected argument", argv[optind]);
    if (a->topology == NULL) return bad("%s", "--topology is required");
    if (a->check != NULL) return 0;
    if (!have_coll) return bad("%s", "--collective is required");
    if (a->bytes == 0) return bad("%s", "--bytes is required");
    if (a->schedule == NULL) return bad("%s", "--schedule is required");
    return 0;
}

static void report(const pl_schedule_t *s, const pl_topology_t *t)
{
    double epoch_us = s->epoch_s * 1e6, finish = s->epochs * epoch_us;

    printf("collective:       %s\n", pl_collective_name(s->collective));
    printf("output bytes:     %llu (%d GPUs, %d chunk%s each of %.0f bytes)\n",
           (unsigned long long)s->output_bytes, t->ngpus, s->chunks_per_gpu,
           s->chunks_per_gpu == 1 ? "" : "s", s->chunk_bytes);
    printf("epochs:           %d of %.6g us\n", s->epochs, epoch_us);
    printf("modelled finish:  %.3f us\n", finish);
    printf("algbw:            %.3f GB/s\n",
           finish > 0 ? (double)s->output_bytes / finish / 1e3 : 0.0);
    printf("solver time:      %.3f s (method %s)\n", s->solver_s, s->method[0] ? s->method : "?");
    /* what the solver was given to start from, and kept where it found nothing better */
    if (s->start_epochs > 0)
        printf("warm start:       greedy's %d epochs (%s)\n", s->start_epochs,
               s->epochs < s->start_epochs ? "improved on" : "kept");
    /* the model's optimism, said where it has any (docs/planner.md) */
    pl_instance_t in;
    char why[256];
    if (pl_instance_init(&in, t, s->chunks_per_gpu, s->chunk_bytes, s->epoch_s, why,
                         sizeof(why)) == 0) {
        double left = pl_latency_left_out(&in);
        if (left > 0)
            printf("latency left out: up to %.3g us a hop (%.3g epochs or less each, as "
                   "TE-CCL's model)\n", left * 1e6, PL_LATENCY_THRESHOLD);
        pl_instance_fini(&in);
    }
}

/* The ring on the same topology, chunks and epochs: its modelled finish. */
/* The engine's built-in algorithm m on the same model: "ring finish:" or
 * "hier finish:". The hierarchical one only where the topology's hosts
 * allow it (silently left out otherwise). */
static int report_builtin(const pl_topology_t *t, const pl_schedule_t *s, pl_method_t m)
{
    pl_options_t o;
    pl_schedule_t b;
    char why[512];

    pl_options_default(&o);
    o.method = m;
    if (pl_plan(t, s->collective, s->output_bytes, s->chunks_per_gpu, s->epoch_s, &o, &b, why,
                sizeof(why)) != 0) {
        if (m == PL_HIER) return 0;
        fprintf(stderr, "dfccl_plan: %s: %s\n", pl_method_name(m), why);
        return 1;
    }
    double finish = b.epochs * b.epoch_s * 1e6;
    printf("%s finish:      %.3f us (%d epochs, algbw %.3f GB/s) on the same topology\n",
           pl_method_name(m), finish, b.epochs,
           finish > 0 ? (double)b.output_bytes / finish / 1e3 : 0.0);
    pl_schedule_fini(&b);
    return 0;
}

static int report_ring(const pl_topology_t *t, const pl_schedule_t *s)
{
    return report_builtin(t, s, PL_RING) | report_builtin(t, s, PL_HIER);
}

static int check(const args_t *a, const pl_topology_t *t)
{
    pl_schedule_t s;
    pl_instance_t in;
    char why[1024];
    int epochs, rc = 1;

    if (pl_schedule_read(a->check, t, &s, why, sizeof(why)) != 0) {
        printf("%s: invalid: %s\n", a->check, why);
        return 1;
    }
    if (pl_instance_init(&in, t, s.chunks_per_gpu, s.chunk_bytes, s.epoch_s, why,
                         sizeof(why)) != 0) {
        printf("%s: invalid: %s\n", a->check, why);
    } else {
        if (pl_check(&in, &s, &epochs, why, sizeof(why)) != 0) {
            printf("%s: invalid: %s\n", a->check, why);
        } else if (s.epochs >= 0 && s.epochs != epochs) {
            printf("%s: invalid: it says it ends after %d epochs, its flows end after %d\n",
                   a->check, s.epochs, epochs);
        } else {
            printf("%s: valid\n", a->check);
            s.epochs = epochs;
            report(&s, t);
            rc = report_ring(t, &s);
        }
        pl_instance_fini(&in);
    }
    pl_schedule_fini(&s);
    return rc;
}

static int plan(const args_t *a, const pl_topology_t *t)
{
    pl_schedule_t s;
    char why[1024], path[4096];
    double epoch_s = pl_epoch_length(t, pl_chunk_bytes(t, a->bytes, a->chunks), a->epoch);
    int rc = 0;

    if (pl_plan(t, a->collective, a->bytes, a->chunks, epoch_s, &a->opt, &s, why,
                sizeof(why)) != 0) {
        fprintf(stderr, "dfccl_plan: %s\n", why);
        return 1;
    }
    if (pl_schedule_write(&s, t, a->schedule, why, sizeof(why)) != 0) {
        fprintf(stderr, "dfccl_plan: %s\n", why);
        rc = 1;
    }
    report(&s, t);
    if (report_ring(t, &s) != 0) rc = 1;
    if (rc == 0) printf("schedule:         %s\n", a->schedule);
    if (rc == 0 && a->plan_dir != NULL) {
        pl_instance_t in = { 0 };
        uint64_t lo = a->serve_min, hi = a->serve_max;
        if (!a->serve_set) {   /* the power-of-two class of the planned size */
            for (lo = 1; lo <= a->bytes / 2; lo *= 2) {}
            hi = lo * 2 - 1;
        }
        snprintf(path, sizeof(path), "%s/%s_%d_%llu.json", a->plan_dir,
                 pl_collective_name(a->collective), t->ngpus, (unsigned long long)a->bytes);
        if (mkdir(a->plan_dir, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "dfccl_plan: %s: %s\n", a->plan_dir, strerror(errno));
            rc = 1;
        } else if (pl_instance_init(&in, t, s.chunks_per_gpu, s.chunk_bytes, s.epoch_s, why,
                                    sizeof(why)) != 0 ||
                   pl_plan_file_write(&in, &s, path, lo, hi, why, sizeof(why)) != 0) {
            fprintf(stderr, "dfccl_plan: plan file: %s\n", why);
            rc = 1;
        } else {
            /* the engine's loader judges it, as a job would */
            dfccl_plan_file_t *pf;
            if (dfccl_plan_file_load(path, &pf, why, sizeof(why)) != DFCCL_OK) {
                fprintf(stderr, "dfccl_plan: the plan file is not valid, removed: %s\n", why);
                remove(path);
                rc = 1;
            } else {
                printf("plan file:        %s (%u steps at most a rank)\n", path,
                       dfccl_plan_file_max_steps(pf));
                dfccl_plan_file_free(pf);
            }
        }
        pl_instance_fini(&in);
    }
    pl_schedule_fini(&s);
    return rc;
}

int main(int argc, char **argv)
{
    args_t a;
    pl_topology_t *t;
    char why[1024];
    int rc = parse(argc, argv, &a);

    if (rc != 0) return rc;
    if (pl_topology_load(a.topology, &t, why, sizeof(why)) != 0) {
        fprintf(stderr, "dfccl_plan: %s: %s\n", a.topology, why);
        return 1;
    }
    rc = a.check != NULL ? check(&a, t) : plan(&a, t);
    pl_topology_free(t);
    return rc;
}
