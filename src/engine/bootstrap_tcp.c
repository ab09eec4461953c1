/*
 * bootstrap_tcp.c - communicators without MPI: one process makes a unique
 * id (dfccl_unique_id_create), the application hands it to every rank by
 * any means, and each rank creates its communicator from it
 * (dfccl_comm_create_by_id), as with NCCL's unique id.
 *
 * The id names a TCP rendezvous that the creating process serves from a
 * thread of its own: every rank connects and says who it is; then, for
 * each exchange of the engine's set-up (dfccl_bootstrap_t's allgather),
 * every rank sends its part and the service, once it holds all of them,
 * sends every rank the whole in rank order. The service ends when every
 * rank has closed its connection (the set-up is over), or fails every rank
 * as soon as one leaves early, so that nobody waits for an exchange that
 * cannot complete; the engine's set-up timeout bounds the rest. The
 * service's own waits are bounded too (a connection that says nothing, a
 * rank that never joins or stalls in an exchange): its thread always ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "engine/internal.h"
#include "util/log.h"

#define BOOT_MAGIC 0x6466636364626f6full   /* "dfcclboo" */

typedef struct {
    uint64_t magic;
    uint64_t token;      /* names the job's communicator; its key */
    uint16_t family;     /* the rendezvous: AF_INET or AF_INET6 ... */
    uint16_t port;       /* ... network byte order */
    uint32_t scope_id;
    uint8_t  addr[16];
} boot_id_t;

/* The id's address as a socket address. */
static socklen_t boot_sockaddr(const boot_id_t *b, struct sockaddr_storage *sa)
{
    memset(sa, 0, sizeof(*sa));
    if (b->family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)sa;
        in->sin_family = AF_INET;
        in->sin_port = b->port;
        memcpy(&in->sin_addr, b->addr, 4);
        return sizeof(*in);
    }
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
    in6->sin6_family = AF_INET6;
    in6->sin6_port = b->port;
    in6->sin6_scope_id = b->scope_id;
    memcpy(&in6->sin6_addr, b->addr, 16);
    return sizeof(*in6);
}

_Static_assert(sizeof(boot_id_t) <= sizeof(dfccl_unique_id_t), "unique id too small");

typedef struct {
    uint64_t magic, token;
    int32_t  rank, size;
} boot_hello_t;

/* ---- I/O helpers: whole messages on blocking sockets ---- */

static int boot_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* 0; -1 when the peer closed or failed; -2 when its receive timeout
 * (SO_RCVTIMEO) passed first */
