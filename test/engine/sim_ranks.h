/*
 * sim_ranks.h - ranks without MPI: fork N processes that share an anonymous
 * mapping with a process-shared barrier, and give them an allgather for the
 * engine's bootstrap. Also input patterns and reference results for checks.
 */
#ifndef DFCCL_SIM_RANKS_H
#define DFCCL_SIM_RANKS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "include/dfccl.h"

/* In a rank's body (which has `rank` in scope): fail the rank with where
 * and why. */
#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        if (!(cond)) {                                                    \
            fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                 \
            fprintf(stderr, "\n");                                        \
            return 1;                                                     \
        }                                                                 \
    } while (0)

typedef struct sim_world sim_world_t;

/* Runs body(rank, size, world, arg) in size forked processes; returns the
 * number of ranks that exited non-zero or died (a rank stuck for longer than
 * timeout_sec is killed and counts as failed). */
int sim_run(int size, double timeout_sec,
            int (*body)(int rank, int size, sim_world_t *world, void *arg), void *arg);

/* A blocking allgather among the world's ranks (bytes <= 4096). */
int sim_allgather(const void *send, void *recv, size_t bytes, void *world);
/* Communicator parameters whose bootstrap is a non-blocking exchange in the
 * world's shared memory; every rank creates its communicators in the same
 * order. */
dfccl_comm_params_t sim_comm_params(sim_world_t *world, int rank, uint64_t key,
                                    dfccl_backend_t backend);

/* Deterministic input element i of rank r, stored into out (esize bytes);
 * chosen so that every (type, op) reduction over <= 16 ranks is exact. */
void sim_fill_input(void *buf, size_t count, dfccl_dtype_t dtype, dfccl_op_t op, int rank,
                    size_t first_index);
/* Expected result of reducing element `index` over size ranks. */
void sim_expected(void *out, dfccl_dtype_t dtype, dfccl_op_t op, int size, size_t index);

/* The tests' three calls of n elements on rank of size ranks: a double sum
 * allreduce, an int32 allgather of n per rank and an int64 reduce-scatter
 * with rs_op over rs_counts (total elements), their inputs filled by
 * sim_fill_input and their arguments in args[] (user NULL, no callback). */
typedef struct sim_three {
    double    *ar_in, *ar_out;
    int32_t   *ag_in, *ag_out;
    int64_t   *rs_in, *rs_out;
    dfccl_op_t rs_op;
    dfccl_coll_args_t args[3];
} sim_three_t;

/* 0, or 1 when out of memory. */
int sim_three_alloc(sim_three_t *t, int rank, int size, size_t n, const size_t *rs_counts,
                    size_t total, dfccl_op_t rs_op);
void sim_three_free(sim_three_t *t);
/* 0 when all results are right, else 1 after a line saying what is wrong. */
int sim_three_check(const sim_three_t *t, int rank, int size, size_t n, const size_t *rs_counts);

/* The shared-memory segments in /dev/shm named after this process
 * (dfccl-PID-...): compared before and after, they show what was left. */
int sim_own_segments(void);

/* 1 when a CUDA device is usable (asked in a forked child); else 0 after a
 * "SKIP: why" line. */
int sim_gpu_usable(void);

#endif
