/*
 * test_bootstrap.c - communicators from a unique id on one host (the
 * multi-host bed's by_id.sh runs them across hosts):
 *   - the rendezvous is not held up by a UCP connection that says nothing,
 *     made (and kept open) before 3 forked ranks create their communicator
 *     from the id and run an allreduce;
 *   - an id whose service is not there (a stale id) fails at once, with
 *     DFCCL_ERR_BOOTSTRAP; a damaged one with DFCCL_ERR_INVALID_PARAM;
 *   - a rank whose size does not fit the others' is refused, and so the
 *     others' set-up fails too, bounded.
 * In a build without UCX, the id's creation is refused (DFCCL_ERR_UNSUPPORTED).
 *
 * The id is opaque to applications; this test reads the rendezvous's
 * address out of it as bootstrap_id.c lays it out (checked by its magic).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "include/dfccl.h"
#ifdef DFCCL_TEST_HAVE_UCX
#include <ucp/api/ucp.h>
#endif

#define RANKS 3
#define COUNT 1000

typedef struct {   /* bootstrap_id.c's boot_id_t */
    uint64_t magic, token;
    uint16_t family, port;
    uint32_t scope_id;
    uint8_t  addr[16];
} id_layout_t;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Creates a communicator from id as rank of size and runs an allreduce;
 * its set-up's status (the allreduce's, when the set-up worked). */
static dfccl_status_t run_rank(const dfccl_unique_id_t *id, int rank, int size, double timeout)
{
    dfccl_config_t cfg;
    dfccl_context_t *ctx;
    dfccl_comm_t *comm;
    dfccl_completion_t done;
    dfccl_status_t status;
    float in[COUNT], out[COUNT];
    double start;

    dfccl_config_init(&cfg);
    cfg.timeout_sec = timeout;
    if (getenv("DFCCL_TEST_NET_PROTOCOL") != NULL)   /* the links' protocol: RMA adds lanes */
        cfg.net_protocol = (unsigned)atoi(getenv("DFCCL_TEST_NET_PROTOCOL"));
    if (dfccl_context_create(&cfg, &ctx) != DFCCL_OK) return DFCCL_ERR_SYSTEM;
    status = dfccl_comm_create_by_id(ctx, id, size, rank, DFCCL_BACKEND_HOST, &comm);
    if (status != DFCCL_OK) {
        dfccl_context_destroy(ctx);
        return status;
    }
    for (int i = 0; i < COUNT; i++) in[i] = (float)((i + rank) % 7);
    dfccl_coll_args_t a = { .type = DFCCL_COLL_ALLREDUCE, .sendbuf = in, .recvbuf = out,
                            .count = COUNT, .dtype = DFCCL_FLOAT, .op = DFCCL_OP_SUM };
    if (dfccl_coll_post(comm, &a) != DFCCL_OK) return DFCCL_ERR_SYSTEM;
    start = now_s();
    while (dfccl_context_poll(ctx, &done, 1) != 1) {
        if (dfccl_context_drive(ctx, 1000000) < 0) dfccl_context_wait(ctx, 1000000);
        if (now_s() - start > 30) {
            fprintf(stderr, "test_bootstrap: rank %d: no completion within 30 s\n", rank);
            return DFCCL_ERR_TIMEOUT;
        }
    }
    for (int i = 0; i < COUNT && done.status == DFCCL_OK; i++) {
        float want = 0;
        for (int r = 0; r < size; r++) want += (float)((i + r) % 7);
        if (out[i] != want) {
            fprintf(stderr, "test_bootstrap: rank %d: element %d is %g, not %g\n", rank, i,
                    out[i], want);
            return DFCCL_ERR_SYSTEM;
        }
    }
    dfccl_comm_destroy(comm);
    dfccl_context_destroy(ctx);
    return done.status;
}

/* Forks one process per entry of sizes[] (rank i, its size; a rank whose
 * size differs from rank 0's starts 0.5 s late); 0 when each succeeded
 * (want DFCCL_OK) or failed (else; want is what is expected of a lone
 * rank), and where max_sec > 0, within it. */