static int boot_read_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n > 0) {
        ssize_t r = recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return -2;
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* ---- the rendezvous service, in the id creator's process ---- */

typedef struct {
    int      listen_fd;
    uint64_t token;
    double   timeout_sec;   /* the engine's default set-up timeout */
} boot_service_t;

/* A connecting rank sends its hello at once; a connection that has not
 * within this bound is not one of ours and must not hold up the joins. */
#define BOOT_HELLO_SEC 2

static void boot_set_recv_timeout(int fd, double sec)
{
    struct timeval tv = { (time_t)sec, (suseconds_t)((sec - (double)(time_t)sec) * 1e6) };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/* One exchange: a part from every rank (each announces its length, which
 * must agree), then the whole to every rank. 0, or -1 when a rank left or
 * disagreed: the caller closes everything, which fails every rank's wait. */
static int boot_serve_round(int *fds, int size, char **whole, size_t *cap)
{
    uint64_t bytes = 0;

    for (int r = 0; r < size; r++) {
        uint64_t b;
        int got = boot_read_all(fds[r], &b, sizeof(b));
        if (got != 0) return r == 0 && got == -1 ? 1 : -1;   /* rank 0 closed: over */
        if (r > 0 && b != bytes) return -1;
        bytes = b;
        if (r == 0 && (size_t)size * bytes > *cap) {
            char *grown = realloc(*whole, (size_t)size * bytes);
            if (grown == NULL) return -1;
            *whole = grown;
            *cap = (size_t)size * bytes;
        }
        if (boot_read_all(fds[r], *whole + (size_t)r * bytes, bytes) != 0) return -1;
    }
    for (int r = 0; r < size; r++)
        if (boot_write_all(fds[r], *whole, (size_t)size * bytes) != 0) return -1;
    return 0;
}

static void *boot_service_main(void *arg)
{
    boot_service_t *s = arg;
    int *fds = NULL, size = 0, joined = 0, rc = 0;
    char *whole = NULL;
    size_t cap = 0;

    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* joins: until every rank of the size the first one announced is in,
     * within the set-up timeout */
    while (size == 0 || joined < size) {
        struct pollfd pfd = { s->listen_fd, POLLIN, 0 };
        struct timespec now;
        boot_hello_t h;
        double left;
        int fd, got;

        clock_gettime(CLOCK_MONOTONIC, &now);
        left = s->timeout_sec - (double)(now.tv_sec - t0.tv_sec) -
               (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
        if (left <= 0) {
            if (size == 0)
                dfccl_error("bootstrap rendezvous: no rank joined within %.0f s; the service"
                            " ends", s->timeout_sec);
            else
                dfccl_error("bootstrap rendezvous: %d of %d ranks joined within %.0f s; the"
                            " set-up of those that did fails", joined, size, s->timeout_sec);
            rc = -1;
            break;
        }
        if (poll(&pfd, 1, (int)(left * 1000) + 1) <= 0) continue;   /* EINTR, or time is up */
        fd = accept(s->listen_fd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            break;
        }
        boot_set_recv_timeout(fd, BOOT_HELLO_SEC);
        if ((got = boot_read_all(fd, &h, sizeof(h))) == -2) {
            dfccl_error("bootstrap rendezvous: dropped a connection that sent nothing within %d s",
                        BOOT_HELLO_SEC);
            close(fd);
            continue;
        }
        if (got != 0 || h.magic != BOOT_MAGIC ||
            h.token != s->token || h.size <= 0 || (size != 0 && h.size != size) ||
            h.rank < 0 || h.rank >= h.size || (fds != NULL && fds[h.rank] >= 0)) {
            dfccl_error("bootstrap rendezvous: refused a connection (not of this id, or a rank"
                        " or size that does not fit)");
            close(fd);
            continue;
        }
        if (fds == NULL) {
            size = h.size;
            if ((fds = malloc(sizeof(int) * (size_t)size)) == NULL) break;
            for (int r = 0; r < size; r++) fds[r] = -1;
        }
        boot_set_recv_timeout(fd, s->timeout_sec);   /* a rank stalled in an exchange */
        fds[h.rank] = fd;
        joined++;
    }
    close(s->listen_fd);
    /* exchanges, until rank 0 closes between them (the set-up is over) */
    while (rc == 0 && fds != NULL && joined == size &&
           (rc = boot_serve_round(fds, size, &whole, &cap)) == 0)
        ;
    if (rc < 0 && joined == size)
        dfccl_error("bootstrap rendezvous: a rank left or stalled during an exchange; every"
                    " rank's set-up fails");
    for (int r = 0; fds != NULL && r < size; r++)
        if (fds[r] >= 0) close(fds[r]);
    free(fds);
    free(whole);
    free(s);
    return NULL;
}

/* The address the other ranks reach this process at: DFCCL_BOOTSTRAP_ADDR
 * if set, else this host's name as the resolver gives it. */
static dfccl_status_t boot_local_addr(struct sockaddr_storage *out, socklen_t *len)
{
    const char *env = getenv("DFCCL_BOOTSTRAP_ADDR");
    char host[256];
    struct addrinfo hints, *res = NULL;

    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    if (env == NULL || env[0] == '\0') {
        if (gethostname(host, sizeof(host)) != 0) return DFCCL_ERR_SYSTEM;
        host[sizeof(host) - 1] = '\0';
        env = host;
    }
    if (getaddrinfo(env, NULL, &hints, &res) != 0 || res == NULL) {
        dfccl_error("bootstrap: cannot resolve %s (set DFCCL_BOOTSTRAP_ADDR to this host's"
                    " address)", env);
        return DFCCL_ERR_SYSTEM;
    }
    memcpy(out, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return DFCCL_OK;
}

dfccl_status_t dfccl_unique_id_create(dfccl_unique_id_t *id)
{
    struct sockaddr_storage sa;
    boot_id_t b;
    socklen_t len;
    boot_service_t *s;
    pthread_t thread;
    int fd;

    if (id == NULL) return DFCCL_ERR_INVALID_PARAM;
    memset(&b, 0, sizeof(b));
    b.magic = BOOT_MAGIC;
    if (getrandom(&b.token, sizeof(b.token), 0) != (ssize_t)sizeof(b.token))
        return DFCCL_ERR_SYSTEM;
    if (boot_local_addr(&sa, &len) != DFCCL_OK) return DFCCL_ERR_SYSTEM;
    if (sa.ss_family == AF_INET) ((struct sockaddr_in *)&sa)->sin_port = 0;
    else ((struct sockaddr_in6 *)&sa)->sin6_port = 0;
    fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len) != 0 || listen(fd, 128) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        dfccl_error("bootstrap: cannot listen for the rendezvous: %s", strerror(errno));
        if (fd >= 0) close(fd);
        return DFCCL_ERR_SYSTEM;
    }
    if ((s = malloc(sizeof(*s))) == NULL) {
        close(fd);
        return DFCCL_ERR_NO_MEMORY;
    }
    s->listen_fd = fd;
    s->token = b.token;
    {
        dfccl_config_t cfg;
        dfccl_config_init(&cfg);
        s->timeout_sec = cfg.timeout_sec;
    }
    if (pthread_create(&thread, NULL, boot_service_main, s) != 0) {
        close(fd);
        free(s);
        return DFCCL_ERR_SYSTEM;
    }
    pthread_detach(thread);
    b.family = sa.ss_family;
    if (sa.ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&sa;
        b.port = in->sin_port;
        memcpy(b.addr, &in->sin_addr, 4);
    } else {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&sa;
        b.port = in6->sin6_port;
        b.scope_id = in6->sin6_scope_id;
        memcpy(b.addr, &in6->sin6_addr, 16);
    }
    memset(id, 0, sizeof(*id));
    memcpy(id, &b, sizeof(b));
    return DFCCL_OK;
}

/* ---- a rank's side: dfccl_bootstrap_t over its connection ---- */

typedef struct {
    int    fd;
    int    size;
    char  *recv;
    size_t expected, got;
    int    failed;
} boot_client_t;

static int boot_allgather_start(void *arg, const void *sendbuf, void *recvbuf, size_t bytes,
                                void **request_p)
{
    boot_client_t *c = arg;
    uint64_t b = bytes;

    if (c->failed || boot_write_all(c->fd, &b, sizeof(b)) != 0 ||
        boot_write_all(c->fd, sendbuf, bytes) != 0)
        return -1;
    c->recv = recvbuf;
    c->expected = (size_t)c->size * bytes;
    c->got = 0;
    *request_p = c;
    return 0;
}

static int boot_allgather_test(void *arg, void *request)
{
    boot_client_t *c = arg;
    (void)request;
    while (!c->failed && c->got < c->expected) {
        ssize_t r = recv(c->fd, c->recv + c->got, c->expected - c->got, MSG_DONTWAIT);
        if (r > 0) {
            c->got += (size_t)r;
        } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return 0;
        } else if (!(r < 0 && errno == EINTR)) {
            c->failed = 1;   /* the rendezvous closed: some rank left */
        }
    }
    return c->failed ? -1 : 1;
}

static void boot_allgather_cancel(void *arg, void *request)
{
    boot_client_t *c = arg;
    (void)request;
    c->failed = 1;
    shutdown(c->fd, SHUT_RDWR);   /* the service then fails the other ranks too */
}

static int boot_connect(const boot_id_t *b, double timeout_sec)
{
    struct sockaddr_storage sa;
    socklen_t len = boot_sockaddr(b, &sa);
    struct timespec start, now;
    int one = 1;

    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {   /* the service may not listen yet only if the id came over very fast */
        int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return -1;
        if (connect(fd, (const struct sockaddr *)&sa, len) == 0) {
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            return fd;
        }
        close(fd);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) * 1e-9 >
            timeout_sec)
            return -1;
        usleep(10000);
    }
}

