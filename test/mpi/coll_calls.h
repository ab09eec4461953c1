/*
 * coll_calls.h - the four collectives under test, blocking or nonblocking
 * behind one call each. The nonblocking form is started and waited for;
 * an error from starting it is returned as is, so error classes can be
 * checked for both forms.
 */
#ifndef DFCCL_TEST_COLL_CALLS_H
#define DFCCL_TEST_COLL_CALLS_H

#include <stdbool.h>
#include <mpi.h>

int allreduce_call(bool blocking, const void *sendbuf, void *recvbuf, int count,
                   MPI_Datatype type, MPI_Op op, MPI_Comm comm);

int allgather_call(bool blocking, const void *sendbuf, int sendcount,
                   MPI_Datatype sendtype, void *recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm);

int reduce_scatter_call(bool blocking, const void *sendbuf, void *recvbuf,
                        const int *recvcounts, MPI_Datatype type, MPI_Op op,
                        MPI_Comm comm);

int reduce_scatter_block_call(bool blocking, const void *sendbuf, void *recvbuf,
                              int recvcount, MPI_Datatype type, MPI_Op op,
                              MPI_Comm comm);

#endif /* DFCCL_TEST_COLL_CALLS_H */
