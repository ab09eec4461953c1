/*
 * coll_calls.c - blocking / nonblocking dispatch of the collectives under
 * test (see coll_calls.h).
 */
#include "coll_calls.h"

static int wait_started(int rc, MPI_Request *request)
{
    if (rc != MPI_SUCCESS)
        return rc;
    return MPI_Wait(request, MPI_STATUS_IGNORE);
}

int allreduce_call(bool blocking, const void *sendbuf, void *recvbuf, int count,
                   MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    if (blocking)
        return MPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
    MPI_Request request = MPI_REQUEST_NULL;
    return wait_started(MPI_Iallreduce(sendbuf, recvbuf, count, type, op, comm,
                                       &request), &request);
}

int allgather_call(bool blocking, const void *sendbuf, int sendcount,
                   MPI_Datatype sendtype, void *recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm)
{
    if (blocking)
        return MPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                             recvtype, comm);
    MPI_Request request = MPI_REQUEST_NULL;
    return wait_started(MPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf,
                                       recvcount, recvtype, comm, &request),
                        &request);
}

int reduce_scatter_call(bool blocking, const void *sendbuf, void *recvbuf,
                        const int *recvcounts, MPI_Datatype type, MPI_Op op,
                        MPI_Comm comm)
{
    if (blocking)
        return MPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm);
    MPI_Request request = MPI_REQUEST_NULL;
    return wait_started(MPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, type,
                                            op, comm, &request), &request);
}

int reduce_scatter_block_call(bool blocking, const void *sendbuf, void *recvbuf,
                              int recvcount, MPI_Datatype type, MPI_Op op,
                              MPI_Comm comm)
{
    if (blocking)
        return MPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
    MPI_Request request = MPI_REQUEST_NULL;
    return wait_started(MPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount,
                                                  type, op, comm, &request),
                        &request);
}
