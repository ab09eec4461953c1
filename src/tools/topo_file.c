/*
 * topo_file.c - the job's topology in the planner's format (docs/planner.md,
 * "The job's topology"): ranks as GPUs, a link each way between the ranks
 * of a host, one switch per host for its network interface and one for the
 * network between them; and the check that a cached file fits the job.
 */
#include "tools/topo_file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>

static int fail(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return -1;
}

static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

/* Figures with 4 significant digits: more would claim a precision that
 * one short probe does not have. */
static void put_link(FILE *f, int src, int dst, double gbps, double us, int *first)
{
    fprintf(f, "%s\n  {\"src\": %d, \"dst\": %d, \"bandwidth_GBps\": %.4g, \"latency_us\": %.4g}",
            *first ? "" : ",", src, dst, gbps, us);
    *first = 0;
}

/*
 * A host's link to the network, from the pairs measured with host 0: each
 * pair's figure is the slower of its two hosts' links. Host h >= 1 takes
 * its pair's bandwidth, host 0 the best of its pairs. Latency is split
 * between the two hosts' links to the network switch: host 0 takes the
 * least of its pairs', host h what makes its path to host 0 add up to its
 * pair's (2 m_h - least), so every measured pair is modelled as measured.
 */
typedef struct {
    double gbps, us;
} host_link_t;

static void host_links(const topo_job_t *job, host_link_t *l)
{
    double best = 0, least = 0;

    for (int h = 1; h < job->nhosts; h++) {
        if (h == 1 || job->net[h].bandwidth_GBps > best) best = job->net[h].bandwidth_GBps;
        if (h == 1 || job->net[h].latency_us < least) least = job->net[h].latency_us;
    }
    l[0].gbps = best;
    l[0].us = least;
    for (int h = 1; h < job->nhosts; h++) {
        l[h].gbps = job->net[h].bandwidth_GBps;
        l[h].us = 2 * job->net[h].latency_us - least;
    }
}

static void put_comment(FILE *f, const topo_job_t *job, const topo_probe_opts_t *o)
{
    int n = job->nranks, h = job->nhosts;

    fprintf(f, " \"comment\": \"The topology of a job of %d ranks on %d host%s, measured by "
            "dfccl_topo. GPUs are the ranks (id = rank in MPI_COMM_WORLD, host = "
            "MPI_Get_processor_name; numa: the NUMA node of the rank's CPU binding, or where "
            "it ran when unbound, from hwloc). Each figure is one ping-pong between two "
            "ranks: latency half the median round trip of %d B, bandwidth up to %zu B one "
            "way (smaller where a link is too slow for the time budget) over half the median "
            "round trip less that latency; at most %d and %d round trips, %.2g s a "
            "measurement (\\\"measurements\\\" lists each). Within a host: a link each way "
            "between every pair of its ranks, all with the figure of its first two ranks.",
            n, h, h == 1 ? "" : "s", TOPO_SMALL_BYTES, o->max_bytes, o->latency_reps,
            o->bandwidth_reps, o->budget_s);
    if (h > 1)
        fprintf(f, " Across hosts: switch %d+h is host h's network interface (hosts numbered "
                "in the order of their first rank), linked both ways to each of the host's "
                "ranks with latency 0 and to switch %d, the network joining the hosts, with "
                "half the host's latency. Host 0's first rank ping-pongs with host 1's, every "
                "other host's first rank with host 0's; a host's link has its pair's "
                "bandwidth (host 0: the best of its pairs) and the latency that makes the path "
                "between the pair's ranks add up to the measured one. The ranks of a host share "
                "its link only in the model: contention was not measured.", n, n + h);
    fprintf(f, "\",\n");
}

