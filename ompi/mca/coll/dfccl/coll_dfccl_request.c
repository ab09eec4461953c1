/*
 * coll_dfccl_request.c - MPI requests for collectives the engine runs. They
 * come from a free list and go back when both the engine (completion seen)
 * and the caller (MPI_Wait/MPI_Request_free, or the blocking call) are done.
 */
#include "coll_dfccl.h"

static void dfccl_request_construct(mca_coll_dfccl_request_t *req)
{
    req->comm = NULL;
    req->refs = 0;
    req->stage_buf = NULL;
    req->pack_dtype = NULL;
}

OBJ_CLASS_INSTANCE(mca_coll_dfccl_request_t, ompi_coll_base_nbc_request_t, dfccl_request_construct,
                   NULL);

static int dfccl_request_free(ompi_request_t **request)
{
    mca_coll_dfccl_request_t *req = (mca_coll_dfccl_request_t *)*request;

    mca_coll_dfccl_request_release(req);   /* the caller's reference */
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static int dfccl_request_cancel(ompi_request_t *request, int complete)
{
    /* a collective cannot be cancelled (MPI 3.1, 5.12) */
    return MPI_ERR_REQUEST;
}

mca_coll_dfccl_request_t *mca_coll_dfccl_request_get(ompi_communicator_t *comm)
{
    opal_free_list_item_t *item = opal_free_list_get(&mca_coll_dfccl_component.requests);
    mca_coll_dfccl_request_t *req = (mca_coll_dfccl_request_t *)item;

    if (req == NULL) return NULL;
    OMPI_REQUEST_INIT(&req->super.super, false);
    req->super.super.req_type = OMPI_REQUEST_COLL;
    req->super.super.req_state = OMPI_REQUEST_ACTIVE;
    req->super.super.req_free = dfccl_request_free;
    req->super.super.req_cancel = dfccl_request_cancel;
    req->super.super.req_status.MPI_ERROR = MPI_SUCCESS;
    req->super.super.req_status._cancelled = 0;
    req->super.super.req_mpi_object.comm = comm;
    /* what Open MPI retains for the call (released at completion) */
    req->super.cb.req_complete_cb = NULL;
    req->super.req_complete_cb_data = NULL;
    req->super.data.objs[0] = NULL;
    req->super.data.objs[1] = NULL;
    req->refs = 2;
    req->comm = comm;
    req->stage_buf = NULL;
    req->pack_dtype = NULL;
    OBJ_RETAIN(comm);   /* MPI_Comm_free may come before completion */
    return req;
}

void mca_coll_dfccl_request_release(mca_coll_dfccl_request_t *req)
{
    if (OPAL_THREAD_ADD_FETCH32(&req->refs, -1) != 0) return;
    mca_coll_dfccl_stage_drop(req);   /* the engine is done with it too */
    OBJ_RELEASE(req->comm);
    req->comm = NULL;
    OMPI_REQUEST_FINI(&req->super.super);
    opal_free_list_return(&mca_coll_dfccl_component.requests, (opal_free_list_item_t *)req);
}
