/*
 * native_example.c - the engine's C API without MPI: a unique id, one
 * process per rank, prepared collectives run with a completion callback,
 * and 16-bit floats.
 *
 *   native_example [RANKS (default 4)] [COUNT (default 100000)]
 *
 * The parent forks the ranks; rank 0 makes the id (its process serves the
 * rendezvous, over UCX, which does not survive a fork: make the id in a
 * process that forks no ranks after) and hands it to the others through
 * a pipe (any channel that carries the id's bytes would do: a file, a
 * launcher's environment, MPI_Bcast).
 * Each rank:
 *   1. creates its context and, from the id, its communicator (host
 *      backend: host buffers, shared memory on one node);
 *   2. prepares an allreduce (sum of floats) once and runs it three times,
 *      with new input each time, each run completing through a callback;
 *   3. runs allreduces of float16 and bfloat16 (sum and max) and a
 *      reduce-scatter of bfloat16, posted and polled;
 * and checks every element. Values are small integers, so every sum is
 * exact in each type whatever the order of the reduction.
 * Prints "native_example: N passed, M failed"; exits non-zero on failure.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "include/dfccl.h"

/* float <-> the two 16-bit formats, for filling and checking (the engine
 * reduces them itself); exact for the small integers used here */
static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t to_fp16(float f)   /* integers |f| <= 2048 */
{
    uint16_t sign = f < 0 ? 0x8000u : 0;
    float a = f < 0 ? -f : f;
    int e = 0;
    if (a == 0) return sign;
    while (a >= 2.0f) { a /= 2; e++; }
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)((a - 1.0f) * 1024.0f));
}

static float from_fp16(uint16_t h)   /* normal numbers and zero */
{
    int e = (h >> 10) & 0x1f;
    float v = e == 0 ? 0.0f : (1.0f + (float)(h & 0x3ff) / 1024.0f) * (float)(1 << e) / 32768.0f;
    return (h & 0x8000u) ? -v : v;
}

static atomic_int runs_done;
static atomic_int callback_errors;

static void on_complete(void *user, dfccl_status_t status)
{
    (void)user;
    if (status != DFCCL_OK) atomic_fetch_add(&callback_errors, 1);
    atomic_fetch_add(&runs_done, 1);   /* last: the waiter may then read the result */
}

/* Waits for a callback: runs the engine's scheduler on this thread meanwhile
 * (dfccl_context_drive), or sleeps a little where driving is off. */
static int wait_for_runs(dfccl_context_t *ctx, int target)
{
    struct timespec nap = { 0, 100000 };
    time_t start = time(NULL);
    while (atomic_load(&runs_done) < target) {
        if (dfccl_context_drive(ctx, 1000000) < 0) nanosleep(&nap, NULL);
        if (time(NULL) - start > 120) return -1;
    }
    return 0;
}

/* Posts args and polls its completion. */
static dfccl_status_t post_and_wait(dfccl_context_t *ctx, dfccl_comm_t *comm, dfccl_coll_args_t *a)
{
    dfccl_completion_t done;
    dfccl_status_t status = dfccl_coll_post(comm, a);
    if (status != DFCCL_OK) return status;
    for (;;) {
        if (dfccl_context_drive(ctx, 1000000) < 0) dfccl_context_wait(ctx, 1000000);
        if (dfccl_context_poll(ctx, &done, 1) == 1) return done.status;
    }
}

static int report(int rank, const char *what, int ok)
{
    if (!ok) fprintf(stderr, "native_example: rank %d: %s FAILED\n", rank, what);
    return ok ? 0 : 1;
}