static void put_nodes(FILE *f, const topo_job_t *job)
{
    int n = job->nranks;

    fprintf(f, " \"nodes\": [");
    for (int r = 0; r < n; r++) {
        fprintf(f, "%s\n  {\"id\": %d, \"kind\": \"gpu\", \"host\": ", r ? "," : "", r);
        put_string(f, job->host_name[job->host_of[r]]);
        if (job->numa[r] >= 0) fprintf(f, ", \"numa\": %d", job->numa[r]);
        fputc('}', f);
    }
    if (job->nhosts > 1) {
        /* the engine's links between hosts are point-to-point streams: the
         * network neither copies nor sums on the way (docs/planner.md) */
        for (int h = 0; h < job->nhosts; h++) {
            fprintf(f, ",\n  {\"id\": %d, \"kind\": \"switch\", \"copies\": false, "
                       "\"interface_of\": ", n + h);
            put_string(f, job->host_name[h]);
            fputc('}', f);
        }
        fprintf(f, ",\n  {\"id\": %d, \"kind\": \"switch\", \"copies\": false, \"network\": true}",
                n + job->nhosts);
    }
    fprintf(f, "\n ],\n");
}

static void put_links(FILE *f, const topo_job_t *job, const host_link_t *hl)
{
    int n = job->nranks, first = 1;

    fprintf(f, " \"links\": [");
    for (int r = 0; r < n; r++) {
        const topo_figure_t *loc = &job->local[job->host_of[r]];
        for (int q = 0; q < n; q++)
            if (q != r && job->host_of[q] == job->host_of[r])
                put_link(f, r, q, loc->bandwidth_GBps, loc->latency_us, &first);
    }
    if (job->nhosts > 1) {
        for (int r = 0; r < n; r++) {
            const host_link_t *l = &hl[job->host_of[r]];
            put_link(f, r, n + job->host_of[r], l->gbps, 0, &first);
            put_link(f, n + job->host_of[r], r, l->gbps, 0, &first);
        }
        for (int h = 0; h < job->nhosts; h++) {
            put_link(f, n + h, n + job->nhosts, hl[h].gbps, hl[h].us / 2, &first);
            put_link(f, n + job->nhosts, n + h, hl[h].gbps, hl[h].us / 2, &first);
        }
    }
    fprintf(f, "\n ],\n");
}

static void put_figure(FILE *f, const topo_figure_t *m)
{
    fprintf(f, ", \"ranks\": [%d, %d], \"latency_us\": %.4g, \"bandwidth_GBps\": %.4g, "
            "\"large_bytes\": %.0f, \"latency_round_trips\": %d, \"bandwidth_round_trips\": %d}",
            m->a, m->b, m->latency_us, m->bandwidth_GBps, m->bytes, m->latency_reps,
            m->bandwidth_reps);
}

static void put_measurements(FILE *f, const topo_job_t *job)
{
    const char *sep = "";

    fprintf(f, " \"measurements\": [");
    for (int h = 0; h < job->nhosts; h++) {
        if (job->local[h].a < 0) continue;
        fprintf(f, "%s\n  {\"within\": ", sep);
        put_string(f, job->host_name[h]);
        put_figure(f, &job->local[h]);
        sep = ",";
    }
    for (int h = 1; h < job->nhosts; h++) {
        fprintf(f, "%s\n  {\"between\": [", sep);
        put_string(f, job->host_name[h]);
        fprintf(f, ", ");
        put_string(f, job->host_name[0]);
        fputc(']', f);
        put_figure(f, &job->net[h]);
        sep = ",";
    }
    fprintf(f, "\n ]\n");
}

static int replace(const char *tmp, const char *path, FILE *f, char *why, size_t whylen)
{
    int bad = ferror(f);

    if (fclose(f) != 0 || bad) {
        unlink(tmp);
        return fail(why, whylen, "cannot write %s: %s", tmp, strerror(errno ? errno : EIO));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return fail(why, whylen, "cannot rename %s to %s: %s", tmp, path, strerror(e));
    }
    return 0;
}

static FILE *open_temporary(const char *path, char *tmp, size_t tmplen, char *why, size_t whylen)
{
    FILE *f;

    snprintf(tmp, tmplen, "%s.tmp.%ld", path, (long)getpid());
    f = fopen(tmp, "w");
    if (f == NULL) fail(why, whylen, "cannot write %s: %s", path, strerror(errno));
    return f;
}

