/*
 * coll_dfccl_colls.c - the eight entry points. Each decides its route from
 * what MPI requires to match on all ranks (kind, count, datatype, op,
 * communicator) plus MCA settings that must be equal everywhere, so all
 * ranks take the same path: the engine, or the saved function below us.
 */
#include <limits.h>
#include <stdlib.h>
#include "coll_dfccl.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/info.h"

#define DFCCL_FALLBACK OMPI_ERR_NOT_SUPPORTED   /* internal: take the stock path */

/*
 * Routing (docs/design.md). By default device buffers go to the GPU side and host
 * buffers to the stock path: a rank whose buffers differ in kind from its
 * peers' takes another route than they do, and their watchdog names it.
 * With coll_dfccl_host_buffers=engine the route is the communicator's, agreed
 * at its creation: the GPU side when every rank offered it, else the host
 * engine; a rank whose buffers are of the other kind has the engine stage
 * them (buffers).
 */
typedef struct {
    enum { DFCCL_ROUTE_STOCK, DFCCL_ROUTE_HOST, DFCCL_ROUTE_GPU } path;
    /* DFCCL_BUFFERS_NATIVE, or where this rank's buffers are when they are
     * not of the path's memory kind (the engine stages them) */
    dfccl_buffers_t buffers;
    const mca_coll_dfccl_pack_t *pack;   /* allgather of a non-contiguous layout */
} dfccl_route_t;

#define DFCCL_ROUTE_STAGED(route) ((route).buffers != DFCCL_BUFFERS_NATIVE)

static dfccl_route_t dfccl_route(const mca_coll_dfccl_module_t *m, const void *sbuf,
                                 const void *rbuf)
{
    bool send_dev, recv_dev, all_dev;
    dfccl_buffers_t kind;
    dfccl_route_t route = { DFCCL_ROUTE_STOCK, DFCCL_BUFFERS_NATIVE, NULL };

    mca_coll_dfccl_memory_kinds(sbuf, rbuf, &send_dev, &recv_dev);
    all_dev = (sbuf == MPI_IN_PLACE || send_dev) && recv_dev;
    kind = all_dev ? DFCCL_BUFFERS_DEVICE
                   : send_dev || recv_dev ? DFCCL_BUFFERS_MIXED : DFCCL_BUFFERS_HOST;

    if (mca_coll_dfccl_component.host_buffers == MCA_COLL_DFCCL_HOST_BUFFERS_ENGINE) {
        if (m->gpu_agreed) {
            route.path = DFCCL_ROUTE_GPU;
            if (!all_dev) route.buffers = kind;
        } else if (send_dev || recv_dev) {
            /* a build without CUDA cannot copy device memory: the stock
             * path, as before this setting (all ranks alike when all pass
             * device buffers) */
            route.path = m->stage_agreed ? DFCCL_ROUTE_HOST : DFCCL_ROUTE_STOCK;
            if (m->stage_agreed) route.buffers = kind;
        } else {
            route.path = DFCCL_ROUTE_HOST;
        }
    } else if (all_dev && mca_coll_dfccl_gpu_reaches(m) && mca_coll_dfccl_component.gpu) {
        /* both on the device (or in place), GPU backend built and offered, the
         * ranks on one node or reached through the network transport */
        route.path = DFCCL_ROUTE_GPU;
    }
    return route;
}

/* A blocking call's wait: rounds of Open MPI's progress, which call the
 * component's hook; for a host collective the hook drives the engine's
 * scheduler (or, with driving off, spins and then sleeps on the completion
 * queue); for a GPU collective this loop sleeps there after a spin
 * (wait_policy.h). Bounded: the engine's watchdog completes a stuck
 * collective with an error. */

static void dfccl_wait_blocking(mca_coll_dfccl_request_t *req, bool on_host)
{
    dfccl_context_t *ctx = mca_coll_dfccl_component.context;
    uint64_t spin_until = mca_coll_dfccl_now_ns() + DFCCL_WAIT_CALLER_SPIN_GPU_NS;

    while (!REQUEST_COMPLETE(&req->super.super)) {
        if (mca_coll_dfccl_progress() > 0) continue;
        opal_progress();
        if (!on_host && !REQUEST_COMPLETE(&req->super.super) &&
            mca_coll_dfccl_now_ns() > spin_until)
            dfccl_context_wait(ctx, DFCCL_WAIT_CALLER_SLEEP_NS);
    }
}

