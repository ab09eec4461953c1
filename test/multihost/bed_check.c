/*
 * bed_check - checks, from inside an MPI job, that the multi-host test bed
 * (cluster.sh) makes its namespaces look like separate hosts: each host has
 * its own name, network, IPC namespace, boot_id and /dev/shm, shared by the
 * ranks of that host and by no others, and Open MPI groups ranks by host.
 * Without these, a test "across hosts" could pass over shared memory
 * without ever touching the network.
 *
 * usage: bed_check --hosts N
 * Ends with "bed_check: N passed, N failed" like the other MPI tests.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <mpi.h>

#include "test_util.h"

#define FIELD 128   /* room for one host fact (name, namespace, uuid) */

/* One fact per rank, gathered so every rank can compare. */
typedef struct {
    int   rank, size;
    char *all;      /* size * FIELD bytes */
} facts_t;

static void facts_gather(facts_t *f, const char *mine)
{
    char field[FIELD] = {0};
    snprintf(field, sizeof field, "%s", mine);
    MPI_Allgather(field, FIELD, MPI_CHAR, f->all, FIELD, MPI_CHAR, MPI_COMM_WORLD);
}

static const char *fact_of(const facts_t *f, int rank)
{
    return f->all + (size_t)rank * FIELD;
}

/* A fact is per host when ranks share it exactly when they share a host.
 * Reports the first rank that breaks this (one line per rank, not per pair). */
static int per_host(const facts_t *hosts, const facts_t *f, const char *what)
{
    for (int r = 0; r < f->size; r++) {
        int same_host = strcmp(fact_of(hosts, r), fact_of(hosts, f->rank)) == 0;
        int same_fact = strcmp(fact_of(f, r), fact_of(f, f->rank)) == 0;
        if (same_host != same_fact) {
            fprintf(stderr, "rank %d (%s): %s %s rank %d (%s)\n", f->rank,
                    fact_of(hosts, f->rank), what, same_fact ? "shared with" : "differs from",
                    r, fact_of(hosts, r));
            return 0;
        }
    }
    return 1;
}

/* Whether an earlier rank than `rank` has its host name. */
static int host_seen_before(const facts_t *hosts, int rank)
{
    for (int q = 0; q < rank; q++)
        if (strcmp(fact_of(hosts, q), fact_of(hosts, rank)) == 0)
            return 1;
    return 0;
}

static void read_line(const char *path, char *out, size_t len)
{
    FILE *file = fopen(path, "r");
    out[0] = '\0';
    if (file != NULL) {
        if (fgets(out, (int)len, file) != NULL)
            out[strcspn(out, "\n")] = '\0';
        fclose(file);
    }
}

static void read_link(const char *path, char *out, size_t len)
{
    ssize_t n = readlink(path, out, len - 1);
    out[n > 0 ? n : 0] = '\0';
}

/* Each host's first rank leaves a file in /dev/shm; a rank must see its own
 * host's file and no other's. */
