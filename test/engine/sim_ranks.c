/* sim_ranks.c - forked ranks, a shared-memory allgather, inputs and references. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "sim_ranks.h"

#define SIM_SLOT_BYTES 4096

struct sim_world {
    pthread_barrier_t barrier;
    int               size;
    char              slots[][SIM_SLOT_BYTES];
};

static int sim_rank;   /* each forked rank sets its own copy */

int sim_allgather(const void *send, void *recv, size_t bytes, void *arg)
{
    sim_world_t *w = arg;

    if (bytes > SIM_SLOT_BYTES) return -1;
    memcpy(w->slots[sim_rank], send, bytes);
    pthread_barrier_wait(&w->barrier);
    for (int r = 0; r < w->size; r++) memcpy((char *)recv + (size_t)r * bytes, w->slots[r], bytes);
    pthread_barrier_wait(&w->barrier);
    return 0;
}

int sim_run(int size, double timeout_sec,
            int (*body)(int rank, int size, sim_world_t *world, void *arg), void *arg)
{
    size_t bytes = sizeof(sim_world_t) + (size_t)size * SIM_SLOT_BYTES;
    sim_world_t *w = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pthread_barrierattr_t attr;
    pid_t *pids = calloc((size_t)size, sizeof(pid_t));
    int failed = 0, left = size;
    struct timespec start, now;

    if (w == MAP_FAILED || pids == NULL) return size;
    w->size = size;
    pthread_barrierattr_init(&attr);
    pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&w->barrier, &attr, (unsigned)size);
    fflush(NULL);
    for (int r = 0; r < size; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            sim_rank = r;
            _exit(body(r, size, w, arg) ? 1 : 0);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (left > 0) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            left--;
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed++;
            continue;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((double)(now.tv_sec - start.tv_sec) + 1e-9 * (double)(now.tv_nsec - start.tv_nsec) >
            timeout_sec) {
            fprintf(stderr, "sim_run: ranks still running after %.0f s: killing them\n", timeout_sec);
            for (int r = 0; r < size; r++) kill(pids[r], SIGKILL);
        }
        usleep(1000);
    }
    pthread_barrier_destroy(&w->barrier);
    munmap(w, bytes);
    free(pids);
    return failed;
}

/* small values keep SUM and PROD exact in every type over <= 16 ranks */
static int64_t sim_value(dfccl_op_t op, int rank, size_t i, int is_signed)
{
    switch (op) {
    case DFCCL_OP_PROD:
        if ((i + (size_t)rank) % 11 == 0) return 2;
        return (is_signed && (i * 3 + (size_t)rank) % 13 == 0) ? -1 : 1;
    case DFCCL_OP_LAND: case DFCCL_OP_LOR: case DFCCL_OP_LXOR:
        return (int64_t)((i * 7 + (size_t)rank * 5) % 3);      /* 0, 1, 2 */
    case DFCCL_OP_BAND: case DFCCL_OP_BOR: case DFCCL_OP_BXOR:
        return (int64_t)((i * 2654435761u + (size_t)rank * 40503u) & 0x7f);
    default:  /* SUM, MIN, MAX, NONE */
        return (int64_t)((i * 7 + (size_t)rank * 3) % 16) - (is_signed ? 8 : 0);
    }
}

static int dtype_signed(dfccl_dtype_t t)
{
    return t == DFCCL_INT8 || t == DFCCL_INT16 || t == DFCCL_INT32 || t == DFCCL_INT64 ||
           t == DFCCL_FLOAT || t == DFCCL_DOUBLE;
}

static void sim_store(void *buf, size_t i, dfccl_dtype_t t, int64_t v)
{
    switch (t) {
    case DFCCL_INT8: case DFCCL_UINT8: case DFCCL_BYTE: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case DFCCL_BOOL: ((uint8_t *)buf)[i] = v != 0; break;
    case DFCCL_INT16: case DFCCL_UINT16: ((uint16_t *)buf)[i] = (uint16_t)v; break;
    case DFCCL_INT32: case DFCCL_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case DFCCL_INT64: case DFCCL_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case DFCCL_FLOAT: ((float *)buf)[i] = (float)v; break;
    case DFCCL_DOUBLE: ((double *)buf)[i] = (double)v; break;
    default: break;
    }
}

void sim_fill_input(void *buf, size_t count, dfccl_dtype_t dtype, dfccl_op_t op, int rank,
                    size_t first_index)
{
    int sgn = dtype_signed(dtype);
    for (size_t i = 0; i < count; i++)
        sim_store(buf, i, dtype, sim_value(op, rank, first_index + i, sgn));
}

/* Reference computed in int64 without the engine's reduction code. */
void sim_expected(void *out, dfccl_dtype_t dtype, dfccl_op_t op, int size, size_t index)
{
    int sgn = dtype_signed(dtype);
    int64_t acc = sim_value(op, 0, index, sgn), nonzero = 0;

    if (dtype == DFCCL_BOOL) acc = acc != 0;
    for (int r = 0; r < size; r++) {
        int64_t v = sim_value(op, r, index, sgn);
        if (dtype == DFCCL_BOOL) v = v != 0;
        nonzero += v != 0;
        if (r == 0) continue;
        switch (op) {
        case DFCCL_OP_SUM:  acc += v; break;
        case DFCCL_OP_PROD: acc *= v; break;
        case DFCCL_OP_MIN:  acc = v < acc ? v : acc; break;
        case DFCCL_OP_MAX:  acc = v > acc ? v : acc; break;
        case DFCCL_OP_BAND: acc &= v; break;
        case DFCCL_OP_BOR:  acc |= v; break;
        case DFCCL_OP_BXOR: acc ^= v; break;
        default: break;
        }
    }
    /* one rank: MPI returns the input itself, no operator applied */
    if (size > 1 && op == DFCCL_OP_LAND) acc = nonzero == size;
    if (size > 1 && op == DFCCL_OP_LOR)  acc = nonzero > 0;
    if (size > 1 && op == DFCCL_OP_LXOR) acc = nonzero & 1;
    sim_store(out, 0, dtype, acc);
}