/*
 * A call that takes the stock path on a communicator whose calls the host
 * engine carries (host_buffers=engine): the ranks first agree that all of
 * them take it (dfccl_coll_elsewhere), so that a call routed differently on
 * some rank (a user-defined op on one rank only, type descriptions that the
 * engine carries on some ranks only) fails on every rank instead of leaving
 * the stock side waiting forever. bytes: the call's data per rank as the
 * type signature gives it; a negative count is left to the stock path.
 */
static int dfccl_fallback_agree(mca_coll_dfccl_module_t *m, dfccl_coll_type_t type, int count,
                                ompi_datatype_t *dtype, int factor)
{
    size_t size = 0;
    dfccl_status_t status;

    if (mca_coll_dfccl_component.host_buffers != MCA_COLL_DFCCL_HOST_BUFFERS_ENGINE ||
        m->gpu_agreed || m->engine_state != MCA_COLL_DFCCL_ENGINE_READY || m->engine_comm == NULL ||
        count < 0 || dtype == NULL || dtype == MPI_DATATYPE_NULL)
        return OMPI_SUCCESS;
    ompi_datatype_type_size(dtype, &size);
    status = dfccl_coll_elsewhere(m->engine_comm, type, (uint64_t)count * size * (uint64_t)factor);
    if (status == DFCCL_OK) return OMPI_SUCCESS;
    DFCCL_VERBOSE(1, "%s on comm %s: the ranks did not agree on the stock path: %s",
                  dfccl_coll_type_name(type), m->comm->c_name, dfccl_status_string(status));
    return mca_coll_dfccl_request_error(status);
}

/* A persistent init's info argument and its ordinal among the
 * communicator's inits (the same on every rank: MPI-4 orders inits). */
typedef struct {
    struct ompi_info_t *info;
    uint64_t            ordinal;
} dfccl_init_t;

/* Posts to the engine (host or GPU side, per route); blocking calls
 * (request == NULL) wait for completion; persistent ones (init not NULL)
 * prepare the call, which each MPI_Start submits. */
static int dfccl_run(mca_coll_dfccl_module_t *m, dfccl_route_t route, dfccl_coll_args_t *args,
                     ompi_request_t **request, const dfccl_init_t *init)
{
    mca_coll_dfccl_request_t *req;
    dfccl_context_t *ctx = NULL;
    bool done = false;
    int rc;

    if (route.path == DFCCL_ROUTE_STOCK) return DFCCL_FALLBACK;
    if (route.path == DFCCL_ROUTE_HOST && mca_coll_dfccl_module_engine_ready(m) != OMPI_SUCCESS)
        return DFCCL_FALLBACK;
    /* the first device call of the process starts the engine (and the
     * request free list); one that cannot start it reports an error rather
     * than fall back alone */
    if (route.path == DFCCL_ROUTE_GPU && mca_coll_dfccl_context_get(&ctx) != OMPI_SUCCESS)
        return OMPI_ERR_OUT_OF_RESOURCE;
    args->buffers = route.buffers;   /* staged by the engine where not the path's kind */
    if (init != NULL)
        return mca_coll_dfccl_persist_init(m, route.path == DFCCL_ROUTE_GPU, route.pack,
                                           args, init->info, init->ordinal, request);
    req = mca_coll_dfccl_request_get(m->comm);
    if (req == NULL) return OMPI_ERR_OUT_OF_RESOURCE;   /* never fall back alone */
    if (route.pack != NULL) {
        rc = mca_coll_dfccl_pack_in(req, args, route.pack, ompi_comm_rank(m->comm),
                                    ompi_comm_size(m->comm));
        if (rc != OMPI_SUCCESS) {   /* an error, never a lone fallback */
            mca_coll_dfccl_request_release(req);
            mca_coll_dfccl_request_release(req);
            return rc;
        }
    }
    args->user = req;
    args->priority = mca_coll_dfccl_priority_of(m);
    if (request == NULL && route.path == DFCCL_ROUTE_HOST && !DFCCL_ROUTE_STAGED(route) &&
        route.pack == NULL)
        rc = mca_coll_dfccl_run_host(m, args, req, &done);   /* may end here */
    else
        rc = mca_coll_dfccl_submit(m, route.path == DFCCL_ROUTE_GPU, NULL, args, NULL, req);
    if (rc != OMPI_SUCCESS) {
        mca_coll_dfccl_request_release(req);
        mca_coll_dfccl_request_release(req);
        return rc;
    }
    DFCCL_VERBOSE(2, "%s%s on comm %s posted to the engine%s%s%s", request ? "i" : "",
                  dfccl_coll_type_name(args->type), m->comm->c_name,
                  route.path == DFCCL_ROUTE_GPU ? " (GPU)" : "",
                  DFCCL_ROUTE_STAGED(route) ? ", staged" : "", done ? ", ended at once" : "");
    if (done) {   /* run on this thread: nothing was queued */
        mca_coll_dfccl_request_release(req);
        mca_coll_dfccl_request_release(req);
        return OMPI_SUCCESS;
    }
    if (request != NULL) {
        *request = &req->super.super;
        return OMPI_SUCCESS;
    }
    dfccl_wait_blocking(req, route.path != DFCCL_ROUTE_GPU);
    rc = req->super.super.req_status.MPI_ERROR;
    mca_coll_dfccl_request_release(req);
    return rc;
}

