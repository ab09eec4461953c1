/*
 * exit_check.c - an application that fails its own check and calls exit()
 * without MPI_Finalize, as OSU's benchmarks do, while the engine's threads
 * live (test/mpi/exit_check.sh runs it and judges how the ranks ended).
 *
 * Every rank runs allreduces the engine carries (blocking and nonblocking,
 * 1 to 65,536 floats, results checked), meets the others in a barrier (on
 * the stock path), prints its verdict, and calls
 * exit(--status, 3): the CUDA runtime's and UCX's teardown then run while
 * the daemon, proxy and stream threads still exist. No rank may die by a
 * signal. --memory host|device picks the buffers.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test_memory.h"

#define MAX_COUNT 65536

int main(int argc, char **argv)
{
    test_memory_kind_t kind = test_memory_setup(&argc, argv, "exit_check");
    int rank, size, status = 3, calls = 40, passed = 0, failed = 0;
    float *host;
    void *in, *out;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--status") == 0) status = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--calls") == 0) calls = atoi(argv[i + 1]);
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    host = malloc(MAX_COUNT * sizeof(float));
    in = test_memory_alloc(kind, MAX_COUNT * sizeof(float));
    out = test_memory_alloc(kind, MAX_COUNT * sizeof(float));
    if (host == NULL || in == NULL || out == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int c = 0; c < calls; c++) {
        int count = 1 << (c % 17), wrong = 0;
        MPI_Request req;

        for (int i = 0; i < count; i++) host[i] = (float)(rank + 1 + i % 7);
        test_memory_to_buffer(kind, in, host, count * sizeof(float));
        if (c % 2 == 0) {
            MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        } else {
            MPI_Iallreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        test_memory_from_buffer(kind, host, out, count * sizeof(float));
        for (int i = 0; i < count && !wrong; i++)
            wrong = host[i] != (float)(size * (size + 1) / 2 + size * (i % 7));
        if (wrong) failed++;
        else passed++;
    }
    /* every rank's collectives have completed once all are here; a peer
     * may leave before the barrier's last message reaches this rank, which
     * then returns an error rather than aborting the job */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    (void)MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("exit_check: %d passed, %d failed\n", passed, failed);
    printf("exit_check: rank %d: %d passed, %d failed; exit(%d) without MPI_Finalize\n", rank,
           passed, failed, status);
    fflush(stdout);
    exit(failed ? 1 : status);
}
