/*
 * coll_calls.h - the four collectives under test, blocking, nonblocking or
 * persistent behind one call each (mode; true and false still mean blocking
 * and nonblocking). The nonblocking form is started and waited for; the
 * persistent one initialised, started, waited for and freed; an error from
 * starting either is returned as is, so error classes can be checked for
 * every form.
 */
#ifndef DFCCL_TEST_COLL_CALLS_H
#define DFCCL_TEST_COLL_CALLS_H

#include <stdbool.h>
#include <mpi.h>

#define CALL_NONBLOCKING 0
#define CALL_BLOCKING    1
#define CALL_PERSISTENT  2

int allreduce_call(int mode, const void *sendbuf, void *recvbuf, int count,
                   MPI_Datatype type, MPI_Op op, MPI_Comm comm);

int allgather_call(int mode, const void *sendbuf, int sendcount,
                   MPI_Datatype sendtype, void *recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm);

int reduce_scatter_call(int mode, const void *sendbuf, void *recvbuf,
                        const int *recvcounts, MPI_Datatype type, MPI_Op op,
                        MPI_Comm comm);

int reduce_scatter_block_call(int mode, const void *sendbuf, void *recvbuf,
                              int recvcount, MPI_Datatype type, MPI_Op op,
                              MPI_Comm comm);

#endif /* DFCCL_TEST_COLL_CALLS_H */
