/*
 * p2p_verdict.h - agreement between ranks over point-to-point messages
 * only. The disorder tests make the engine fail collectives on purpose (or
 * find it failing), so their verdict must not itself be a collective the
 * engine carries: rank 0 receives every rank's value with MPI_Recv and
 * sends the result back with MPI_Send, on MPI_COMM_WORLD.
 */
#ifndef DFCCL_TEST_P2P_VERDICT_H
#define DFCCL_TEST_P2P_VERDICT_H

#include <stddef.h>

#include "test_util.h"

typedef enum { P2P_MIN, P2P_MAX, P2P_SUM } p2p_op_t;

/* Every rank of MPI_COMM_WORLD gets op over all ranks' values. */
long p2p_reduce_long(long value, p2p_op_t op);

/*
 * verdict_log_report over point-to-point messages on MPI_COMM_WORLD: a
 * call passed when it passed on every rank; rank 0 prints
 * "<program>: N passed, N failed in S s". Returns the number failed on
 * every rank.
 */
size_t p2p_verdict_report(const verdict_log_t *log, const char *program,
                          double elapsed_s);

#endif /* DFCCL_TEST_P2P_VERDICT_H */
