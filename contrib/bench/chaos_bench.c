/*
 * chaos_bench.c - throughput of the chaos-order workload: the eight
 * ResNet-50 gradient allreduces (test/mpi/chaos_sizes.h), each on its own
 * communicator, started every iteration as nonblocking calls and completed
 * with MPI_Waitall.
 *
 *   --order disordered  each rank issues them in its own random order
 *                       (needs an engine that preempts; the stock path
 *                       would be legal too, but this measures the engine)
 *   --order ordered     the same order on every rank
 *   --iterations N      timed iterations (default 50)
 *   --warmup N          untimed iterations first (default 5)
 *   --seed S            the random orders (default 1)
 *
 * Rank 0 prints one line of key=value numbers:
 *   chaos_bench np=4 order=disordered iterations=50 seconds=... iter_per_s=... gbps=... ok=1
 * gbps counts the gradient bytes reduced per second (sum of the eight
 * sizes x 4 bytes per iteration); ok=0 when a result was wrong or an MPI
 * call failed.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

#include "chaos_sizes.h"

static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* One iteration; returns 0 when every call succeeded. */
static int run_iteration(MPI_Comm *comms, float **send, float **recv, bool disordered,
                         uint64_t *rng)
{
    int order[CHAOS_GRADIENTS];
    MPI_Request requests[CHAOS_GRADIENTS];
    for (int g = 0; g < CHAOS_GRADIENTS; g++)
        order[g] = g;
    if (disordered)
        for (int i = CHAOS_GRADIENTS; i > 1; i--) {
            int j = (int)(next_random(rng) % (uint64_t)i), tmp = order[i - 1];
            order[i - 1] = order[j];
            order[j] = tmp;
        }
    int errors = 0;
    for (int i = 0; i < CHAOS_GRADIENTS; i++) {
        int g = order[i];
        requests[g] = MPI_REQUEST_NULL;
        errors += MPI_Iallreduce(send[g], recv[g], (int)chaos_gradient_floats[g], MPI_FLOAT,
                                 MPI_SUM, comms[g], &requests[g]) != MPI_SUCCESS;
    }
    errors += MPI_Waitall(CHAOS_GRADIENTS, requests, MPI_STATUSES_IGNORE) != MPI_SUCCESS;
    return errors;
}

int main(int argc, char **argv)
{
    int rank, size, iterations = 50, warmup = 5;
    bool disordered = true;
    uint64_t seed = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = value != NULL;
        if (ok && strcmp(argv[i], "--order") == 0)
            ok = (disordered = strcmp(value, "disordered") == 0) || strcmp(value, "ordered") == 0;
        else if (ok && strcmp(argv[i], "--iterations") == 0)
            ok = (iterations = atoi(value)) > 0;
        else if (ok && strcmp(argv[i], "--warmup") == 0)
            ok = (warmup = atoi(value)) >= 0;
        else if (ok && strcmp(argv[i], "--seed") == 0)
            seed = strtoull(value, NULL, 0);
        else
            ok = false;
        if (!ok) {
            if (rank == 0)
                fprintf(stderr, "usage: chaos_bench [--order disordered|ordered] "
                                "[--iterations N] [--warmup N] [--seed S]\n");
            MPI_Finalize();
            return 2;
        }
        i++;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    MPI_Comm comms[CHAOS_GRADIENTS];
    float *send[CHAOS_GRADIENTS], *recv[CHAOS_GRADIENTS];
    double bytes_per_iteration = 0;
    for (int g = 0; g < CHAOS_GRADIENTS; g++) {
        size_t n = chaos_gradient_floats[g];
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[g]);
        /* One ordered call per communicator sets up its engine side (a
         * blocking stock collective) before any disorder. */
        int one = 1, sum = 0;
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comms[g]);
        send[g] = malloc(n * sizeof(float));
        recv[g] = malloc(n * sizeof(float));
        if (send[g] == NULL || recv[g] == NULL)
            MPI_Abort(MPI_COMM_WORLD, 2);
        for (size_t k = 0; k < n; k++)
            send[g][k] = (float)(rank + 1);
        bytes_per_iteration += (double)n * sizeof(float);
    }
    uint64_t rng = seed * 0x100000001b3ULL + (uint64_t)rank;
    int errors = 0;
    for (int it = 0; it < warmup; it++)
        errors += run_iteration(comms, send, recv, disordered, &rng);
    MPI_Barrier(MPI_COMM_WORLD);
    double started = MPI_Wtime();
    for (int it = 0; it < iterations; it++)
        errors += run_iteration(comms, send, recv, disordered, &rng);
    double seconds = MPI_Wtime() - started;

    /* Sum of (rank + 1) over ranks, exact in float for any sane np. */
    float want = (float)size * (float)(size + 1) / 2.0f;
    int wrong = errors;
    for (int g = 0; g < CHAOS_GRADIENTS; g++) {
        if (recv[g][0] != want || recv[g][chaos_gradient_floats[g] - 1] != want)
            wrong++;
        free(send[g]);
        free(recv[g]);
    }
    /* Slowest rank's time, and whether any rank went wrong: point-to-point
     * would do too, but by now every call has completed or failed. */
    double slowest = seconds;
    int any_wrong = wrong;
    MPI_Reduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&wrong, &any_wrong, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("chaos_bench np=%d order=%s iterations=%d seconds=%.4f iter_per_s=%.2f "
               "gbps=%.3f ok=%d\n", size, disordered ? "disordered" : "ordered", iterations,
               slowest, iterations / slowest, iterations * bytes_per_iteration / slowest / 1e9,
               any_wrong == 0);
    for (int g = 0; g < CHAOS_GRADIENTS; g++)
        MPI_Comm_free(&comms[g]);
    MPI_Finalize();
    return any_wrong == 0 || rank != 0 ? 0 : 1;
}
