/*
 * test_bootstrap.c - the rendezvous behind dfccl_unique_id_create is not
 * held up by a connection that says nothing: one such connection is made
 * (and kept open) before the ranks join, then 3 forked ranks create their
 * communicator from the id and run an allreduce, within their set-up
 * timeout of 20 s. A service that waited for that connection's hello would
 * leave the ranks' set-up to time out.
 *
 * The id is opaque to applications; this test reads the rendezvous address
 * out of it as bootstrap_tcp.c lays it out (checked by its magic word).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "include/dfccl.h"

#define RANKS 3
#define COUNT 1000

typedef struct {   /* bootstrap_tcp.c's boot_id_t */
    uint64_t magic, token;
    uint16_t family, port;
    uint32_t scope_id;
    uint8_t  addr[16];
} id_layout_t;

/* A connection to the rendezvous that never sends; -1 on failure. */
static int silent_connect(const dfccl_unique_id_t *id)
{
    id_layout_t b;
    struct sockaddr_storage sa;
    socklen_t len;
    int fd;

    memcpy(&b, id, sizeof(b));
    if (b.magic != 0x6466636364626f6full) {
        fprintf(stderr, "test_bootstrap: the unique id's layout changed\n");
        return -1;
    }
    memset(&sa, 0, sizeof(sa));
    if (b.family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)&sa;
        in->sin_family = AF_INET;
        in->sin_port = b.port;
        memcpy(&in->sin_addr, b.addr, 4);
        len = sizeof(*in);
    } else {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&sa;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = b.port;
        in6->sin6_scope_id = b.scope_id;
        memcpy(&in6->sin6_addr, b.addr, 16);
        len = sizeof(*in6);
    }
    fd = socket(sa.ss_family, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, len) != 0) {
        perror("test_bootstrap: connect");
        if (fd >= 0) close(fd);
        return -1;
    }
    return fd;
}

static int run_rank(const dfccl_unique_id_t *id, int rank)
{
    dfccl_config_t cfg;
    dfccl_context_t *ctx;
    dfccl_comm_t *comm;
    dfccl_completion_t done;
    float in[COUNT], out[COUNT];
    time_t start;

    dfccl_config_init(&cfg);
    cfg.timeout_sec = 20;
    if (dfccl_context_create(&cfg, &ctx) != DFCCL_OK) return 1;
    if (dfccl_comm_create_by_id(ctx, id, RANKS, rank, DFCCL_BACKEND_HOST, &comm) != DFCCL_OK) {
        fprintf(stderr, "test_bootstrap: rank %d: the communicator's set-up failed\n", rank);
        return 1;
    }
    for (int i = 0; i < COUNT; i++) in[i] = (float)((i + rank) % 7);
    dfccl_coll_args_t a = { .type = DFCCL_COLL_ALLREDUCE, .sendbuf = in, .recvbuf = out,
                            .count = COUNT, .dtype = DFCCL_FLOAT, .op = DFCCL_OP_SUM };
    if (dfccl_coll_post(comm, &a) != DFCCL_OK) return 1;
    start = time(NULL);
    while (dfccl_context_poll(ctx, &done, 1) != 1) {
        if (dfccl_context_drive(ctx, 1000000) < 0) dfccl_context_wait(ctx, 1000000);
        if (time(NULL) - start > 30) {
            fprintf(stderr, "test_bootstrap: rank %d: no completion within 30 s\n", rank);
            return 1;
        }
    }
    for (int i = 0; i < COUNT && done.status == DFCCL_OK; i++) {
        float want = 0;
        for (int r = 0; r < RANKS; r++) want += (float)((i + r) % 7);
        if (out[i] != want) {
            fprintf(stderr, "test_bootstrap: rank %d: element %d is %g, not %g\n", rank, i,
                    out[i], want);
            return 1;
        }
    }
    dfccl_comm_destroy(comm);
    dfccl_context_destroy(ctx);
    return done.status == DFCCL_OK ? 0 : 1;
}

int main(void)
{
    dfccl_unique_id_t id;
    pid_t pids[RANKS];
    int silent, failed = 0;

    setenv("DFCCL_BOOTSTRAP_ADDR", "127.0.0.1", 0);
    if (dfccl_unique_id_create(&id) != DFCCL_OK) {
        fprintf(stderr, "test_bootstrap: no unique id\n");
        return 1;
    }
    if ((silent = silent_connect(&id)) < 0) return 1;
    for (int r = 0; r < RANKS; r++) {
        fflush(NULL);
        pids[r] = fork();
        if (pids[r] == 0) _exit(run_rank(&id, r));
        if (pids[r] < 0) return 1;
    }
    for (int r = 0; r < RANKS; r++) {
        int status = 0;
        if (waitpid(pids[r], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed++;
    }
    close(silent);
    printf("test_bootstrap: %d ranks past a silent connection: %s\n", RANKS,
           failed ? "FAIL" : "ok");
    return failed ? 1 : 0;
}
