/*
 * coll_calls.c - blocking / nonblocking / persistent dispatch of the
 * collectives under test (see coll_calls.h).
 */
#include "coll_calls.h"
#include <mpi-ext.h>   /* after mpi.h: MPIX_*_init */

/* A nonblocking call's wait; a persistent request is started first and
 * freed after. */
static int wait_started(int rc, int mode, MPI_Request *request)
{
    if (rc != MPI_SUCCESS)
        return rc;
    if (mode == CALL_PERSISTENT) {
        rc = MPI_Start(request);
        if (rc == MPI_SUCCESS)
            rc = MPI_Wait(request, MPI_STATUS_IGNORE);
        int freed = MPI_Request_free(request);
        return rc != MPI_SUCCESS ? rc : freed;
    }
    return MPI_Wait(request, MPI_STATUS_IGNORE);
}

int allreduce_call(int mode, const void *sendbuf, void *recvbuf, int count,
                   MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    if (mode == CALL_BLOCKING)
        return MPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
    MPI_Request request = MPI_REQUEST_NULL;
    if (mode == CALL_PERSISTENT)
        return wait_started(MPIX_Allreduce_init(sendbuf, recvbuf, count, type, op, comm,
                                                MPI_INFO_NULL, &request), mode, &request);
    return wait_started(MPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm,
                                       &request), mode, &request);
}

int allgather_call(int mode, const void *sendbuf, int sendcount,
                   MPI_Datatype sendtype, void *recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm)
{
    if (mode == CALL_BLOCKING)
        return MPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                             recvtype, comm);
    MPI_Request request = MPI_REQUEST_NULL;
    if (mode == CALL_PERSISTENT)
        return wait_started(MPIX_Allgather_init(sendbuf, sendcount, sendtype, recvbuf,
                                                recvcount, recvtype, comm, MPI_INFO_NULL,
                                                &request), mode, &request);
    return wait_started(MPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf,
                                       recvcount, recvtype, comm, &request),
                        mode, &request);
}

int reduce_scatter_call(int mode, const void *sendbuf, void *recvbuf,
                        const int *recvcounts, MPI_Datatype type, MPI_Op op,
                        MPI_Comm comm)
{
    if (mode == CALL_BLOCKING)
        return MPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm);
    MPI_Request request = MPI_REQUEST_NULL;
    if (mode == CALL_PERSISTENT)
        return wait_started(MPIX_Reduce_scatter_init(sendbuf, recvbuf, recvcounts, type, op,
                                                     comm, MPI_INFO_NULL, &request),
                            mode, &request);
    return wait_started(MPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, type,
                                            op, comm, &request), mode, &request);
}

int reduce_scatter_block_call(int mode, const void *sendbuf, void *recvbuf,
                              int recvcount, MPI_Datatype type, MPI_Op op,
                              MPI_Comm comm)
{
    if (mode == CALL_BLOCKING)
        return MPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
    MPI_Request request = MPI_REQUEST_NULL;
    if (mode == CALL_PERSISTENT)
        return wait_started(MPIX_Reduce_scatter_block_init(sendbuf, recvbuf, recvcount, type,
                                                           op, comm, MPI_INFO_NULL, &request),
                            mode, &request);
    return wait_started(MPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount,
                                                  type, op, comm, &request),
                        mode, &request);
}