dfccl_status_t dfccl_comm_create_by_id(dfccl_context_t *ctx, const dfccl_unique_id_t *id,
                                       int size, int rank, dfccl_backend_t backend,
                                       dfccl_comm_t **comm_p)
{
    boot_id_t b;
    boot_hello_t h;
    boot_client_t c = { -1, size, NULL, 0, 0, 0 };
    dfccl_comm_params_t params;
    dfccl_status_t status;

    if (ctx == NULL || id == NULL || comm_p == NULL || size <= 0 || rank < 0 || rank >= size)
        return DFCCL_ERR_INVALID_PARAM;
    memcpy(&b, id, sizeof(b));
    if (b.magic != BOOT_MAGIC || (b.family != AF_INET && b.family != AF_INET6))
        return DFCCL_ERR_INVALID_PARAM;
    c.fd = boot_connect(&b, ctx->config.timeout_sec);
    if (c.fd < 0) {
        dfccl_error("rank %d: cannot reach the bootstrap rendezvous: %s", rank, strerror(errno));
        return DFCCL_ERR_BOOTSTRAP;
    }
    h = (boot_hello_t){ BOOT_MAGIC, b.token, rank, size };
    if (boot_write_all(c.fd, &h, sizeof(h)) != 0) {
        close(c.fd);
        return DFCCL_ERR_BOOTSTRAP;
    }
    memset(&params, 0, sizeof(params));
    params.rank = rank;
    params.size = size;
    params.key = b.token;
    params.backend = backend;
    params.bootstrap = (dfccl_bootstrap_t){ boot_allgather_start, boot_allgather_test,
                                            boot_allgather_cancel, &c };
    status = dfccl_comm_create(ctx, &params, comm_p);
    close(c.fd);   /* the set-up is over: the exchanges are done with */
    return status;
}
