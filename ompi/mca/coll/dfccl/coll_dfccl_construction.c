/*
 * coll_dfccl_construction.c - the calls Open MPI builds communicators with.
 *
 * Open MPI agrees on a new communicator's context id, and activates it,
 * with nonblocking allreduces of one MPI_INT (MPI_MAX, MPI_MIN) over the
 * parent; its error path leaves the id taken when such a request fails,
 * which crashes MPI_Finalize. Calls of that signature never enter the
 * engine and need no agreement on their route (the signature decides it
 * alike on every rank): a communicator whose engine side failed can still
 * be duplicated, and nothing of its construction depends on the engine.
 * A rank whose buffers are in device memory passes them through host
 * memory (four bytes each way), so that its route is its peers'.
 */
#include <stdlib.h>
#include <string.h>
#include "coll_dfccl.h"

bool mca_coll_dfccl_is_construction_call(int count, ompi_datatype_t *dtype, struct ompi_op_t *op)
{
    return count == 1 && dtype == MPI_INT && (op == MPI_MAX || op == MPI_MIN);
}

typedef struct {
    int   in, out;
    void *rbuf;   /* the caller's result, in device memory */
} dfccl_construction_stage_t;

static int dfccl_free_on_done(ompi_request_t *request)
{
    free(request->req_complete_cb_data);
    return OMPI_SUCCESS;
}

static int dfccl_construction_done(ompi_request_t *request)
{
    dfccl_construction_stage_t *t = request->req_complete_cb_data;

    if (request->req_status.MPI_ERROR == MPI_SUCCESS &&
        mca_coll_dfccl_memory_copy(t->rbuf, &t->out, sizeof(int), true) != OMPI_SUCCESS)
        request->req_status.MPI_ERROR = MPI_ERR_OTHER;
    free(t);
    return OMPI_SUCCESS;
}

int mca_coll_dfccl_construction_iallreduce(mca_coll_dfccl_module_t *m, const void *sbuf,
                                           void *rbuf, struct ompi_op_t *op,
                                           ompi_communicator_t *comm, ompi_request_t **request)
{
    dfccl_construction_stage_t *t;
    bool send_dev, recv_dev;
    int rc;

    mca_coll_dfccl_memory_kinds(sbuf, rbuf, &send_dev, &recv_dev);
    if (!send_dev && !recv_dev)
        return m->previous_iallreduce(sbuf, rbuf, 1, MPI_INT, op, comm, request,
                                      m->previous_iallreduce_module);
    if ((t = malloc(sizeof(*t))) == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
    t->rbuf = rbuf;
    /* the input: the send buffer, or (in place) the receive buffer */
    const void *src = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    bool src_dev = sbuf == MPI_IN_PLACE ? recv_dev : send_dev;
    if (src_dev ? mca_coll_dfccl_memory_copy(&t->in, src, sizeof(int), false) != OMPI_SUCCESS
                : (memcpy(&t->in, src, sizeof(int)), false)) {
        free(t);
        return MPI_ERR_OTHER;
    }
    if (!recv_dev) {   /* only the input was on the device */
        rc = m->previous_iallreduce(&t->in, rbuf, 1, MPI_INT, op, comm, request,
                                    m->previous_iallreduce_module);
        if (rc == OMPI_SUCCESS) rc = ompi_request_set_callback(*request, dfccl_free_on_done, t);
        else free(t);
        return rc;
    }
    rc = m->previous_iallreduce(&t->in, &t->out, 1, MPI_INT, op, comm, request,
                                m->previous_iallreduce_module);
    if (rc != OMPI_SUCCESS) {
        free(t);
        return rc;
    }
    return ompi_request_set_callback(*request, dfccl_construction_done, t);
}