static bool dfccl_prepare_allreduce(const mca_coll_dfccl_module_t *m, const void *sbuf, void *rbuf,
                                    int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    dfccl_coll_args_t *args, dfccl_route_t *route)
{
    if (count < 0 || (*route = dfccl_route(m, sbuf, rbuf)).path == DFCCL_ROUTE_STOCK) return false;
    if (!mca_coll_dfccl_map_reduction(dtype, op, &args->dtype, &args->op)) return false;
    args->type = DFCCL_COLL_ALLREDUCE;
    args->sendbuf = sbuf == MPI_IN_PLACE ? DFCCL_IN_PLACE : sbuf;
    args->recvbuf = rbuf;
    args->count = (size_t)count;
    args->counts = NULL;
    return true;
}

/* An allreduce through the engine in any of the three forms, or
 * DFCCL_FALLBACK when the engine does not carry it. */
static int dfccl_try_allreduce(mca_coll_dfccl_module_t *m, const void *sbuf, void *rbuf, int count,
                               ompi_datatype_t *dtype, struct ompi_op_t *op,
                               ompi_request_t **request, const dfccl_init_t *init)
{
    dfccl_coll_args_t args = { 0 };
    dfccl_route_t route;

    if (!dfccl_prepare_allreduce(m, sbuf, rbuf, count, dtype, op, &args, &route))
        return DFCCL_FALLBACK;
    return dfccl_run(m, route, &args, request, init);
}

int mca_coll_dfccl_allreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                             struct ompi_op_t *op, ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    int rc = dfccl_try_allreduce(m, sbuf, rbuf, count, dtype, op, NULL, NULL);

    if (rc != DFCCL_FALLBACK) return rc;
    rc = dfccl_fallback_agree(m, DFCCL_COLL_ALLREDUCE, count, dtype, 1);
    if (rc != OMPI_SUCCESS) return rc;
    return m->previous_allreduce(sbuf, rbuf, count, dtype, op, comm, m->previous_allreduce_module);
}

int mca_coll_dfccl_iallreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                              struct ompi_op_t *op, ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    int rc;

    if (mca_coll_dfccl_is_construction_call(count, dtype, op))
        return mca_coll_dfccl_construction_iallreduce(m, sbuf, rbuf, op, comm, request);
    rc = dfccl_try_allreduce(m, sbuf, rbuf, count, dtype, op, request, NULL);
    if (rc != DFCCL_FALLBACK) return rc;
    rc = dfccl_fallback_agree(m, DFCCL_COLL_ALLREDUCE, count, dtype, 1);
    if (rc != OMPI_SUCCESS) return rc;
    return m->previous_iallreduce(sbuf, rbuf, count, dtype, op, comm, request,
                                  m->previous_iallreduce_module);
}

/* Allgather carries bytes, whatever datatypes describe them (MPI matches
 * type signatures): contiguous layouts where they are, others packed on the
 * host engine (pack, filled here). */