int topo_file_writable(const char *path, char *why, size_t whylen)
{
    char tmp[4096];
    FILE *f = open_temporary(path, tmp, sizeof(tmp), why, whylen);

    if (f == NULL) return -1;
    fclose(f);
    unlink(tmp);
    return 0;
}

int topo_file_write(const char *path, const topo_job_t *job, const topo_probe_opts_t *o,
                    char *why, size_t whylen)
{
    char tmp[4096];
    host_link_t *hl = calloc((size_t)job->nhosts, sizeof(*hl));
    FILE *f;

    if (hl == NULL) return fail(why, whylen, "out of memory");
    if ((f = open_temporary(path, tmp, sizeof(tmp), why, whylen)) == NULL) {
        free(hl);
        return -1;
    }
    if (job->nhosts > 1) host_links(job, hl);
    errno = 0;
    fprintf(f, "{\n");
    put_comment(f, job, o);
    put_nodes(f, job);
    put_links(f, job, hl);
    put_measurements(f, job);
    fprintf(f, "}\n");
    free(hl);
    return replace(tmp, path, f, why, whylen);
}

int topo_file_matches(const char *path, const topo_job_t *job, char *why, size_t whylen)
{
    json_object *root, *nodes;
    int gpus = 0, fits = 0;
    char *seen;

    why[0] = '\0';
    if (access(path, F_OK) != 0 && errno == ENOENT) return 0;
    if ((root = json_object_from_file(path)) == NULL) {
        fail(why, whylen, "cannot read it as JSON");
        return 0;
    }
    if (!json_object_object_get_ex(root, "nodes", &nodes) ||
        !json_object_is_type(nodes, json_type_array) ||
        (seen = calloc((size_t)job->nranks, 1)) == NULL) {
        json_object_put(root);
        fail(why, whylen, "no \"nodes\" list");
        return 0;
    }
    for (size_t i = 0; i < json_object_array_length(nodes); i++) {
        json_object *o = json_object_array_get_idx(nodes, i), *v;
        if (!json_object_object_get_ex(o, "kind", &v) ||
            strcmp(json_object_get_string(v), "gpu") != 0)
            continue;
        gpus++;
        int id = json_object_object_get_ex(o, "id", &v) &&
                 json_object_is_type(v, json_type_int) ? json_object_get_int(v) : -1;
        if (id < 0 || id >= job->nranks || seen[id]) {
            fail(why, whylen, "its GPU ids are not the ranks 0..%d", job->nranks - 1);
            goto out;
        }
        seen[id] = 1;
        const char *here = job->host_name[job->host_of[id]];
        if (!json_object_object_get_ex(o, "host", &v) ||
            strcmp(json_object_get_string(v), here) != 0) {
            fail(why, whylen, "rank %d is on host %s here, on %s in the file", id, here,
                 json_object_object_get_ex(o, "host", &v) ? json_object_get_string(v) : "(none)");
            goto out;
        }
    }
    if (gpus != job->nranks)
        fail(why, whylen, "it holds %d GPUs for %d ranks", gpus, job->nranks);
    else
        fits = 1;
out:
    free(seen);
    json_object_put(root);
    return fits;
}

int topo_file_copy(const char *src, const char *dst, char *why, size_t whylen)
{
    struct stat a, b;
    char tmp[4096], buf[65536];
    size_t n;
    FILE *in, *out;

    if (stat(src, &a) == 0 && stat(dst, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        return 0;
    if ((in = fopen(src, "r")) == NULL)
        return fail(why, whylen, "cannot read %s: %s", src, strerror(errno));
    if ((out = open_temporary(dst, tmp, sizeof(tmp), why, whylen)) == NULL) {
        fclose(in);
        return -1;
    }
    errno = 0;
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        if (fwrite(buf, 1, n, out) != n) break;
    if (ferror(in)) {
        fclose(in);
        fclose(out);
        unlink(tmp);
        return fail(why, whylen, "cannot read %s", src);
    }
    fclose(in);
    return replace(tmp, dst, out, why, whylen);
}