static int run_rank(const dfccl_unique_id_t *id, int size, int rank, size_t count)
{
    dfccl_config_t config;
    dfccl_context_t *ctx = NULL;
    dfccl_comm_t *comm = NULL;
    dfccl_prepared_t *prepared = NULL;
    float *in = malloc(count * sizeof(float)), *out = malloc(count * sizeof(float));
    uint16_t *h_in = malloc(count * 2), *h_out = malloc(count * 2);
    int failures = 0;

    dfccl_config_init(&config);
    if (!in || !out || !h_in || !h_out || dfccl_context_create(&config, &ctx) != DFCCL_OK ||
        dfccl_comm_create_by_id(ctx, id, size, rank, DFCCL_BACKEND_HOST, &comm) != DFCCL_OK) {
        fprintf(stderr, "native_example: rank %d: set-up failed\n", rank);
        return 1;
    }

    /* 2: prepare once, run three times with a callback */
    dfccl_coll_args_t a = { .type = DFCCL_COLL_ALLREDUCE, .sendbuf = in, .recvbuf = out,
                            .count = count, .dtype = DFCCL_FLOAT, .op = DFCCL_OP_SUM,
                            .callback = on_complete };
    failures += report(rank, "prepare", dfccl_coll_prepare(comm, &a, &prepared) == DFCCL_OK);
    for (int run = 0; run < 3 && prepared != NULL; run++) {
        for (size_t i = 0; i < count; i++) in[i] = (float)((i + (size_t)rank + (size_t)run) % 9);
        memset(out, 0xff, count * sizeof(float));
        int ok = dfccl_coll_start(prepared, NULL) == DFCCL_OK && wait_for_runs(ctx, run + 1) == 0;
        for (size_t i = 0; ok && i < count; i++) {
            float want = 0;
            for (int r = 0; r < size; r++) want += (float)((i + (size_t)r + (size_t)run) % 9);
            ok = out[i] == want;
        }
        failures += report(rank, "prepared allreduce run", ok);
    }
    failures += report(rank, "callback status", atomic_load(&callback_errors) == 0);
    dfccl_coll_prepared_free(prepared);

    /* 3: 16-bit floats, posted and polled */
    static const struct { dfccl_dtype_t dtype; dfccl_op_t op; const char *name; } cases[] = {
        { DFCCL_FLOAT16, DFCCL_OP_SUM, "float16 sum" }, { DFCCL_FLOAT16, DFCCL_OP_MAX, "float16 max" },
        { DFCCL_BFLOAT16, DFCCL_OP_SUM, "bfloat16 sum" }, { DFCCL_BFLOAT16, DFCCL_OP_MAX, "bfloat16 max" },
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        int bf = cases[c].dtype == DFCCL_BFLOAT16, sum = cases[c].op == DFCCL_OP_SUM;
        for (size_t i = 0; i < count; i++) {
            float v = (float)((int)((i * 7 + (size_t)rank * 3) % 32) - 16);
            h_in[i] = bf ? to_bf16(v) : to_fp16(v);
        }
        dfccl_coll_args_t h = { .type = DFCCL_COLL_ALLREDUCE, .sendbuf = h_in, .recvbuf = h_out,
                                .count = count, .dtype = cases[c].dtype, .op = cases[c].op };
        int ok = post_and_wait(ctx, comm, &h) == DFCCL_OK;
        for (size_t i = 0; ok && i < count; i++) {
            float want = sum ? 0.0f : -1e9f;
            for (int r = 0; r < size; r++) {
                float v = (float)((int)((i * 7 + (size_t)r * 3) % 32) - 16);
                want = sum ? want + v : (v > want ? v : want);
            }
            ok = (bf ? from_bf16(h_out[i]) : from_fp16(h_out[i])) == want;
        }
        failures += report(rank, cases[c].name, ok);
    }
    /* a reduce-scatter of bfloat16: rank r gets elements [r*block, (r+1)*block) of the sum */
    size_t block = count / (size_t)size, *counts = malloc(sizeof(size_t) * (size_t)size);
    for (int r = 0; r < size; r++) counts[r] = block;
    for (size_t i = 0; i < block * (size_t)size; i++)
        h_in[i] = to_bf16((float)((i + (size_t)rank) % 5));
    dfccl_coll_args_t rs = { .type = DFCCL_COLL_REDUCE_SCATTER, .sendbuf = h_in, .recvbuf = h_out,
                             .counts = counts, .dtype = DFCCL_BFLOAT16, .op = DFCCL_OP_SUM };
    int ok = post_and_wait(ctx, comm, &rs) == DFCCL_OK;
    for (size_t k = 0; ok && k < block; k++) {
        size_t i = (size_t)rank * block + k;
        float want = 0;
        for (int r = 0; r < size; r++) want += (float)((i + (size_t)r) % 5);
        ok = from_bf16(h_out[k]) == want;
    }
    failures += report(rank, "bfloat16 reduce_scatter", ok);

    free(counts);
    dfccl_comm_destroy(comm);
    dfccl_context_destroy(ctx);
    free(in); free(out); free(h_in); free(h_out);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    int size = argc > 1 ? atoi(argv[1]) : 4;
    size_t count = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 100000;
    dfccl_unique_id_t id;
    int passed = 0, failed = 0, pipe_fds[2];

    if (size < 1 || size > 64 || count < (size_t)size) {
        fprintf(stderr, "usage: native_example [RANKS 1..64] [COUNT >= RANKS]\n");
        return 2;
    }
    if (pipe(pipe_fds) != 0) return 1;
    for (int rank = 0; rank < size; rank++) {
        pid_t pid = fork();
        if (pid == 0) {
            close(rank == 0 ? pipe_fds[0] : pipe_fds[1]);
            if (rank == 0) {   /* the id, once for every other rank (atomic pipe writes) */
                dfccl_status_t made = dfccl_unique_id_create(&id);
                if (made != DFCCL_OK) {   /* without UCX: unsupported, and the test skips */
                    fprintf(stderr, "native_example: cannot create the unique id: %s\n",
                            dfccl_status_string(made));
                    _exit(made == DFCCL_ERR_UNSUPPORTED ? 77 : 1);
                }
                for (int r = 1; r < size; r++)
                    if (write(pipe_fds[1], &id, sizeof(id)) != (ssize_t)sizeof(id)) _exit(1);
                close(pipe_fds[1]);
            } else if (read(pipe_fds[0], &id, sizeof(id)) != (ssize_t)sizeof(id)) {
                fprintf(stderr, "native_example: rank %d got no id\n", rank);
                _exit(1);
            }
            _exit(run_rank(&id, size, rank, count));
        }
        if (pid < 0) return 1;
    }
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    int unsupported = 0;
    for (int rank = 0; rank < size; rank++) {
        int status = 0;
        wait(&status);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) passed++;
        else failed++;
        unsupported |= WIFEXITED(status) && WEXITSTATUS(status) == 77;
    }
    if (unsupported) {
        printf("native_example: skipped: this build cannot make unique ids (no UCX)\n");
        return 77;
    }
    printf("native_example: %d passed, %d failed (%d ranks, %zu elements)\n", passed, failed,
           size, count);
    return failed ? 1 : 0;
}