static bool dfccl_prepare_allgather(const mca_coll_dfccl_module_t *m, const void *sbuf, int scount,
                                    ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                    ompi_datatype_t *rdtype, dfccl_coll_args_t *args,
                                    dfccl_route_t *route, mca_coll_dfccl_pack_t *pack)
{
    size_t bytes, send_bytes, rsize = 0, ssize = 0;
    ptrdiff_t roff = 0, soff = 0;
    bool contiguous;

    if (rcount < 0 || (*route = dfccl_route(m, sbuf, rbuf)).path == DFCCL_ROUTE_STOCK) return false;
    if (rdtype == NULL || rdtype == MPI_DATATYPE_NULL) return false;
    ompi_datatype_type_size(rdtype, &rsize);
    bytes = rsize * (size_t)rcount;
    if (sbuf != MPI_IN_PLACE) {
        if (sdtype == NULL || sdtype == MPI_DATATYPE_NULL || scount < 0) return false;
        ompi_datatype_type_size(sdtype, &ssize);
        if (ssize * (size_t)scount != bytes) return false;
    }
    contiguous = mca_coll_dfccl_map_gather_type(rdtype, rcount, &bytes, &roff) &&
                 (sbuf == MPI_IN_PLACE ||
                  mca_coll_dfccl_map_gather_type(sdtype, scount, &send_bytes, &soff));
    args->type = DFCCL_COLL_ALLGATHER;
    args->count = bytes;
    args->counts = NULL;
    args->dtype = DFCCL_BYTE;
    args->op = DFCCL_OP_NONE;
    if (contiguous) {
        args->sendbuf = sbuf == MPI_IN_PLACE ? DFCCL_IN_PLACE : (const char *)sbuf + soff;
        args->recvbuf = (char *)rbuf + roff;
        return true;
    }
    /* packing copies through host memory: the host engine's route, with the
     * caller's buffers in host memory (the other routes take the stock path,
     * agreed by all ranks or failed on all) */
    if (route->path != DFCCL_ROUTE_HOST || DFCCL_ROUTE_STAGED(*route) || bytes > (size_t)INT_MAX)
        return false;
    *pack = (mca_coll_dfccl_pack_t){ sbuf, scount, sdtype, rbuf, rcount, rdtype };
    route->pack = pack;
    args->sendbuf = NULL;   /* the packed block, set by mca_coll_dfccl_pack_in */
    args->recvbuf = NULL;
    return true;
}

/* An allgather through the engine in any of the three forms, or
 * DFCCL_FALLBACK when the engine does not carry it. */
static int dfccl_try_allgather(mca_coll_dfccl_module_t *m, const void *sbuf, int scount,
                               ompi_datatype_t *sdtype, void *rbuf, int rcount,
                               ompi_datatype_t *rdtype, ompi_request_t **request,
                               const dfccl_init_t *init)
{
    mca_coll_dfccl_pack_t pack;
    dfccl_coll_args_t args = { 0 };
    dfccl_route_t route;

    if (!dfccl_prepare_allgather(m, sbuf, scount, sdtype, rbuf, rcount, rdtype, &args, &route,
                                 &pack))
        return DFCCL_FALLBACK;
    return dfccl_run(m, route, &args, request, init);
}

int mca_coll_dfccl_allgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                             int rcount, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    int rc = dfccl_try_allgather(m, sbuf, scount, sdtype, rbuf, rcount, rdtype, NULL, NULL);

    if (rc != DFCCL_FALLBACK) return rc;
    rc = dfccl_fallback_agree(m, DFCCL_COLL_ALLGATHER, rcount, rdtype, 1);
    if (rc != OMPI_SUCCESS) return rc;
    return m->previous_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                 m->previous_allgather_module);
}

int mca_coll_dfccl_iallgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                              int rcount, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                              ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    int rc = dfccl_try_allgather(m, sbuf, scount, sdtype, rbuf, rcount, rdtype, request, NULL);

    if (rc != DFCCL_FALLBACK) return rc;
    rc = dfccl_fallback_agree(m, DFCCL_COLL_ALLGATHER, rcount, rdtype, 1);
    if (rc != OMPI_SUCCESS) return rc;
    return m->previous_iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                  m->previous_iallgather_module);
}

/* counts: the caller's per-rank counts (rcounts), or NULL for the block form
 * with every rank receiving rcount. The engine copies what it needs at post. */
