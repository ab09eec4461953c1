/*
 * bootstrap_id.c - communicators without MPI: one process makes a unique
 * id (dfccl_unique_id_create), the application hands it to every rank by
 * any means, and each rank creates its communicator from it
 * (dfccl_comm_create_by_id), as with NCCL's unique id.
 *
 * The id names a rendezvous over UCX (transport/rendezvous.h) that the
 * creating process serves: a UCP listener on a socket address, and its
 * random token, which is also the communicator's key. Each rank joins over
 * the engine's UCP context and worker, which its links to other nodes use
 * afterwards, and the engine's set-up exchanges run on that connection.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include "engine/internal.h"
#include "transport/rendezvous.h"
#include "util/log.h"

#define BOOT_MAGIC 0x6466636364626f32ull   /* "dfcclbo2": the rendezvous over UCX */

typedef struct {
    uint64_t magic;
    uint64_t token;      /* names the job's communicator; its key */
    uint16_t family;     /* the rendezvous: AF_INET or AF_INET6 ... */
    uint16_t port;       /* ... network byte order */
    uint32_t scope_id;
    uint8_t  addr[16];
} boot_id_t;

_Static_assert(sizeof(boot_id_t) <= sizeof(dfccl_unique_id_t), "unique id too small");

static void boot_to_sockaddr(const boot_id_t *b, struct sockaddr_storage *sa)
{
    memset(sa, 0, sizeof(*sa));
    if (b->family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)sa;
        in->sin_family = AF_INET;
        in->sin_port = b->port;
        memcpy(&in->sin_addr, b->addr, 4);
        return;
    }
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
    in6->sin6_family = AF_INET6;
    in6->sin6_port = b->port;
    in6->sin6_scope_id = b->scope_id;
    memcpy(&in6->sin6_addr, b->addr, 16);
}

static void boot_from_sockaddr(const struct sockaddr_storage *sa, boot_id_t *b)
{
    b->family = sa->ss_family;
    if (sa->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        b->port = in->sin_port;
        memcpy(b->addr, &in->sin_addr, 4);
    } else {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        b->port = in6->sin6_port;
        b->scope_id = in6->sin6_scope_id;
        memcpy(b->addr, &in6->sin6_addr, 16);
    }
}

/* The address of interface `name` (NULL: the first that is up and not
 * loopback; loopback: the loopback), IPv4 before IPv6; 0 when found. */
static int boot_interface_addr(const struct ifaddrs *all, const char *name, int loopback,
                               struct sockaddr_storage *out)
{
    for (int family = AF_INET; ; family = AF_INET6) {
        for (const struct ifaddrs *i = all; i != NULL; i = i->ifa_next) {
            if (i->ifa_addr == NULL || i->ifa_addr->sa_family != family ||
                !(i->ifa_flags & IFF_UP))
                continue;
            if (name != NULL ? strcmp(i->ifa_name, name) != 0
                             : (loopback != 0) != ((i->ifa_flags & IFF_LOOPBACK) != 0))
                continue;
            if (family == AF_INET6 &&
                IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr))
                continue;   /* would need the scope of the ranks' side */
            memset(out, 0, sizeof(*out));
            memcpy(out, i->ifa_addr, family == AF_INET ? sizeof(struct sockaddr_in)
                                                       : sizeof(struct sockaddr_in6));
            return 0;
        }
        if (family == AF_INET6) return -1;
    }
}

/* The address the service listens on and the id carries (docs/api.md):
 * DFCCL_BOOTSTRAP_ADDR where set; else the first device of UCX_NET_DEVICES
 * (UCX's own convention for which network to use) that is an interface
 * with an address; else the first interface that is up and not loopback;
 * else loopback. */
