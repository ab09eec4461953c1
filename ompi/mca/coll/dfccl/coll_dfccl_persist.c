/*
 * coll_dfccl_persist.c - persistent collectives (MPIX_Allreduce_init and
 * the other three of Open MPI's pcollreq extension) routed to the engine.
 *
 * MPI-4 matches persistent collectives at their initialisation, which
 * every rank makes in the same order; their starts may come in any order,
 * and interleave with the communicator's other collectives differently on
 * each rank. So each request gets a channel of its own at init: a private
 * engine communicator (the init's ordinal names it, identically on every
 * rank) whose runs are its starts, one after the other. Starts on several
 * channels are collectives on several communicators, which the engine
 * runs in any order without deadlock. The channel is set up in the
 * background (coll_dfccl_setup.c): init does not wait for the other
 * ranks, and a start before the set-up ended is queued. A program that
 * promises in-order starts takes the cheaper path: its runs take their
 * place in the communicator's own order, as nonblocking calls do. MPI-4.1
 * names that promise mpi_assert_strict_persistent_collective_ordering, a
 * key of 48 characters, which Open MPI 4.1's MPI_Info_set refuses
 * (MPI_MAX_INFO_KEY is 36 there); dfccl_strict_persistent_order says the
 * same where it cannot. Either, set to true on the init's info or the
 * communicator's, alike on every rank.
 *
 * What can be prepared is prepared once: the route (as the nonblocking
 * form would take it), the packing memory, the scheduling priority, the
 * collective's plan (host engine: its schedule; GPU side: its algorithm,
 * channels and ring plan) and staging memory (dfccl_coll_prepare, once its
 * communicator is ready). MPI_Start only
 * packs an input and submits. The request is inactive between
 * runs and goes back to the free list once it is freed and its last run
 * completed; its channel goes with it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "coll_dfccl.h"
#include "ompi/info/info.h"
#include "opal/util/info.h"

#define DFCCL_STRICT_ORDER_KEY       "mpi_assert_strict_persistent_collective_ordering"
#define DFCCL_STRICT_ORDER_KEY_SHORT "dfccl_strict_persistent_order"

typedef struct mca_coll_dfccl_persist_t {
    mca_coll_dfccl_module_t *module;   /* the request holds the communicator */
    bool                     on_gpu;
    dfccl_coll_args_t        args;     /* packed pointers where packed; counts: ours */
    size_t                  *counts;
    dfccl_prepared_t        *prepared; /* planned once; NULL: each start posts */
    bool                     prepare_tried;
    mca_coll_dfccl_side_t   *channel;  /* NULL: the communicator's own order (strict) */
    char                     label[64];
} mca_coll_dfccl_persist_t;

/* Plans the call once on the communicator it runs on, once that one's
 * set-up has ended. A call the engine rejects is not prepared: each start
 * then posts it, and the rejection reaches every rank as a posted call's
 * does. */
static void dfccl_persist_prepare(mca_coll_dfccl_persist_t *p)
{
    /* the side it runs on: its channel, else the communicator's own */
    mca_coll_dfccl_side_t *side =
        p->channel != NULL ? p->channel : mca_coll_dfccl_device_side(p->module, p->on_gpu);
    dfccl_comm_t *comm = side != NULL ? side->comm : p->module->engine_comm;
    dfccl_status_t status;

    if (p->prepare_tried) return;
    if (side != NULL && side->state != MCA_COLL_DFCCL_ENGINE_READY) return;
    p->prepare_tried = true;
    opal_atomic_rmb();   /* pairs with the set-up's publication */
    status = dfccl_coll_prepare(comm, &p->args, &p->prepared);
    if (status != DFCCL_OK)
        DFCCL_VERBOSE(1, "%s on comm %s: not prepared (%s); each start posts it",
                      dfccl_coll_type_name(p->args.type), p->module->comm->c_name,
                      dfccl_status_string(status));
}

/* Whether an info object says "true" for the strict-ordering assertion,
 * under either name. */
static bool dfccl_info_strict(opal_info_t *info)
{
    const char *keys[] = { DFCCL_STRICT_ORDER_KEY, DFCCL_STRICT_ORDER_KEY_SHORT };
    bool value = false;
    int flag = 0;

    if (info == NULL) return false;
    for (int i = 0; i < 2; i++)
        if (opal_info_get_bool(info, (char *)keys[i], &value, &flag) == OPAL_SUCCESS && flag &&
            value)
            return true;
    return false;
}

static void dfccl_persist_deactivate(ompi_request_t *r)
{
    r->req_state = OMPI_REQUEST_INACTIVE;
    r->req_complete = REQUEST_COMPLETED;
}