static int run_ranks(const dfccl_unique_id_t *id, int n, const int *sizes, dfccl_status_t want,
                     double timeout, double max_sec, const char *what)
{
    pid_t pids[8];
    int failed = 0;
    double start = now_s();

    for (int r = 0; r < n; r++) {
        fflush(NULL);
        pids[r] = fork();
        if (pids[r] == 0) {
            if (sizes[r] != sizes[0]) usleep(500000);
            dfccl_status_t s = run_rank(id, r, sizes[r], timeout);
            int ok = want == DFCCL_OK ? s == DFCCL_OK : n > 1 ? s != DFCCL_OK : s == want;
            if (!ok)
                fprintf(stderr, "test_bootstrap: %s: rank %d ended with %s, not %s\n", what, r,
                        dfccl_status_string(s), dfccl_status_string(want));
            printf("test_bootstrap: %s: rank %d: %s\n", what, r, dfccl_status_string(s));
            _exit(ok ? 0 : 1);
        }
        if (pids[r] < 0) return 1;
    }
    for (int r = 0; r < n; r++) {
        int status = 0;
        if (waitpid(pids[r], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed++;
    }
    if (max_sec > 0 && now_s() - start > max_sec) {
        fprintf(stderr, "test_bootstrap: %s: took %.1f s, more than %.0f\n", what,
                now_s() - start, max_sec);
        failed++;
    }
    printf("test_bootstrap: %s: %s\n", what, failed ? "FAIL" : "ok");
    return failed != 0;
}

#ifdef DFCCL_TEST_HAVE_UCX
/* A UCP connection to the rendezvous that never says who it is; kept open
 * until the process ends. 0 when connected. */
static int silent_connect(const dfccl_unique_id_t *id)
{
    static ucp_context_h context;
    static ucp_worker_h worker;
    static ucp_ep_h ep;
    ucp_params_t params = { 0 };
    ucp_worker_params_t wparams = { 0 };
    ucp_ep_params_t ep_params = { 0 };
    struct sockaddr_in in = { 0 };
    id_layout_t b;

    memcpy(&b, id, sizeof(b));
    if (b.magic != 0x6466636364626f32ull || b.family != AF_INET) {
        fprintf(stderr, "test_bootstrap: the unique id's layout changed\n");
        return -1;
    }
    in.sin_family = AF_INET;
    in.sin_port = b.port;
    memcpy(&in.sin_addr, b.addr, 4);
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_STREAM;
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    ep_params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                           UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep_params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep_params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    ep_params.sockaddr.addr = (const struct sockaddr *)&in;
    ep_params.sockaddr.addrlen = sizeof(in);
    if (ucp_init(&params, NULL, &context) != UCS_OK ||
        ucp_worker_create(context, &wparams, &worker) != UCS_OK ||
        ucp_ep_create(worker, &ep_params, &ep) != UCS_OK) {
        fprintf(stderr, "test_bootstrap: no UCP connection to the rendezvous\n");
        return -1;
    }
    for (double until = now_s() + 0.3; now_s() < until;) ucp_worker_progress(worker);
    return 0;
}
#endif

/* UCX does not survive fork: the id is made (and served) in a child of
 * its own, which also opens the silent connection where asked, and lives
 * until the parent closes `*hold` (or 120 s). 0 when *id came back. */
static int serve_id(dfccl_unique_id_t *id, int silent, int *hold)
{
    int out[2], in[2];
    pid_t pid;

    if (pipe(out) != 0 || pipe(in) != 0) return -1;
    fflush(NULL);
    if ((pid = fork()) < 0) return -1;
    if (pid == 0) {
        char c;
        close(out[0]);
        close(in[1]);
        if (dfccl_unique_id_create(id) != DFCCL_OK) _exit(1);
#ifdef DFCCL_TEST_HAVE_UCX
        if (silent && silent_connect(id) != 0) _exit(1);
#else
        (void)silent;
#endif
        if (write(out[1], id, sizeof(*id)) != (ssize_t)sizeof(*id)) _exit(1);
        alarm(120);
        while (read(in[0], &c, 1) < 0) {}
        _exit(0);
    }
    close(out[1]);
    close(in[0]);
    *hold = in[1];
    int got = read(out[0], id, sizeof(*id)) == (ssize_t)sizeof(*id);
    close(out[0]);
    return got ? 0 : -1;
}

int main(void)
{
    static const int sizes[RANKS] = { RANKS, RANKS, RANKS }, misfit[RANKS] = { 3, 3, 4 };
    dfccl_unique_id_t id, stale, damaged;
    int failed = 0, hold;

    setenv("DFCCL_BOOTSTRAP_ADDR", "127.0.0.1", 0);
#ifndef DFCCL_TEST_HAVE_UCX
    dfccl_status_t status = dfccl_unique_id_create(&id);
    printf("test_bootstrap: a build without UCX refuses the id: %s\n",
           status == DFCCL_ERR_UNSUPPORTED ? "ok" : "FAIL");
    (void)stale; (void)damaged; (void)hold; (void)sizes; (void)misfit; (void)failed;
    return status == DFCCL_ERR_UNSUPPORTED ? 0 : 1;
#else
    if (serve_id(&id, 1, &hold) != 0) {
        fprintf(stderr, "test_bootstrap: no unique id\n");
        return 1;
    }
    failed += run_ranks(&id, RANKS, sizes, DFCCL_OK, 20, 0, "3 ranks past a silent connection");
    close(hold);

    /* a stale id: the same address, a port nobody listens on */
    stale = id;
    ((id_layout_t *)&stale)->port = htons(1);
    failed += run_ranks(&stale, 1, sizes, DFCCL_ERR_BOOTSTRAP, 20, 10, "a stale id");
    memset(&damaged, 0x5a, sizeof(damaged));
    failed += run_ranks(&damaged, 1, sizes, DFCCL_ERR_INVALID_PARAM, 20, 5, "a damaged id");

    /* rank 2 says 4 ranks where 0 and 1 say 3: refused; 0 and 1 wait for a
     * third rank until their set-up timeout (4 s) */
    if (serve_id(&id, 0, &hold) != 0) return 1;
    failed += run_ranks(&id, RANKS, misfit, DFCCL_ERR_BOOTSTRAP, 4, 20,
                        "a rank whose size does not fit");
    close(hold);
    while (wait(NULL) > 0) {}
    return failed ? 1 : 0;
#endif
}