static dfccl_status_t boot_local_addr(struct sockaddr_storage *out)
{
    const char *env = getenv("DFCCL_BOOTSTRAP_ADDR"), *devices = getenv("UCX_NET_DEVICES");
    struct ifaddrs *all = NULL;
    int found = -1;

    if (env != NULL && env[0] != '\0') {
        struct addrinfo hints = { 0 }, *res = NULL;
        hints.ai_socktype = SOCK_STREAM;
        if (getaddrinfo(env, NULL, &hints, &res) != 0 || res == NULL) {
            dfccl_error("bootstrap: cannot resolve DFCCL_BOOTSTRAP_ADDR=%s", env);
            return DFCCL_ERR_SYSTEM;
        }
        memset(out, 0, sizeof(*out));
        memcpy(out, res->ai_addr, res->ai_addrlen);
        freeaddrinfo(res);
        return DFCCL_OK;
    }
    if (getifaddrs(&all) != 0) {
        dfccl_error("bootstrap: cannot list this host's interfaces (set DFCCL_BOOTSTRAP_ADDR)");
        return DFCCL_ERR_SYSTEM;
    }
    if (devices != NULL && strcmp(devices, "all") != 0) {
        char list[256], *save = NULL;
        snprintf(list, sizeof(list), "%s", devices);
        for (char *d = strtok_r(list, ",", &save); d != NULL && found != 0;
             d = strtok_r(NULL, ",", &save)) {
            char *port = strchr(d, ':');   /* "mlx5_0:1": a device and its port */
            if (port != NULL) *port = '\0';
            found = boot_interface_addr(all, d, 0, out);
        }
    }
    if (found != 0) found = boot_interface_addr(all, NULL, 0, out);
    if (found != 0) found = boot_interface_addr(all, NULL, 1, out);
    freeifaddrs(all);
    if (found != 0) {
        dfccl_error("bootstrap: no interface with an address to listen on (set"
                    " DFCCL_BOOTSTRAP_ADDR)");
        return DFCCL_ERR_SYSTEM;
    }
    return DFCCL_OK;
}

dfccl_status_t dfccl_unique_id_create(dfccl_unique_id_t *id)
{
    struct sockaddr_storage sa;
    dfccl_config_t cfg;
    dfccl_status_t status;
    char why[160];
    boot_id_t b;

    if (id == NULL) return DFCCL_ERR_INVALID_PARAM;
    if (!dfccl_net_available(why, sizeof(why))) {
        dfccl_error("dfccl_unique_id_create: communicators from a unique id bootstrap over UCX,"
                    " and %s; create them through a bootstrap callback instead"
                    " (dfccl_comm_create)", why);
        return DFCCL_ERR_UNSUPPORTED;
    }
    memset(&b, 0, sizeof(b));
    b.magic = BOOT_MAGIC;
    if (getrandom(&b.token, sizeof(b.token), 0) != (ssize_t)sizeof(b.token))
        return DFCCL_ERR_SYSTEM;
    if ((status = boot_local_addr(&sa)) != DFCCL_OK) return status;
    if (sa.ss_family == AF_INET) ((struct sockaddr_in *)&sa)->sin_port = 0;
    else ((struct sockaddr_in6 *)&sa)->sin6_port = 0;
    dfccl_config_init(&cfg);   /* the service's bounds: the default set-up timeout */
    if ((status = dfccl_rendezvous_serve(&sa, b.token, cfg.timeout_sec)) != DFCCL_OK)
        return status;
    boot_from_sockaddr(&sa, &b);
    memset(id, 0, sizeof(*id));
    memcpy(id, &b, sizeof(b));
    return DFCCL_OK;
}

dfccl_status_t dfccl_comm_create_by_id(dfccl_context_t *ctx, const dfccl_unique_id_t *id,
                                       int size, int rank, dfccl_backend_t backend,
                                       dfccl_comm_t **comm_p)
{
    struct sockaddr_storage where;
    dfccl_rendezvous_t *rdv = NULL;
    dfccl_comm_params_t params;
    dfccl_status_t status;
    dfccl_net_t *net;
    char why[160];
    boot_id_t b;

    if (ctx == NULL || id == NULL || comm_p == NULL || size <= 0 || rank < 0 || rank >= size)
        return DFCCL_ERR_INVALID_PARAM;
    memcpy(&b, id, sizeof(b));
    if (b.magic != BOOT_MAGIC || (b.family != AF_INET && b.family != AF_INET6)) {
        dfccl_error("rank %d: not a unique id of this library (made by another version, or"
                    " damaged on its way)", rank);
        return DFCCL_ERR_INVALID_PARAM;
    }
    if (!dfccl_net_available(why, sizeof(why))) {
        dfccl_error("rank %d: communicators from a unique id bootstrap over UCX, and %s",
                    rank, why);
        return DFCCL_ERR_UNSUPPORTED;
    }
    if ((status = dfccl_context_net(ctx, &net)) != DFCCL_OK) return status;
    boot_to_sockaddr(&b, &where);
    status = dfccl_rendezvous_join(net, &where, b.token, rank, size, ctx->config.timeout_sec,
                                   &rdv);
    if (status != DFCCL_OK) return status;
    memset(&params, 0, sizeof(params));
    params.rank = rank;
    params.size = size;
    params.key = b.token;
    params.backend = backend;
    params.bootstrap = (dfccl_bootstrap_t){ dfccl_rendezvous_allgather_start,
                                            dfccl_rendezvous_allgather_test,
                                            dfccl_rendezvous_allgather_cancel, rdv };
    status = dfccl_comm_create(ctx, &params, comm_p);
    dfccl_rendezvous_leave(rdv);   /* the set-up is over: the exchanges are done with */
    return status;
}
