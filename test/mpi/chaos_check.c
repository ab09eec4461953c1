/*
 * chaos_check.c - the chaos-order workload: the eight gradient allreduces
 * of a ResNet-50 step, each on its own communicator, issued every
 * iteration as nonblocking calls in a fresh random order per rank and then
 * waited for with MPI_Waitall.
 *
 * This is what data-parallel training does when gradients become ready in
 * a different order on every worker. An engine in strict submission order
 * deadlocks on it; a preemptive one completes every iteration. Results are
 * checked bit-exactly (float sums of small integers are exact in any
 * order), the engine's allreduce counter must rise by 8 per iteration, and
 * one verdict per iteration travels point-to-point (p2p_verdict.c).
 * --memory device hands MPI device buffers (coll_case.c).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

#include "chaos_sizes.h"
#include "coll_case.h"
#include "p2p_verdict.h"
#include "test_rng.h"
#include "test_util.h"

#define MAX_PRINTED 20

static const case_type_t float_sum = { MPI_FLOAT, "MPI_FLOAT", DFCCL_FLOAT, DFCCL_OP_SUM };

int main(int argc, char **argv)
{
    int world_rank, world_size, iterations = 20, printed = 0;
    uint64_t seed = 1;
    expect_mode_t expect = EXPECT_ENGINE;
    /* Device selection must precede MPI_Init. */
    test_memory_kind_t memory = test_memory_setup(&argc, argv, "chaos_check");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = value != NULL;
        if (ok && strcmp(argv[i], "--iterations") == 0)
            ok = (iterations = atoi(value)) > 0;
        else if (ok && strcmp(argv[i], "--seed") == 0)
            seed = strtoull(value, NULL, 0);
        else if (ok && strcmp(argv[i], "--expect") == 0)
            ok = expect_mode_parse(value, &expect) == 0;
        else
            ok = false;
        if (!ok) {
            if (world_rank == 0)
                fprintf(stderr, "usage: chaos_check [--iterations N] [--seed S] "
                                "[--expect engine|stock] [--memory host|device|mixed]\n");
            MPI_Finalize();
            return 2;
        }
        i++;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (world_rank == 0)
        printf("chaos_check: np=%d iterations=%d seed=%" PRIu64 " expect=%s memory=%s\n",
               world_size, iterations, seed, expect_mode_name(expect),
               test_memory_name(memory));

    /* Communicators and their engine side are set up in one order on every
     * rank (the set-up is a blocking stock collective). */
    coll_case_t cases[CHAOS_GRADIENTS];
    for (int g = 0; g < CHAOS_GRADIENTS; g++) {
        cases[g] = (coll_case_t){ .kind = CASE_ALLREDUCE, .type = &float_sum,
                                  .count = chaos_gradient_floats[g],
                                  .seed = (uint32_t)(seed * 31 + (uint64_t)g),
                                  .memory = memory };
        MPI_Comm_dup(MPI_COMM_WORLD, &cases[g].comm);
        int one = 1, sum = 0;
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, cases[g].comm);
        if (coll_case_prepare(&cases[g]) != 0) {
            fprintf(stderr, "rank %d: out of memory\n", world_rank);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    test_rng_t mine;
    test_rng_init(&mine, test_rng_mix(seed, 0x30000 + (uint64_t)world_rank));
    verdict_log_t log;
    verdict_log_init(&log);
    double started = MPI_Wtime();

    for (int it = 0; it < iterations; it++) {
        int order[CHAOS_GRADIENTS];
        MPI_Request requests[CHAOS_GRADIENTS];
        MPI_Status statuses[CHAOS_GRADIENTS];
        for (int g = 0; g < CHAOS_GRADIENTS; g++) {
            order[g] = g;
            requests[g] = MPI_REQUEST_NULL;
            if (it > 0)
                coll_case_reset(&cases[g]);
        }
        test_rng_shuffle(&mine, order, CHAOS_GRADIENTS);
        engine_snapshot_t before;
        engine_snapshot_take(&before);
        bool passed = true;
        char why[MPI_MAX_ERROR_STRING + 64];
        for (int i = 0; i < CHAOS_GRADIENTS; i++) {
            int rc = coll_case_start(&cases[order[i]], &requests[order[i]]);
            if (rc != MPI_SUCCESS) {
                coll_case_error_text(rc, why, sizeof why);
                if (printed++ < MAX_PRINTED)
                    fprintf(stderr, "FAIL rank %d iteration %d gradient %d start: %s\n",
                            world_rank, it, order[i], why);
                passed = false;
            }
        }
        int rc = MPI_Waitall(CHAOS_GRADIENTS, requests, statuses);
        for (int g = 0; g < CHAOS_GRADIENTS; g++) {
            int error = rc == MPI_ERR_IN_STATUS ? statuses[g].MPI_ERROR : rc;
            bool ok = error == MPI_SUCCESS;
            if (!ok)
                coll_case_error_text(error, why, sizeof why);
            else
                ok = coll_case_verify(&cases[g], why, sizeof why);
            if (!ok) {
                passed = false;
                if (printed++ < MAX_PRINTED)
                    fprintf(stderr, "FAIL rank %d iteration %d gradient %d (%zu floats): %s\n",
                            world_rank, it, g, cases[g].count, why);
            }
        }
        uint64_t rise = expect == EXPECT_ENGINE ? CHAOS_GRADIENTS : 0;
        if (!engine_rise_ok(&before, DFCCL_COLL_ALLREDUCE, rise, why, sizeof why)) {
            passed = false;
            if (printed++ < MAX_PRINTED)
                fprintf(stderr, "FAIL rank %d iteration %d counters: %s\n", world_rank, it, why);
        }
        verdict_log_record(&log, passed);
        /* After an error anywhere, further iterations only pile up timeouts. */
        if (p2p_reduce_long(!passed, P2P_MAX) != 0) {
            if (world_rank == 0)
                printf("chaos_check: failures in iteration %d; stopping\n", it);
            break;
        }
    }
    size_t failed = p2p_verdict_report(&log, "chaos_check", MPI_Wtime() - started);
    for (int g = 0; g < CHAOS_GRADIENTS; g++) {
        coll_case_free(&cases[g]);
        MPI_Comm_free(&cases[g].comm);
    }
    verdict_log_free(&log);
    MPI_Finalize();
    test_memory_teardown();
    return failed == 0 ? 0 : 1;
}
