/*
 * dfccl_topo.c - the topology of the running job as the planner's topology
 * file (docs/planner.md, "The job's topology"): run with mpirun over the
 * job's ranks, it names each rank's host, measures one ping-pong within each
 * host and one between each host and host 0, and rank 0 writes the file.
 * With --cache FILE a file that names the same hosts and ranks per host is
 * reused instead of measuring again.
 *
 * Every wait is bounded: a rank that does not answer ends the job with a
 * message instead of hanging it.
 */
#include <errno.h>
#include <getopt.h>
#include <hwloc.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/topo_file.h"
#include "tools/topo_job.h"
#include "tools/topo_probe.h"

typedef struct {
    const char *out, *cache;
    int quick, hosts_by, help;
} options_t;

/*
 * MPI_Init and MPI_Finalize wait for every rank without bound (a rank
 * stopped or lost before the job set up or after it measured): an alarm
 * ends this rank then, and mpirun the job.
 */
enum { WATCH_S = 60 };
static char watch_note[200];
static size_t watch_len;

static void watch_overdue(int sig)
{
    (void)sig;
    ssize_t n = write(STDERR_FILENO, watch_note, watch_len);
    (void)n;
    _exit(1);
}

static void watch(const char *what)
{
    if (what == NULL) {
        alarm(0);
        return;
    }
    snprintf(watch_note, sizeof(watch_note),
             "dfccl_topo: pid %ld: %s did not return within %d s (a rank lost or stopped?): "
             "giving up\n", (long)getpid(), what, WATCH_S);
    watch_len = strlen(watch_note);
    signal(SIGALRM, watch_overdue);
    alarm(WATCH_S);
}

/* Every rank is still there (a bounded barrier), then MPI_Finalize under
 * the alarm. */
static int finish(int status)
{
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    topo_wait(&req, NULL, WATCH_S, 1, "the last barrier");
    watch("MPI_Finalize");
    MPI_Finalize();
    watch(NULL);
    return status;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun ... dfccl_topo --out FILE [--cache FILE] [--quick] [--hosts-by K]\n"
            "Writes the running job's topology for dfccl_plan: the ranks as GPUs on their\n"
            "hosts, links within a host and to one switch per host, the hosts' switches\n"
            "joined by one network switch; bandwidth and latency from short ping-pongs.\n"
            "  --out FILE      the topology file (rank 0 writes it)\n"
            "  --cache FILE    reuse FILE where it names the same hosts and ranks per host;\n"
            "                  otherwise measure and write it too\n"
            "  --quick         fewer round trips, a shorter time budget per measurement\n"
            "  --hosts-by K    count every K ranks (in rank order) as a host of their own,\n"
            "                  to try the multi-host layout on one machine\n"
            "  --help          this text\n");
}

/* Every rank parses the same arguments and so fails alike: no rank waits
 * for another that has given up. */
static int parse(int argc, char **argv, options_t *o, char *why, size_t whylen)
{
    static const struct option longs[] = {
        {"out", required_argument, NULL, 'o'},   {"cache", required_argument, NULL, 'c'},
        {"quick", no_argument, NULL, 'q'},       {"hosts-by", required_argument, NULL, 'k'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0}};
    int c;

    memset(o, 0, sizeof(*o));
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":", longs, NULL)) != -1) {
        char *end;
        long k;
        switch (c) {
        case 'o':
        case 'c':
            /* "--cache --out F" would otherwise take "--out" for the cache's name */
            if (optarg[0] == '-' || optarg[0] == '\0') {
                snprintf(why, whylen, "%s needs a file name, not '%s'",
                         c == 'o' ? "--out" : "--cache", optarg);
                return -1;
            }
            if (c == 'o') o->out = optarg;
            else o->cache = optarg;
            break;
        case 'q': o->quick = 1; break;
        case 'h': o->help = 1; break;
        case 'k':
            errno = 0;
            k = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end != '\0' || k < 1 || k > 1 << 20) {
                snprintf(why, whylen, "--hosts-by wants a whole number of ranks from 1, not '%s'",
                         optarg);
                return -1;
            }
            o->hosts_by = (int)k;
            break;
        case ':':
            snprintf(why, whylen, "%s needs a value", argv[optind - 1]);
            return -1;
        default:
            snprintf(why, whylen, "unknown option '%s'", argv[optind - 1]);
            return -1;
        }
    }
    if (o->help) return 0;
    if (optind < argc) {
        snprintf(why, whylen, "unexpected argument '%s'", argv[optind]);
        return -1;
    }
    if (o->out == NULL) {
        snprintf(why, whylen, "--out FILE is required");
        return -1;
    }
    return 0;
}