static int shm_is_per_host(const facts_t *hosts, int local_rank)
{
    char path[PATH_MAX];
    int ok = 1;
    const char *me = fact_of(hosts, hosts->rank);
    snprintf(path, sizeof path, "/dev/shm/bed_check.%s", me);
    if (local_rank == 0) {
        FILE *file = fopen(path, "w");
        if (file == NULL) {
            fprintf(stderr, "%s: cannot create %s: %s\n", me, path, strerror(errno));
            ok = 0;
        } else {
            fclose(file);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int r = 0; r < hosts->size; r++) {
        if (host_seen_before(hosts, r))
            continue;
        const char *host = fact_of(hosts, r);
        int same_host = strcmp(host, me) == 0;
        snprintf(path, sizeof path, "/dev/shm/bed_check.%s", host);
        if ((access(path, F_OK) == 0) != same_host) {
            fprintf(stderr, "%s: %s %s\n", me,
                    same_host ? "does not see its own host's" : "sees another host's", path);
            ok = 0;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (local_rank == 0) {
        snprintf(path, sizeof path, "/dev/shm/bed_check.%s", me);
        unlink(path);
    }
    return ok;
}

/* Open MPI's shared-memory group (its idea of a host) holds exactly the
 * ranks with this rank's host name. */
static int shared_group_is_host(const facts_t *hosts, int *local_rank)
{
    MPI_Comm node;
    int node_size, same = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_size);
    MPI_Comm_rank(node, local_rank);
    MPI_Comm_free(&node);
    for (int r = 0; r < hosts->size; r++)
        same += strcmp(fact_of(hosts, r), fact_of(hosts, hosts->rank)) == 0;
    if (same != node_size)
        fprintf(stderr, "rank %d: %d ranks named %s, but a shared group of %d\n",
                hosts->rank, same, fact_of(hosts, hosts->rank), node_size);
    return same == node_size;
}

static int distinct_hosts(const facts_t *hosts)
{
    int count = 0;
    for (int r = 0; r < hosts->size; r++)
        count += !host_seen_before(hosts, r);
    return count;
}

int main(int argc, char **argv)
{
    int want_hosts = 0, local_rank = 0;
    char text[FIELD], name[MPI_MAX_PROCESSOR_NAME];
    facts_t hosts, fact;
    verdict_log_t log;

    MPI_Init(&argc, &argv);
    double start = MPI_Wtime();
    if (argc == 3 && strcmp(argv[1], "--hosts") == 0)
        want_hosts = atoi(argv[2]);
    if (want_hosts <= 0) {
        fprintf(stderr, "usage: bed_check --hosts N\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &hosts.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &hosts.size);
    fact = hosts;
    hosts.all = calloc((size_t)hosts.size, FIELD);
    fact.all = calloc((size_t)hosts.size, FIELD);
    if (hosts.all == NULL || fact.all == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    verdict_log_init(&log);

    int name_len = 0;
    MPI_Get_processor_name(name, &name_len);
    facts_gather(&hosts, name);
    int found = distinct_hosts(&hosts);
    if (found != want_hosts && hosts.rank == 0)
        fprintf(stderr, "%d hosts by processor name, expected %d\n", found, want_hosts);
    verdict_log_record(&log, found == want_hosts);

    gethostname(text, sizeof text);
    text[sizeof text - 1] = '\0';
    if (strcmp(text, name) != 0)
        fprintf(stderr, "rank %d: host name %s, processor name %s\n", hosts.rank, text, name);
    verdict_log_record(&log, strcmp(text, name) == 0);

    verdict_log_record(&log, shared_group_is_host(&hosts, &local_rank));

    static const char *const per_host_facts[][2] = {
        { "/proc/sys/kernel/random/boot_id", "boot_id" },
        { "/proc/self/ns/net", "network namespace" },
        { "/proc/self/ns/ipc", "IPC namespace" },
        { "/proc/self/ns/uts", "UTS namespace" },
    };
    for (size_t i = 0; i < sizeof per_host_facts / sizeof per_host_facts[0]; i++) {
        if (strncmp(per_host_facts[i][0], "/proc/self/ns/", 14) == 0)
            read_link(per_host_facts[i][0], text, sizeof text);
        else
            read_line(per_host_facts[i][0], text, sizeof text);
        facts_gather(&fact, text);
        verdict_log_record(&log, text[0] != '\0' && per_host(&hosts, &fact, per_host_facts[i][1]));
    }

    verdict_log_record(&log, shm_is_per_host(&hosts, local_rank));

    size_t failed = verdict_log_report(&log, "bed_check", MPI_Wtime() - start, MPI_COMM_WORLD);
    verdict_log_free(&log);
    free(hosts.all);
    free(fact.all);
    MPI_Finalize();
    return failed == 0 ? 0 : 1;
}