static int dfccl_persist_start_one(mca_coll_dfccl_request_t *req)
{
    mca_coll_dfccl_persist_t *p = req->persist;
    ompi_request_t *r = &req->super.super;
    dfccl_coll_args_t args = p->args;
    int rc;

    if (r->req_state == OMPI_REQUEST_ACTIVE) return MPI_ERR_REQUEST;   /* its run goes on */
    r->req_status.MPI_ERROR = MPI_SUCCESS;
    r->req_status._cancelled = 0;
    r->req_state = OMPI_REQUEST_ACTIVE;
    r->req_complete = REQUEST_PENDING;
    /* a packed input as it is now (the engine copies a staged one in); an
     * error here fails the start on this rank, and its peers' runs then end
     * with the watchdog's report */
    rc = mca_coll_dfccl_pack_copy_in(req);
    if (rc != OMPI_SUCCESS) {
        dfccl_persist_deactivate(r);
        return rc;
    }
    OPAL_THREAD_ADD_FETCH32(&req->refs, 1);   /* the engine's, for this run */
    args.user = req;
    dfccl_persist_prepare(p);
    rc = mca_coll_dfccl_submit(p->module, p->on_gpu, p->channel, &args, p->prepared, req);
    if (rc != OMPI_SUCCESS) {
        OPAL_THREAD_ADD_FETCH32(&req->refs, -1);
        dfccl_persist_deactivate(r);
        if (rc == OMPI_ERR_NOT_SUPPORTED) rc = MPI_ERR_UNSUPPORTED_OPERATION;
        return rc;
    }
    DFCCL_VERBOSE(2, "%s on comm %s started (persistent%s%s)", dfccl_coll_type_name(args.type),
                  p->module->comm->c_name, p->on_gpu ? ", GPU" : "",
                  p->prepared != NULL ? ", prepared plan" : "");
    return OMPI_SUCCESS;
}

/* MPI_Start (count 1) and MPI_Startall (the requests that share this
 * function), in the caller's order; the first failure ends the call. */
static int dfccl_persist_start(size_t count, ompi_request_t **requests)
{
    for (size_t i = 0; i < count; i++) {
        int rc = dfccl_persist_start_one((mca_coll_dfccl_request_t *)requests[i]);
        if (rc != OMPI_SUCCESS) return rc;
    }
    return OMPI_SUCCESS;
}

int mca_coll_dfccl_persist_init(mca_coll_dfccl_module_t *m, bool on_gpu,
                                const mca_coll_dfccl_pack_t *pack, dfccl_coll_args_t *args,
                                struct ompi_info_t *info, uint64_t ordinal,
                                ompi_request_t **request)
{
    int rank = ompi_comm_rank(m->comm), size = ompi_comm_size(m->comm), rc = OMPI_SUCCESS;
    mca_coll_dfccl_request_t *req;
    mca_coll_dfccl_persist_t *p;
    bool strict;

    req = mca_coll_dfccl_request_get(m->comm);
    if (req == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
    req->refs = 1;   /* the caller's, until MPI_Request_free; each run adds the engine's */
    OMPI_REQUEST_INIT(&req->super.super, true);
    req->super.super.req_start = dfccl_persist_start;
    p = calloc(1, sizeof(*p));
    if (p == NULL) {
        mca_coll_dfccl_request_release(req);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    req->persist = p;
    p->module = m;
    p->on_gpu = on_gpu;
    p->args = *args;
    p->args.priority = mca_coll_dfccl_priority_of(m);
    if (args->type == DFCCL_COLL_REDUCE_SCATTER) {
        if ((p->counts = malloc(sizeof(size_t) * (size_t)size)) == NULL) {
            mca_coll_dfccl_request_release(req);
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        memcpy(p->counts, args->counts, sizeof(size_t) * (size_t)size);
        p->args.counts = p->counts;
    }
    if (pack != NULL) rc = mca_coll_dfccl_pack_setup(req, &p->args, pack, rank, size);
    if (rc != OMPI_SUCCESS) {   /* an error, never a lone fallback */
        mca_coll_dfccl_request_release(req);
        return rc;
    }
    /* the assertion must be given alike on every rank (MPI-4.1), so all
     * ranks take the same path */
    strict = dfccl_info_strict(info != NULL ? &info->super : NULL) ||
             dfccl_info_strict(m->comm->super.s_info);
    if (!strict) {
        /* the channel's key: the communicator's context id, and the init's
         * ordinal above it; unique in the process, equal on every rank */
        uint64_t key = (uint64_t)ompi_comm_get_cid(m->comm) | ((ordinal + 1) << 32);
        snprintf(p->label, sizeof(p->label), "channel of persistent request #%llu",
                 (unsigned long long)ordinal);
        if ((p->channel = calloc(1, sizeof(*p->channel))) == NULL) {
            mca_coll_dfccl_request_release(req);
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        mca_coll_dfccl_side_init(p->channel, m, DFCCL_TAG_CHANNEL(ordinal), p->label, "");
        rc = mca_coll_dfccl_side_start(p->channel, mca_coll_dfccl_component.context,
                                       on_gpu ? DFCCL_BACKEND_GPU : DFCCL_BACKEND_HOST, key);
        if (rc != OMPI_SUCCESS) {
            mca_coll_dfccl_request_release(req);
            return rc;
        }
    }
    dfccl_persist_prepare(p);   /* the communicator's own order: now */
    DFCCL_VERBOSE(2, "%s on comm %s prepared (persistent%s%s%s)", dfccl_coll_type_name(args->type),
                  m->comm->c_name, on_gpu ? ", GPU" : "",
                  args->buffers != DFCCL_BUFFERS_NATIVE || pack ? ", staged" : "",
                  strict ? ", strict order" : ", own channel");
    *request = &req->super.super;
    return OMPI_SUCCESS;
}

void mca_coll_dfccl_persist_drop(mca_coll_dfccl_request_t *req)
{
    mca_coll_dfccl_persist_t *p = req->persist;

    if (p == NULL) return;
    dfccl_coll_prepared_free(p->prepared);
    if (p->channel != NULL) {
        mca_coll_dfccl_side_fini(p->channel);
        free(p->channel);
    }
    free(p->counts);
    free(p);
    req->persist = NULL;
}