/* The planner holds host names of up to 63 bytes: a longer one keeps its
 * start and a hash of the whole, so that hosts stay apart. */
static void host_name(int rank, int hosts_by, char *name)
{
    char full[MPI_MAX_PROCESSOR_NAME + 32];
    int len;

    MPI_Get_processor_name(full, &len);
    full[len] = '\0';
    if (hosts_by > 0)
        snprintf(full + strlen(full), sizeof(full) - strlen(full), "#%d", rank / hosts_by);
    if (strlen(full) < TOPO_NAME_MAX) {
        strcpy(name, full);
        return;
    }
    unsigned long hash = 2166136261u;
    for (const char *p = full; *p; p++) hash = (hash ^ (unsigned char)*p) * 16777619u;
    snprintf(name, TOPO_NAME_MAX, "%.*s~%08lx", TOPO_NAME_MAX - 10, full, hash & 0xffffffffu);
}

/* The NUMA node of this rank's CPU binding where it lies in one, else of
 * the CPU it last ran on; -1 where hwloc cannot tell. */
static int numa_node(void)
{
    hwloc_topology_t topo;
    hwloc_bitmap_t cpus;
    hwloc_obj_t node = NULL;
    int found = -1;

    if (hwloc_topology_init(&topo) != 0) return -1;
    if (hwloc_topology_load(topo) == 0 && (cpus = hwloc_bitmap_alloc()) != NULL) {
        int nodes = 0, where = -1;
        if (hwloc_get_cpubind(topo, cpus, HWLOC_CPUBIND_PROCESS) == 0)
            while ((node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, node)) != NULL)
                if (hwloc_bitmap_intersects(node->cpuset, cpus)) {
                    nodes++;
                    where = (int)node->os_index;
                }
        if (nodes == 1) found = where;
        else if (hwloc_get_last_cpu_location(topo, cpus, HWLOC_CPUBIND_THREAD) == 0)
            while ((node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, node)) != NULL)
                if (hwloc_bitmap_intersects(node->cpuset, cpus)) {
                    found = (int)node->os_index;
                    break;
                }
        hwloc_bitmap_free(cpus);
    }
    hwloc_topology_destroy(topo);
    return found;
}

