/*
 * coll_dfccl_request.c - MPI requests for collectives the engine runs, and
 * their submission. They come from a free list and go back when both the
 * engine (completion seen) and the caller (MPI_Wait/MPI_Request_free, or
 * the blocking call) are done.
 */
#include <stdlib.h>
#include "coll_dfccl.h"
#include "opal/util/info.h"

static void dfccl_request_construct(mca_coll_dfccl_request_t *req)
{
    req->comm = NULL;
    req->refs = 0;
    req->pack_buf = NULL;
    req->pack_dtype = NULL;
    req->pack_send_dtype = NULL;
    req->persist = NULL;
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
    req->pack_buf = NULL;
    req->pack_dtype = NULL;
    req->pack_send_dtype = NULL;
    req->persist = NULL;
    OBJ_RETAIN(comm);   /* MPI_Comm_free may come before completion */
    return req;
}

void mca_coll_dfccl_request_release(mca_coll_dfccl_request_t *req)
{
    if (OPAL_THREAD_ADD_FETCH32(&req->refs, -1) != 0) return;
    mca_coll_dfccl_pack_drop(req);   /* the engine is done with it too */
    mca_coll_dfccl_persist_drop(req);
    OBJ_RELEASE(req->comm);
    req->comm = NULL;
    OMPI_REQUEST_FINI(&req->super.super);
    opal_free_list_return(&mca_coll_dfccl_component.requests, (opal_free_list_item_t *)req);
}
/* Scheduling priority: the communicator's info key "dfccl_priority"
 * (MPI_Comm_dup_with_info, or MPI_Comm_set_info before its first call the
 * engine carries), else the MCA default. It
 * should be equal on all ranks: it orders collectives in the engine, which
 * then converges faster; a mismatch costs time, never correctness. */
int mca_coll_dfccl_priority_of(mca_coll_dfccl_module_t *m)
{
    ompi_communicator_t *comm = m->comm;
    char value[32];
    int flag = 0;

    if (m->priority_known) return m->priority;
    m->priority = mca_coll_dfccl_component.default_priority;
    if (comm->super.s_info != NULL &&
        opal_info_get(comm->super.s_info, "dfccl_priority", sizeof(value) - 1, value, &flag) ==
            OPAL_SUCCESS && flag)
        m->priority = atoi(value);
    m->priority_known = true;
    return m->priority;
}


static int dfccl_submit_failed(mca_coll_dfccl_module_t *m, const dfccl_coll_args_t *args,
                               dfccl_status_t status);

int mca_coll_dfccl_submit(mca_coll_dfccl_module_t *m, bool on_gpu, mca_coll_dfccl_side_t *channel,
                          dfccl_coll_args_t *args, dfccl_prepared_t *prepared,
                          mca_coll_dfccl_request_t *req)
{
    mca_coll_dfccl_side_t *side = channel;
    dfccl_status_t status;

    opal_atomic_add_fetch_32(&mca_coll_dfccl_component.in_flight, 1);
    req->on_host = !on_gpu;
    if (!on_gpu) opal_atomic_add_fetch_32(&mca_coll_dfccl_component.host_in_flight, 1);
    if (side == NULL && (side = mca_coll_dfccl_device_side(m, on_gpu)) != NULL) {
        /* set up on the communicator's first such call */
        if (side->state == MCA_COLL_DFCCL_ENGINE_UNSET) {
            int rc = mca_coll_dfccl_side_start(side, mca_coll_dfccl_component.context,
                                               DFCCL_BACKEND_GPU, ompi_comm_get_cid(m->comm));
            if (rc != OMPI_SUCCESS) {
                opal_atomic_add_fetch_32(&mca_coll_dfccl_component.in_flight, -1);
                return rc;
            }
        }
    }
    if (side != NULL) {
        bool posted;
        int rc = mca_coll_dfccl_side_submit(side, args, prepared, &posted);
        if (posted) return OMPI_SUCCESS;
        opal_atomic_add_fetch_32(&mca_coll_dfccl_component.in_flight, -1);
        if (!on_gpu) opal_atomic_add_fetch_32(&mca_coll_dfccl_component.host_in_flight, -1);
        return rc == OMPI_SUCCESS ? OMPI_ERROR : rc;
    }
    status = prepared != NULL ? dfccl_coll_start(prepared, args->user)
                              : dfccl_coll_post(m->engine_comm, args);
    if (status == DFCCL_OK) return OMPI_SUCCESS;
    return dfccl_submit_failed(m, args, status);
}

int mca_coll_dfccl_run_host(mca_coll_dfccl_module_t *m, dfccl_coll_args_t *args,
                            mca_coll_dfccl_request_t *req, bool *done)
{
    dfccl_status_t status;

    req->on_host = true;
    status = dfccl_coll_run(m->engine_comm, args);
    *done = status == DFCCL_OK;
    if (status == DFCCL_OK) return OMPI_SUCCESS;
    /* Counted in flight only once posted: four atomic additions cost a
     * call that ends here much. Another thread's progress may poll the
     * completion before these run; its decrements then leave the counts
     * below zero for a moment, which makes a poll skip once, no more. */
    opal_atomic_add_fetch_32(&mca_coll_dfccl_component.in_flight, 1);
    opal_atomic_add_fetch_32(&mca_coll_dfccl_component.host_in_flight, 1);
    if (status == DFCCL_INPROGRESS) return OMPI_SUCCESS;
    return dfccl_submit_failed(m, args, status);
}

/* Undoes the counts of a call that the engine did not post (or that failed
 * at once) and says why. */
static int dfccl_submit_failed(mca_coll_dfccl_module_t *m, const dfccl_coll_args_t *args,
                               dfccl_status_t status)
{
    opal_atomic_add_fetch_32(&mca_coll_dfccl_component.in_flight, -1);
    opal_atomic_add_fetch_32(&mca_coll_dfccl_component.host_in_flight, -1);
    /* a communicator that broke was said once, where it broke */
    if (status == DFCCL_ERR_BROKEN || status == DFCCL_ERR_PEER_FAILED)
        DFCCL_VERBOSE(1, "%s on comm %s fails at once: %s", dfccl_coll_type_name(args->type),
                      m->comm->c_name, dfccl_status_string(status));
    else
        DFCCL_ERROR("%s on comm %s not posted: %s", dfccl_coll_type_name(args->type),
                    m->comm->c_name, dfccl_status_string(status));
    return mca_coll_dfccl_request_error(status);
}
