/*
 * by_id_check.c - one rank of a communicator made from a unique id
 * (dfccl_unique_id_create, dfccl_comm_create_by_id), the id passed through
 * a file: rank 0 makes it, the others wait for the file. Then the three
 * collectives, checked. by_id.sh starts the ranks on the hosts of the
 * multi-host bed, and in its failure cases a rank that dies during the
 * set-up (--die-after-ms), one that comes late (--start-delay-ms) or never,
 * and a damaged id.
 *
 * Prints one line: "by_id rank R of N: ok, set-up T ms" or "... creation
 * failed: STATUS after T ms". Exit 0: ok; 1: the creation failed (what
 * failure cases expect); 2: wrong results, shared memory left behind, or
 * a usage error.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "include/dfccl.h"
#include "../engine/sim_ranks.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void *die_later(void *arg)
{
    usleep((useconds_t)(*(int *)arg) * 1000u);
    fprintf(stderr, "by_id: this rank dies now, during the set-up\n");
    raise(SIGKILL);
    return NULL;
}

static int write_id(const char *path, const dfccl_unique_id_t *id)
{
    char tmp[4096];
    FILE *f;
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if ((f = fopen(tmp, "wb")) == NULL || fwrite(id, sizeof(*id), 1, f) != 1) return -1;
    if (fclose(f) != 0) return -1;
    return rename(tmp, path);   /* the others never read half an id */
}

static int read_id(const char *path, dfccl_unique_id_t *id, double wait_ms)
{
    double until = now_ms() + wait_ms;
    for (;;) {
        FILE *f = fopen(path, "rb");
        if (f != NULL) {
            int ok = fread(id, sizeof(*id), 1, f) == 1;
            fclose(f);
            if (ok) return 0;
        }
        if (now_ms() > until) return -1;
        usleep(10000);
    }
}

/* Says this rank is done and waits (bounded) until every rank is: a rank
 * that ends its process while a peer on another node still takes its last
 * data can reset that connection first (TCP drops what the peer had not
 * read), which MPI programs never see, as MPI_Finalize waits for all. */
static void all_done(const char *dir, int rank, int size)
{
    char path[4096];
    double until = now_ms() + 30000;
    FILE *f;

    snprintf(path, sizeof(path), "%s/done.%d", dir, rank);
    if ((f = fopen(path, "w")) != NULL) fclose(f);
    for (int r = 0; r < size && now_ms() < until; r++) {
        snprintf(path, sizeof(path), "%s/done.%d", dir, r);
        while (access(path, F_OK) != 0 && now_ms() < until) usleep(5000);
    }
}

/* Waits (bounded) for the three collectives. */
static int wait_three(dfccl_context_t *ctx, int rank)
{
    int got = 0;
    double until = now_ms() + 60000;
    while (got < 3) {
        dfccl_completion_t c;
        if (dfccl_context_poll(ctx, &c, 1) == 1) {
            if (c.status != DFCCL_OK) {
                fprintf(stderr, "by_id rank %d: a collective failed: %s\n", rank,
                        dfccl_status_string(c.status));
                return -1;
            }
            got++;
        } else if (now_ms() > until) {
            fprintf(stderr, "by_id rank %d: collectives not done within 60 s\n", rank);
            return -1;
        } else if (dfccl_context_drive(ctx, 1000000) < 0) {
            dfccl_context_wait(ctx, 1000000);
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    int rank = -1, size = 0, die_after_ms = 0, start_delay_ms = 0, rc = 0;
    const char *done_dir = NULL;
    double timeout = 20;
    const char *id_file = NULL;
    size_t n = 70001;
    dfccl_unique_id_t id;
    dfccl_context_t *ctx;
    dfccl_comm_t *comm;
    dfccl_config_t cfg;
    dfccl_status_t status;
    pthread_t killer;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--rank")) rank = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--size")) size = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--id-file")) id_file = argv[i + 1];
        else if (!strcmp(argv[i], "--timeout")) timeout = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--die-after-ms")) die_after_ms = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--start-delay-ms")) start_delay_ms = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--count")) n = (size_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--done-dir")) done_dir = argv[i + 1];
        else rank = -2;
    }
    if (rank < 0 || size <= 0 || rank >= size || size > 64 || id_file == NULL) {
        fprintf(stderr, "usage: %s --rank R --size N --id-file F [--timeout S] [--count N]"
                        " [--die-after-ms M] [--start-delay-ms D] [--done-dir D]\n", argv[0]);
        return 2;
    }
    int stale_segments = sim_own_segments();
    if (start_delay_ms > 0) usleep((useconds_t)start_delay_ms * 1000u);
    if (rank == 0 && access(id_file, F_OK) != 0) {   /* (a damaged id may be there already) */
        if ((status = dfccl_unique_id_create(&id)) != DFCCL_OK || write_id(id_file, &id) != 0) {
            fprintf(stderr, "by_id rank 0: no unique id: %s\n", dfccl_status_string(status));
            return 1;
        }
    }
    if (read_id(id_file, &id, timeout * 1000) != 0) {
        printf("by_id rank %d of %d: creation failed: no id in %s\n", rank, size, id_file);
        return 1;
    }
    dfccl_config_init(&cfg);
    cfg.timeout_sec = timeout;
    if (dfccl_context_create(&cfg, &ctx) != DFCCL_OK) return 2;
    if (die_after_ms > 0) pthread_create(&killer, NULL, die_later, &die_after_ms);
    double t0 = now_ms();
    status = dfccl_comm_create_by_id(ctx, &id, size, rank, DFCCL_BACKEND_HOST, &comm);
    double setup_ms = now_ms() - t0;
    if (status != DFCCL_OK) {
        printf("by_id rank %d of %d: creation failed: %s after %.0f ms\n", rank, size,
               dfccl_status_string(status), setup_ms);
        dfccl_context_destroy(ctx);
        if (sim_own_segments() != stale_segments) {
            printf("by_id rank %d: shared memory left in /dev/shm after a failed creation\n",
                   rank);
            return 2;
        }
        return 1;
    }
    size_t rs_counts[64], total = 0;
    for (int r = 0; r < size; r++) total += rs_counts[r] = (n + (size_t)r) % (n + 2);
    sim_three_t t;
    if (sim_three_alloc(&t, rank, size, n, rs_counts, total, DFCCL_OP_SUM) != 0) return 2;
    for (int c = 0; c < 3; c++)
        if (dfccl_coll_post(comm, &t.args[c]) != DFCCL_OK) rc = 2;
    if (rc == 0 && (wait_three(ctx, rank) != 0 || sim_three_check(&t, rank, size, n, rs_counts)))
        rc = 2;
    sim_three_free(&t);
    if (done_dir != NULL) all_done(done_dir, rank, size);
    dfccl_comm_destroy(comm);
    dfccl_context_destroy(ctx);
    if (sim_own_segments() != stale_segments) {
        printf("by_id rank %d: shared memory left in /dev/shm\n", rank);
        rc = 2;
    }
    printf("by_id rank %d of %d: %s, set-up %.1f ms\n", rank, size, rc ? "WRONG" : "ok",
           setup_ms);
    return rc;
}
