/*
 * coll_dfccl_persist.c - persistent collectives (MPIX_Allreduce_init and
 * the other three of Open MPI's pcollreq extension) routed to the engine.
 *
 * What can be prepared is prepared at init: the route (as the nonblocking
 * form would take it), the staging or packing memory, the scheduling
 * priority and, on the host engine, the collective's plan
 * (dfccl_coll_prepare). MPI_Start only copies a staged input in and
 * submits; the run takes its place in the communicator's order as any
 * call does, so persistent collectives on several communicators, started
 * in different orders on different ranks, complete as the nonblocking
 * ones do. The request is inactive between runs and goes back to the free
 * list once it is freed and its last run completed.
 */
#include <stdlib.h>
#include <string.h>
#include "coll_dfccl.h"

typedef struct mca_coll_dfccl_persist_t {
    mca_coll_dfccl_module_t *module;   /* the request holds the communicator */
    bool                     on_gpu;
    dfccl_coll_args_t        args;     /* staged pointers where staged; counts: ours */
    size_t                  *counts;
    dfccl_prepared_t        *prepared; /* host engine: planned once; NULL: each start posts */
} mca_coll_dfccl_persist_t;

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
    /* the input as it is now; an error here fails the start on this rank,
     * and its peers' runs then end with the watchdog's report */
    rc = mca_coll_dfccl_stage_copy_in(req);
    if (rc != OMPI_SUCCESS) {
        dfccl_persist_deactivate(r);
        return rc;
    }
    OPAL_THREAD_ADD_FETCH32(&req->refs, 1);   /* the engine's, for this run */
    args.user = req;
    rc = mca_coll_dfccl_submit(p->module, p->on_gpu, &args, p->prepared, req);
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

int mca_coll_dfccl_persist_init(mca_coll_dfccl_module_t *m, bool on_gpu, bool stage,
                                const mca_coll_dfccl_pack_t *pack, dfccl_coll_args_t *args,
                                ompi_request_t **request)
{
    int rank = ompi_comm_rank(m->comm), size = ompi_comm_size(m->comm), rc = OMPI_SUCCESS;
    mca_coll_dfccl_request_t *req;
    mca_coll_dfccl_persist_t *p;
    dfccl_status_t status;

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
    else if (stage) rc = mca_coll_dfccl_stage_setup(req, &p->args, rank, size, on_gpu);
    if (rc != OMPI_SUCCESS) {   /* an error, never a lone fallback */
        mca_coll_dfccl_request_release(req);
        return rc;
    }
    if (!on_gpu) {
        /* a call the engine rejects is not prepared: each start then posts
         * it, and the rejection reaches every rank as a posted call's does */
        status = dfccl_coll_prepare(m->engine_comm, &p->args, &p->prepared);
        if (status != DFCCL_OK)
            DFCCL_VERBOSE(1, "%s on comm %s: not prepared (%s); each start posts it",
                          dfccl_coll_type_name(args->type), m->comm->c_name,
                          dfccl_status_string(status));
    }
    DFCCL_VERBOSE(2, "%s on comm %s prepared (persistent%s%s)", dfccl_coll_type_name(args->type),
                  m->comm->c_name, on_gpu ? ", GPU" : "", stage || pack ? ", staged" : "");
    *request = &req->super.super;
    return OMPI_SUCCESS;
}

void mca_coll_dfccl_persist_drop(mca_coll_dfccl_request_t *req)
{
    mca_coll_dfccl_persist_t *p = req->persist;

    if (p == NULL) return;
    dfccl_coll_prepared_free(p->prepared);
    free(p->counts);
    free(p);
    req->persist = NULL;
}