static void *alloc_or_abort(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (p == NULL) {
        fprintf(stderr, "dfccl_topo: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

/* Hosts by name, numbered in the order of their first rank. */
static void group_hosts(topo_job_t *job, char (*names)[TOPO_NAME_MAX])
{
    job->host_of = alloc_or_abort((size_t)job->nranks, sizeof(int));
    job->host_name = alloc_or_abort((size_t)job->nranks, TOPO_NAME_MAX);
    job->nhosts = 0;
    for (int r = 0; r < job->nranks; r++) {
        int h = 0;
        while (h < job->nhosts && strcmp(job->host_name[h], names[r]) != 0) h++;
        if (h == job->nhosts) strcpy(job->host_name[job->nhosts++], names[r]);
        job->host_of[r] = h;
    }
}

/* The n-th rank (0, 1) of host h, -1 where it has fewer. */
static int rank_of_host(const topo_job_t *job, int h, int nth)
{
    for (int r = 0; r < job->nranks; r++)
        if (job->host_of[r] == h && nth-- == 0) return r;
    return -1;
}

/* Rank 0's verdict to everyone: 0 carry on, 1 done, 2 failed. */
static int share(int verdict, const topo_probe_opts_t *po, const char *what)
{
    MPI_Request req;
    MPI_Ibcast(&verdict, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
    topo_wait(&req, NULL, po->wait_s * 4, 1, what);
    return verdict;
}

/* A figure measured on rank from, to rank 0. */
static void to_rank0(topo_figure_t *dst, const topo_figure_t *src, int from, int rank,
                     const topo_probe_opts_t *po)
{
    MPI_Request req;

    if (from == 0) {
        if (rank == 0) *dst = *src;
        return;
    }
    if (rank == from) MPI_Isend(src, sizeof(*src), MPI_BYTE, 0, 1, MPI_COMM_WORLD, &req);
    else if (rank == 0) MPI_Irecv(dst, sizeof(*dst), MPI_BYTE, from, 1, MPI_COMM_WORLD, &req);
    else return;
    topo_wait(&req, NULL, po->wait_s, 0, "gathering the figures");
}

/* One measurement at a time, in the same order on every rank: within each
 * host (its first two ranks), then each host's first rank with host 0's. */
static void measure_all(topo_job_t *job, const topo_probe_opts_t *po, int rank)
{
    int h = job->nhosts, zero = rank_of_host(job, 0, 0);
    topo_figure_t *mine = alloc_or_abort((size_t)h * 2, sizeof(*mine));

    job->local = alloc_or_abort((size_t)h, sizeof(topo_figure_t));
    job->net = alloc_or_abort((size_t)h, sizeof(topo_figure_t));
    for (int i = 0; i < h; i++) {
        int a = rank_of_host(job, i, 0), b = rank_of_host(job, i, 1);
        job->local[i].a = job->net[i].a = -1;
        if (b >= 0) {
            topo_probe_pair(MPI_COMM_WORLD, a, b, po, &mine[i]);
            to_rank0(&job->local[i], &mine[i], a, rank, po);
        }
    }
    for (int i = 1; i < h; i++) {
        int a = rank_of_host(job, i, 0);
        topo_probe_pair(MPI_COMM_WORLD, a, zero, po, &mine[h + i]);
        to_rank0(&job->net[i], &mine[h + i], a, rank, po);
    }
    free(mine);
}

static void report(const topo_job_t *job, const char *out)
{
    for (int h = 0; h < job->nhosts; h++) {
        const topo_figure_t *m = &job->local[h];
        int n = 0;
        for (int r = 0; r < job->nranks; r++) n += job->host_of[r] == h;
        printf("dfccl_topo: host %d %s: %d rank%s", h, job->host_name[h], n, n == 1 ? "" : "s");
        if (m->a >= 0)
            printf(", ranks %d-%d %.3g us, %.4g GB/s (%.0f B, medians of %d and %d)", m->a, m->b,
                   m->latency_us, m->bandwidth_GBps, m->bytes, m->latency_reps,
                   m->bandwidth_reps);
        printf("\n");
    }
    for (int h = 1; h < job->nhosts; h++) {
        const topo_figure_t *m = &job->net[h];
        printf("dfccl_topo: hosts %d-0, ranks %d-%d: %.3g us, %.4g GB/s (%.0f B, medians of %d "
               "and %d)\n", h, m->a, m->b, m->latency_us, m->bandwidth_GBps, m->bytes,
               m->latency_reps, m->bandwidth_reps);
    }
    printf("dfccl_topo: wrote %s\n", out);
}

int main(int argc, char **argv)
{
    options_t o;
    char why[1024], name[TOPO_NAME_MAX];
    int rank, nranks, verdict;
    topo_job_t job = {0};

    watch("MPI_Init");
    MPI_Init(&argc, &argv);
    watch(NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (parse(argc, argv, &o, why, sizeof(why)) != 0 || o.help) {
        if (!o.help) fprintf(stderr, "dfccl_topo: rank %d: %s\n", rank, why);
        if (rank == 0) usage(o.help ? stdout : stderr);
        return finish(o.help ? 0 : 2);
    }
    if (nranks < 2) {
        fprintf(stderr, "dfccl_topo: rank %d: a topology needs 2 ranks or more, the job has %d\n",
                rank, nranks);
        return finish(2);
    }
    topo_probe_opts_t po = {.latency_reps = o.quick ? 20 : 100,
                            .bandwidth_reps = o.quick ? 3 : 10,
                            .max_bytes = 4u << 20,
                            .budget_s = o.quick ? 0.5 : 2,
                            .wait_s = 30};

    char (*names)[TOPO_NAME_MAX] = alloc_or_abort((size_t)nranks, TOPO_NAME_MAX);
    MPI_Request req;
    host_name(rank, o.hosts_by, name);
    MPI_Iallgather(name, TOPO_NAME_MAX, MPI_CHAR, names, TOPO_NAME_MAX, MPI_CHAR, MPI_COMM_WORLD,
                   &req);
    topo_wait(&req, NULL, po.wait_s * 2, 1, "exchanging host names");
    job.nranks = nranks;
    group_hosts(&job, names);
    free(names);

    /* The cache: rank 0 decides for all. */
    verdict = 0;
    if (rank == 0 && (topo_file_writable(o.out, why, sizeof(why)) != 0 ||
                      (o.cache && topo_file_writable(o.cache, why, sizeof(why)) != 0))) {
        fprintf(stderr, "dfccl_topo: %s\n", why);
        verdict = 2;
    } else if (o.cache && rank == 0) {
        if (topo_file_matches(o.cache, &job, why, sizeof(why))) {
            verdict = 1;
            if (topo_file_copy(o.cache, o.out, why, sizeof(why)) != 0) {
                fprintf(stderr, "dfccl_topo: %s\n", why);
                verdict = 2;
            } else {
                printf("dfccl_topo: reused %s: it names the same hosts and ranks per host; "
                       "nothing measured\n", o.cache);
                if (strcmp(o.cache, o.out) != 0) printf("dfccl_topo: wrote %s\n", o.out);
            }
        } else if (why[0]) {
            printf("dfccl_topo: %s does not fit this job (%s): measuring\n", o.cache, why);
        }
    }
    verdict = share(verdict, &po, "deciding on the cache");
    if (verdict == 0) {
        job.numa = alloc_or_abort((size_t)nranks, sizeof(int));
        int mine = numa_node();
        MPI_Igather(&mine, 1, MPI_INT, job.numa, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
        topo_wait(&req, NULL, po.wait_s * 2, 1, "gathering NUMA nodes");
        measure_all(&job, &po, rank);
        if (rank == 0) {
            verdict = 1;
            if (topo_file_write(o.out, &job, &po, why, sizeof(why)) != 0 ||
                (o.cache && strcmp(o.cache, o.out) != 0 &&
                 topo_file_write(o.cache, &job, &po, why, sizeof(why)) != 0)) {
                fprintf(stderr, "dfccl_topo: %s\n", why);
                verdict = 2;
            } else {
                report(&job, o.out);
                if (o.cache && strcmp(o.cache, o.out) != 0)
                    printf("dfccl_topo: wrote %s\n", o.cache);
            }
        }
        verdict = share(verdict, &po, "writing the file");
    }
    if (verdict == 2 && rank != 0)
        fprintf(stderr, "dfccl_topo: rank %d: rank 0 could not write the topology\n", rank);
    fflush(stdout);
    free(job.host_name);
    free(job.host_of);
    free(job.numa);
    free(job.local);
    free(job.net);
    return finish(verdict == 2 ? 1 : 0);
}