static bool dfccl_prepare_reduce_scatter(const mca_coll_dfccl_module_t *m, const void *sbuf,
                                         void *rbuf, const int *rcounts, int rcount,
                                         ompi_datatype_t *dtype, struct ompi_op_t *op, int size,
                                         size_t *counts, dfccl_coll_args_t *args,
                                         dfccl_route_t *route)
{
    if ((*route = dfccl_route(m, sbuf, rbuf)).path == DFCCL_ROUTE_STOCK) return false;
    for (int i = 0; i < size; i++) {
        int c = rcounts ? rcounts[i] : rcount;
        if (c < 0) return false;
        counts[i] = (size_t)c;
    }
    if (!mca_coll_dfccl_map_reduction(dtype, op, &args->dtype, &args->op)) return false;
    args->type = DFCCL_COLL_REDUCE_SCATTER;
    args->sendbuf = sbuf == MPI_IN_PLACE ? DFCCL_IN_PLACE : sbuf;
    args->recvbuf = rbuf;
    args->count = 0;
    args->counts = counts;
    return true;
}

/* One body for the four reduce-scatter forms. */
static int dfccl_reduce_scatter_any(const void *sbuf, void *rbuf, const int *rcounts, int rcount,
                                    ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    ompi_communicator_t *comm, ompi_request_t **request,
                                    mca_coll_dfccl_module_t *m, bool *fallback)
{
    int size = ompi_comm_size(comm), rc = DFCCL_FALLBACK;
    size_t *counts = malloc(sizeof(size_t) * (size_t)size);
    dfccl_coll_args_t args = { 0 };
    dfccl_route_t route;

    *fallback = false;   /* an error is returned, never a lone fallback */
    if (counts == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
    if (dfccl_prepare_reduce_scatter(m, sbuf, rbuf, rcounts, rcount, dtype, op, size, counts, &args,
                                     &route))
        rc = dfccl_run(m, route, &args, request, NULL);
    free(counts);
    if (rc == DFCCL_FALLBACK) {
        int total = 0;
        for (int i = 0; i < size && total >= 0; i++) {
            int c = rcounts ? rcounts[i] : rcount;
            total = c < 0 || total > INT_MAX - c ? -1 : total + c;
        }
        rc = dfccl_fallback_agree(m, DFCCL_COLL_REDUCE_SCATTER, total, dtype, 1);
        if (rc == OMPI_SUCCESS) rc = DFCCL_FALLBACK;
    }
    *fallback = rc == DFCCL_FALLBACK;
    return rc;
}

int mca_coll_dfccl_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                  ompi_datatype_t *dtype, struct ompi_op_t *op, ompi_communicator_t *comm,
                                  mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    bool fallback;
    int rc = dfccl_reduce_scatter_any(sbuf, rbuf, rcounts, 0, dtype, op, comm, NULL, m, &fallback);

    if (!fallback) return rc;
    return m->previous_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm,
                                      m->previous_reduce_scatter_module);
}

int mca_coll_dfccl_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                   ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   ompi_communicator_t *comm, ompi_request_t **request,
                                   mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    bool fallback;
    int rc = dfccl_reduce_scatter_any(sbuf, rbuf, rcounts, 0, dtype, op, comm, request, m,
                                      &fallback);

    if (!fallback) return rc;
    return m->previous_ireduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, request,
                                       m->previous_ireduce_scatter_module);
}

int mca_coll_dfccl_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                        ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    bool fallback;
    int rc = DFCCL_FALLBACK;

    if (rcount >= 0)
        rc = dfccl_reduce_scatter_any(sbuf, rbuf, NULL, rcount, dtype, op, comm, NULL, m, &fallback);
    if (rcount >= 0 && !fallback) return rc;
    return m->previous_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm,
                                            m->previous_reduce_scatter_block_module);
}

int mca_coll_dfccl_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                         ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         ompi_communicator_t *comm, ompi_request_t **request,
                                         mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    bool fallback;
    int rc = DFCCL_FALLBACK;

    if (rcount >= 0)
        rc = dfccl_reduce_scatter_any(sbuf, rbuf, NULL, rcount, dtype, op, comm, request, m,
                                      &fallback);
    if (rcount >= 0 && !fallback) return rc;
    return m->previous_ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request,
                                             m->previous_ireduce_scatter_block_module);
}

/*
 * Persistent forms (MPIX_*_init): routed as the nonblocking forms, prepared
 * once (coll_dfccl_persist.c). One the engine does not carry goes to the
 * component below us at init; unlike the other forms the ranks do not
 * first agree on that (an init must not wait for other ranks), so a call
 * routed differently on some rank is not diagnosed here (docs/design.md).
 */
static int dfccl_no_init(const char *what, ompi_communicator_t *comm)
{
    DFCCL_ERROR("%s on comm %s: not carried by dfccl, and no component below it offers the"
                " persistent form (is libnbc excluded?)", what, comm->c_name);
    return MPI_ERR_UNSUPPORTED_OPERATION;
}

int mca_coll_dfccl_allreduce_init(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                                  struct ompi_op_t *op, ompi_communicator_t *comm,
                                  struct ompi_info_t *info, ompi_request_t **request,
                                  mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    dfccl_init_t init = { info, m->persist_inits++ };
    int rc = dfccl_try_allreduce(m, sbuf, rbuf, count, dtype, op, request, &init);

    if (rc != DFCCL_FALLBACK) return rc;
    if (m->previous_allreduce_init == NULL) return dfccl_no_init("MPIX_Allreduce_init", comm);
    return m->previous_allreduce_init(sbuf, rbuf, count, dtype, op, comm, info, request,
                                      m->previous_allreduce_init_module);
}

int mca_coll_dfccl_allgather_init(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                                  int rcount, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                                  struct ompi_info_t *info, ompi_request_t **request,
                                  mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    dfccl_init_t init = { info, m->persist_inits++ };
    int rc = dfccl_try_allgather(m, sbuf, scount, sdtype, rbuf, rcount, rdtype, request, &init);

    if (rc != DFCCL_FALLBACK) return rc;
    if (m->previous_allgather_init == NULL) return dfccl_no_init("MPIX_Allgather_init", comm);
    return m->previous_allgather_init(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, info,
                                      request, m->previous_allgather_init_module);
}

/* Both reduce-scatter forms: counts as for the other forms (NULL rcounts:
 * the block form). */
static int dfccl_reduce_scatter_init_any(mca_coll_dfccl_module_t *m, const void *sbuf, void *rbuf,
                                         const int *rcounts, int rcount, ompi_datatype_t *dtype,
                                         struct ompi_op_t *op, struct ompi_info_t *info,
                                         ompi_request_t **request)
{
    dfccl_init_t init = { info, m->persist_inits++ };
    int size = ompi_comm_size(m->comm), rc = DFCCL_FALLBACK;
    size_t *counts = malloc(sizeof(size_t) * (size_t)size);
    dfccl_coll_args_t args = { 0 };
    dfccl_route_t route;

    if (counts == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
    if ((rcounts != NULL || rcount >= 0) &&
        dfccl_prepare_reduce_scatter(m, sbuf, rbuf, rcounts, rcount, dtype, op, size, counts,
                                     &args, &route))
        rc = dfccl_run(m, route, &args, request, &init);   /* counts are copied */
    free(counts);
    return rc;
}

int mca_coll_dfccl_reduce_scatter_init(const void *sbuf, void *rbuf, const int *rcounts,
                                       ompi_datatype_t *dtype, struct ompi_op_t *op,
                                       ompi_communicator_t *comm, struct ompi_info_t *info,
                                       ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    int rc = dfccl_reduce_scatter_init_any(m, sbuf, rbuf, rcounts, 0, dtype, op, info, request);

    if (rc != DFCCL_FALLBACK) return rc;
    if (m->previous_reduce_scatter_init == NULL)
        return dfccl_no_init("MPIX_Reduce_scatter_init", comm);
    return m->previous_reduce_scatter_init(sbuf, rbuf, rcounts, dtype, op, comm, info, request,
                                           m->previous_reduce_scatter_init_module);
}

int mca_coll_dfccl_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount,
                                             ompi_datatype_t *dtype, struct ompi_op_t *op,
                                             ompi_communicator_t *comm, struct ompi_info_t *info,
                                             ompi_request_t **request,
                                             mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    int rc = dfccl_reduce_scatter_init_any(m, sbuf, rbuf, NULL, rcount, dtype, op, info, request);

    if (rc != DFCCL_FALLBACK) return rc;
    if (m->previous_reduce_scatter_block_init == NULL)
        return dfccl_no_init("MPIX_Reduce_scatter_block_init", comm);
    return m->previous_reduce_scatter_block_init(sbuf, rbuf, rcount, dtype, op, comm, info,
                                                 request,
                                                 m->previous_reduce_scatter_block_init_module);
}
