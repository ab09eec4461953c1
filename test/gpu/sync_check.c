/*
 * sync_check.c - collectives on device buffers mixed with the CUDA calls an
 * application makes around them: whole-device synchronisation, allocation
 * and freeing, work on the default stream.
 *
 * A GPU engine whose daemon kernel runs for the life of the process can
 * hang such programs (cudaDeviceSynchronize waits for every kernel;
 * cudaFree and default-stream work may synchronise with other streams) or
 * keep stale state for an address that was freed and handed out again.
 *
 * (a) Two communicators (dups of world). Even ranks start MPI_Iallreduce on
 *     A, call cudaDeviceSynchronize, then start B; odd ranks start B, sync,
 *     then A. Both are then waited for. Sizes 8 B to 4 MiB, types rotating.
 * (b) Between and during collectives (all four kinds), each rank a
 *     different number of times: cudaMalloc, cudaMemset on the default
 *     stream, a read-back, cudaFree; the collective's own buffers are freed
 *     and allocated again too, so addresses are reused with new sizes.
 * (c) Blocking MPI_Allreduce followed by cudaDeviceSynchronize, in a loop.
 * (d) Inputs written on the legacy default stream just before the call,
 *     without a synchronisation: a long memset of a scratch buffer (every
 *     case once with it, once without), then the input's own memset, then
 *     the collective (allreduce and allgather, blocking and not, LL to
 *     direct sizes). The
 *     stock path copies device buffers on streams ordered with the legacy
 *     one; dfccl waits for it (coll_dfccl_gpu_sync_legacy_stream). A
 *     collective that read its inputs early would see the stale pattern.
 *
 * Results are checked bit-exactly (coll_case.c). With --expect engine the
 * engine's posted counters must rise by one per call that moves data.
 * Every wait is bounded by --timeout seconds: nonblocking calls are polled
 * with MPI_Test against a deadline (the request that did not complete is
 * named, then MPI_Abort); blocking MPI and CUDA calls run under an alarm
 * that names the call and ends the process.
 */
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <mpi.h>
#include <cuda_runtime_api.h>

#include "coll_case.h"
#include "test_memory.h"
#include "test_util.h"

#define MAX_PRINTED 20

typedef struct {
    int           iterations;
    int           timeout_s;
    bool          check_counters;
    expect_mode_t expect;
} options_t;

static const size_t phase_a_bytes[] = { 8, 4096, 256 * 1024, 1 << 20, 4 << 20 };
#define PHASE_A_SIZES (sizeof phase_a_bytes / sizeof phase_a_bytes[0])

static int world_rank, world_size, printed;
static options_t opts;
static verdict_log_t verdicts;

/* ---- bounded waits ------------------------------------------------------ */

/* What the alarm handler prints: set before each guarded call. */
static char watch_message[512];
static volatile size_t watch_message_len;

static void watch_fired(int signal_number)
{
    (void)signal_number;
    /* Only async-signal-safe calls here: the process may be stuck anywhere. */
    if (write(STDERR_FILENO, watch_message, watch_message_len) < 0)
        _exit(3);
    _exit(3);
}

static void watch_begin(const char *fmt, ...)
{
    char what[384];
    va_list args;
    va_start(args, fmt);
    vsnprintf(what, sizeof what, fmt, args);
    va_end(args);
    watch_message_len = 0;
    int n = snprintf(watch_message, sizeof watch_message,
                     "sync_check: rank %d: FAIL: %s did not return within %d s\n",
                     world_rank, what, opts.timeout_s);
    watch_message_len = n < (int)sizeof watch_message ? (size_t)n : sizeof watch_message - 1;
    alarm((unsigned)opts.timeout_s);
}

static void watch_end(void)
{
    alarm(0);
}

static void fail(const char *fmt, ...)
{
    if (printed == MAX_PRINTED)
        fprintf(stderr, "rank %d: further failures not printed\n", world_rank);
    if (printed++ >= MAX_PRINTED)
        return;
    char what[512];
    va_list args;
    va_start(args, fmt);
    vsnprintf(what, sizeof what, fmt, args);
    va_end(args);
    fprintf(stderr, "FAIL rank %d: %s\n", world_rank, what);
}

static bool cuda_ok(cudaError_t rc, const char *what)
{
    if (rc == cudaSuccess)
        return true;
    fail("%s: %s (%s)", what, cudaGetErrorName(rc), cudaGetErrorString(rc));
    return false;
}

static bool device_synchronize(const char *where)
{
    watch_begin("cudaDeviceSynchronize %s", where);
    cudaError_t rc = cudaDeviceSynchronize();
    watch_end();
    return cuda_ok(rc, "cudaDeviceSynchronize");
}

/*
 * Polls n requests with MPI_Test until all completed or the deadline
 * passes; then names every request still open and aborts the job. rcs[i]
 * receives each request's completion code.
 */
static void wait_bounded(int n, MPI_Request *requests, const char *const *names, int *rcs)
{
    double deadline = MPI_Wtime() + opts.timeout_s;
    int open = 0;
    for (int i = 0; i < n; i++) {
        rcs[i] = MPI_SUCCESS;
        open += requests[i] != MPI_REQUEST_NULL;
    }
    while (open > 0) {
        for (int i = 0; i < n; i++) {
            if (requests[i] == MPI_REQUEST_NULL)
                continue;
            int done = 0;
            int rc = MPI_Test(&requests[i], &done, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS || done) {
                /* A failed request is complete too: nothing more will come. */
                rcs[i] = rc;
                requests[i] = MPI_REQUEST_NULL;
                open--;
            }
        }
        if (open > 0 && MPI_Wtime() > deadline) {
            for (int i = 0; i < n; i++)
                if (requests[i] != MPI_REQUEST_NULL)
                    fprintf(stderr, "sync_check: rank %d: FAIL: %s did not complete within "
                            "%d s\n", world_rank, names[i], opts.timeout_s);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        if (open > 0)
            sched_yield();  /* ranks may share cores */
    }
}

/* ---- checks ------------------------------------------------------------- */

static void prepare_case(coll_case_t *c, case_kind_t kind, const case_type_t *type,
                         size_t bytes, uint32_t seed, MPI_Comm comm)
{
    *c = (coll_case_t){ .kind = kind, .type = type, .seed = seed, .comm = comm,
                        .memory = TEST_MEMORY_DEVICE };
    c->count = coll_case_count_for_bytes(kind, type, bytes, world_size);
    if (coll_case_prepare(c) != 0) {
        fprintf(stderr, "sync_check: rank %d: cannot allocate the buffers of %zu bytes\n",
                world_rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* Records the verdict of one finished call: its MPI code and its result. */
static bool check_result(const coll_case_t *c, int rc, const char *what)
{
    char why[MPI_MAX_ERROR_STRING + 64];
    bool ok = rc == MPI_SUCCESS;
    if (!ok)
        coll_case_error_text(rc, why, sizeof why);
    else
        ok = coll_case_verify(c, why, sizeof why);
    if (!ok)
        fail("%s %s %s count=%zu: %s", what, coll_case_kind_name(c->kind), c->type->name,
             c->count, why);
    verdict_log_record(&verdicts, ok);
    return ok;
}

/* One verdict for the engine's counters since `before`, when asked for. */
static void check_counters(const engine_snapshot_t *before, dfccl_coll_type_t kind,
                           uint64_t calls, const char *what)
{
    if (!opts.check_counters)
        return;
    char why[160];
    uint64_t rise = opts.expect == EXPECT_ENGINE ? calls : 0;
    bool ok = engine_rise_ok(before, kind, rise, why, sizeof why);
    if (!ok)
        fail("%s counters: %s", what, why);
    verdict_log_record(&verdicts, ok);
}

/* (a) disordered starts around cudaDeviceSynchronize on two communicators. */
static void phase_sync_between_starts(MPI_Comm comm_a, MPI_Comm comm_b)
{
    for (int it = 0; it < opts.iterations; it++) {
        for (size_t s = 0; s < PHASE_A_SIZES; s++) {
            coll_case_t cases[2];
            MPI_Comm comms[2] = { comm_a, comm_b };
            for (int k = 0; k < 2; k++)
                prepare_case(&cases[k], CASE_ALLREDUCE,
                             &case_reduce_types[((size_t)it + s + (size_t)k) %
                                                case_reduce_type_count],
                             phase_a_bytes[s], (uint32_t)(1000 * it + 10 * (int)s + k),
                             comms[k]);
            char name_a[96], name_b[96];
            snprintf(name_a, sizeof name_a, "(a) iteration %d: MPI_Iallreduce of %zu B on comm A",
                     it, phase_a_bytes[s]);
            snprintf(name_b, sizeof name_b, "(a) iteration %d: MPI_Iallreduce of %zu B on comm B",
                     it, phase_a_bytes[s]);
            const char *names[2] = { name_a, name_b };
            MPI_Request requests[2] = { MPI_REQUEST_NULL, MPI_REQUEST_NULL };
            int rcs[2] = { MPI_SUCCESS, MPI_SUCCESS };
            /* Even ranks: A, sync, B. Odd ranks: B, sync, A. */
            int first = world_rank % 2, second = 1 - first;
            engine_snapshot_t before;
            engine_snapshot_take(&before);
            rcs[first] = coll_case_start(&cases[first], &requests[first]);
            bool synced = device_synchronize(first == 0 ? "(a) after starting A"
                                                        : "(a) after starting B");
            verdict_log_record(&verdicts, synced);
            rcs[second] = coll_case_start(&cases[second], &requests[second]);
            int wait_rcs[2];
            wait_bounded(2, requests, names, wait_rcs);
            for (int k = 0; k < 2; k++)
                check_result(&cases[k], rcs[k] != MPI_SUCCESS ? rcs[k] : wait_rcs[k],
                             names[k]);
            check_counters(&before, DFCCL_COLL_ALLREDUCE, 2, name_a);
            for (int k = 0; k < 2; k++)
                coll_case_free(&cases[k]);
        }
    }
}

/* Allocation and default-stream work, `cycles` times: a scratch buffer is
 * allocated, set on the default stream, read back (checked) and freed.
 * Returns whether all of it worked; the caller records one verdict, since
 * the number of cycles differs between ranks and the tally must not. */
static bool churn_device_memory(int cycles, const char *where)
{
    bool all_ok = true;
    for (int cycle = 0; cycle < cycles; cycle++) {
        size_t bytes = (size_t)4096 << ((world_rank + cycle) % 8);
        unsigned char pattern = (unsigned char)(0x11 * (cycle + 1) + world_rank);
        void *scratch = NULL;
        watch_begin("cudaMalloc of %zu B %s", bytes, where);
        bool ok = cuda_ok(cudaMalloc(&scratch, bytes), "cudaMalloc (scratch)");
        watch_end();
        if (!ok) {
            all_ok = false;
            continue;
        }
        unsigned char tail[64];
        watch_begin("cudaMemset on the default stream %s", where);
        ok = cuda_ok(cudaMemset(scratch, pattern, bytes), "cudaMemset (default stream)");
        /* A plain cudaMemcpy to the host waits for the memset before it. */
        ok = ok && cuda_ok(cudaMemcpy(tail, (unsigned char *)scratch + bytes - sizeof tail,
                                      sizeof tail, cudaMemcpyDeviceToHost),
                           "cudaMemcpy (scratch read-back)");
        watch_end();
        for (size_t i = 0; ok && i < sizeof tail; i++) {
            if (tail[i] != pattern) {
                fail("scratch %s: byte %zu is 0x%02x, expected 0x%02x", where, i, tail[i],
                     pattern);
                ok = false;
            }
        }
        watch_begin("cudaFree %s", where);
        ok = cuda_ok(cudaFree(scratch), "cudaFree (scratch)") && ok;
        watch_end();
        all_ok = all_ok && ok;
    }
    return all_ok;
}

/* (b) allocation churn before (even iterations) or during (odd) collectives
 * of every kind, on buffers that are themselves reallocated. */
static void phase_alloc_churn(MPI_Comm comm)
{
    coll_case_t c;
    int rounds = 4 * opts.iterations;
    prepare_case(&c, CASE_ALLREDUCE, &case_reduce_types[0], 4096, 7, comm);
    for (int it = 0; it < rounds; it++) {
        /* Kinds rotate against the four ways of calling below. */
        case_kind_t kind = (case_kind_t)((it + it / 4) % CASE_KIND_COUNT);
        size_t bytes = (size_t)64 << (it % 14);  /* 64 B .. 512 KiB */
        int cycles = 1 + (world_rank + it) % 4;  /* differs from rank to rank */
        char where[96];
        snprintf(where, sizeof where, "in (b) iteration %d", it);
        /* The old buffers go back first, so the allocator may hand the same
         * addresses out again with other sizes; a different number of
         * extra allocations per rank keeps the ranks' addresses apart. */
        coll_case_free(&c);
        bool churn_ok = churn_device_memory(world_rank % 3, where);
        prepare_case(&c, kind,
                     coll_case_pick_type(kind, (uint64_t)it * 5u + 1u), bytes,
                     (uint32_t)(5000 + it), comm);
        bool during = it % 2 == 1;
        if (!during)
            churn_ok = churn_device_memory(cycles, where) && churn_ok;

        char name[128];
        snprintf(name, sizeof name, "(b) iteration %d: %s of %zu B", it,
                 coll_case_kind_name(kind), bytes);
        engine_snapshot_t before;
        engine_snapshot_take(&before);
        int rc;
        if (during || it % 4 == 0) {
            MPI_Request request = MPI_REQUEST_NULL;
            const char *names[1] = { name };
            rc = coll_case_start(&c, &request);
            if (during)
                churn_ok = churn_device_memory(cycles, where) && churn_ok;
            int wait_rc;
            wait_bounded(1, &request, names, &wait_rc);
            if (rc == MPI_SUCCESS)
                rc = wait_rc;
        } else {
            watch_begin("blocking %s", name);
            rc = coll_case_run_blocking(&c);
            watch_end();
        }
        check_result(&c, rc, name);
        check_counters(&before, coll_case_engine_kind(kind),
                       coll_case_moves_data(&c) ? 1 : 0, name);
        verdict_log_record(&verdicts, churn_ok);
    }
    coll_case_free(&c);
}

/* (c) blocking allreduce, then cudaDeviceSynchronize, in a loop. */
static void phase_blocking_then_sync(MPI_Comm comm)
{
    int rounds = 8 * opts.iterations;
    for (int it = 0; it < rounds; it++) {
        coll_case_t c;
        size_t bytes = phase_a_bytes[(size_t)it % PHASE_A_SIZES];
        prepare_case(&c, CASE_ALLREDUCE,
                     &case_reduce_types[(size_t)it % case_reduce_type_count], bytes,
                     (uint32_t)(9000 + it), comm);
        char name[96];
        snprintf(name, sizeof name, "(c) iteration %d: MPI_Allreduce of %zu B", it, bytes);
        engine_snapshot_t before;
        engine_snapshot_take(&before);
        watch_begin("%s", name);
        int rc = coll_case_run_blocking(&c);
        watch_end();
        bool synced = device_synchronize("(c) after MPI_Allreduce");
        check_result(&c, synced ? rc : MPI_ERR_OTHER, name);
        check_counters(&before, DFCCL_COLL_ALLREDUCE, 1, name);
        coll_case_free(&c);
    }
}

/* (d): a small allreduce on device buffers (buf: 4 ints), checked. */
static bool warm_up(MPI_Comm comm, int *buf, int it)
{
    int host[2] = { world_rank, 1 }, sum[2];
    bool ok = cuda_ok(cudaMemcpy(buf, host, sizeof host, cudaMemcpyHostToDevice),
                      "cudaMemcpy (d) warm-up");

    if (!ok) return false;
    watch_begin("(d) round %d: the warm-up MPI_Allreduce", it);
    int rc = MPI_Allreduce(buf, buf + 2, 2, MPI_INT, MPI_SUM, comm);
    watch_end();
    ok = rc == MPI_SUCCESS && cuda_ok(cudaMemcpy(sum, buf + 2, sizeof sum, cudaMemcpyDeviceToHost),
                                      "cudaMemcpy (d) warm-up result");
    if (ok && (sum[0] != world_size * (world_size - 1) / 2 || sum[1] != world_size)) {
        fail("(d) round %d: the warm-up allreduce gave %d, %d", it, sum[0], sum[1]);
        ok = false;
    }
    return ok;
}

/* (d): one call of kind (allreduce of MPI_INT or allgather of MPI_BYTE)
 * whose input this rank writes on the legacy default stream right before
 * it, behind a long memset when delay. Returns whether its result is the
 * fresh inputs'. */
static bool legacy_stream_call(MPI_Comm comm, bool allgather, bool blocking, size_t bytes,
                               unsigned char *slow, size_t slow_bytes, int *warm, bool delay, int it)
{
    size_t out_bytes = allgather ? bytes * (size_t)world_size : bytes, ints = bytes / sizeof(int);
    unsigned char *in = NULL, *out = NULL, *host = NULL;
    char name[128];
    bool ok;
    int rc = MPI_SUCCESS;

    snprintf(name, sizeof name, "(d) round %d: %s of %zu B, inputs on the legacy stream%s", it,
             allgather ? (blocking ? "MPI_Allgather" : "MPI_Iallgather")
                       : (blocking ? "MPI_Allreduce" : "MPI_Iallreduce"),
             bytes, delay ? " behind a long memset" : "");
    ok = cuda_ok(cudaMalloc((void **)&in, bytes), "cudaMalloc (d) input") &&
         cuda_ok(cudaMalloc((void **)&out, out_bytes), "cudaMalloc (d) output") &&
         (host = malloc(out_bytes)) != NULL;
    /* the stale pattern, landed before the fresh one is queued */
    ok = ok && cuda_ok(cudaMemset(in, 0xee, bytes), "cudaMemset (d) stale") &&
         cuda_ok(cudaMemset(out, 0xdd, out_bytes), "cudaMemset (d) output") &&
         device_synchronize("(d) before the round");
    /* every rank gets there before any queues its fresh input; then a
     * collective of its own, so that the engine's daemon kernel is running
     * (idle, it stays for coll_dfccl_gpu_idle_quit_ns) and does not wait
     * for free SMs behind the memset to start */
    MPI_Barrier(comm);
    ok = ok && warm_up(comm, warm, it);
    unsigned char fresh = (unsigned char)(1 + (world_rank + it) % 3);
    if (ok && delay)
        ok = cuda_ok(cudaMemsetAsync(slow, it & 0xff, slow_bytes, cudaStreamLegacy),
                     "cudaMemsetAsync (d) delay");
    ok = ok && cuda_ok(cudaMemsetAsync(in, fresh, bytes, cudaStreamLegacy),
                       "cudaMemsetAsync (d) fresh input");
    if (ok) {
        watch_begin("%s", name);
        if (blocking) {
            rc = allgather ? MPI_Allgather(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE, comm)
                           : MPI_Allreduce(in, out, (int)ints, MPI_INT, MPI_SUM, comm);
        } else {
            MPI_Request request = MPI_REQUEST_NULL;
            const char *names[1] = { name };
            int wait_rc;
            rc = allgather ? MPI_Iallgather(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE,
                                            comm, &request)
                           : MPI_Iallreduce(in, out, (int)ints, MPI_INT, MPI_SUM, comm, &request);
            wait_bounded(1, &request, names, &wait_rc);
            if (rc == MPI_SUCCESS) rc = wait_rc;
        }
        watch_end();
        if (rc != MPI_SUCCESS) {
            char why[MPI_MAX_ERROR_STRING + 64];
            coll_case_error_text(rc, why, sizeof why);
            fail("%s: %s", name, why);
            ok = false;
        }
    }
    ok = ok && cuda_ok(cudaMemcpy(host, out, out_bytes, cudaMemcpyDeviceToHost),
                       "cudaMemcpy (d) result");
    if (ok && !allgather) {
        /* every byte of rank r's input is 1 + (r + it) % 3, at most 3: each
         * int holds the sum of the ranks' 0x01010101 multiples, at most
         * 96 x 0x01010101 < 2^31 at 32 ranks */
        uint32_t sum = 0;
        for (int r = 0; r < world_size; r++) sum += (uint32_t)(1 + (r + it) % 3) * 0x01010101u;
        for (size_t i = 0; ok && i < ints; i++) {
            uint32_t v;
            memcpy(&v, host + i * sizeof v, sizeof v);
            if (v != sum) {
                fail("%s: element %zu is 0x%08x, expected 0x%08x%s", name, i, v, sum,
                     v == 0xeeeeeeeeu * (uint32_t)world_size ? " (the stale inputs)" : "");
                ok = false;
            }
        }
    } else if (ok) {
        for (size_t i = 0; ok && i < out_bytes; i++) {
            unsigned char want = (unsigned char)(1 + ((int)(i / bytes) + it) % 3);
            if (host[i] != want) {
                fail("%s: byte %zu (rank %zu's) is 0x%02x, expected 0x%02x%s", name, i, i / bytes,
                     host[i], want, host[i] == 0xee ? " (the stale input)" : "");
                ok = false;
            }
        }
    }
    free(host);
    if (in != NULL) cuda_ok(cudaFree(in), "cudaFree (d) input");
    if (out != NULL) cuda_ok(cudaFree(out), "cudaFree (d) output");
    return ok;
}

/* (d) inputs written on the legacy default stream, not synchronised. */
static void phase_legacy_stream_inputs(MPI_Comm comm)
{
    static const size_t sizes[] = { 8, 64, 4096, 64 * 1024, 1 << 20 };
    size_t slow_bytes = (size_t)256 << 20;   /* about 0.1 ms of memset */
    unsigned char *slow = NULL;
    int *warm = NULL;
    int cases = 4 * (int)(sizeof sizes / sizeof sizes[0]), rounds = 2 * cases * opts.iterations;

    if (!cuda_ok(cudaMalloc((void **)&slow, slow_bytes), "cudaMalloc (d) scratch") ||
        !cuda_ok(cudaMalloc((void **)&warm, 4 * sizeof(int)), "cudaMalloc (d) warm-up")) {
        verdict_log_record(&verdicts, false);
        if (slow != NULL) cudaFree(slow);
        return;
    }
    /* every case (size, allreduce or allgather, blocking or not) once
     * behind the long memset and once without it */
    for (int it = 0; it < rounds; it++) {
        int c = it % cases, nsizes = (int)(sizeof sizes / sizeof sizes[0]);
        size_t bytes = sizes[c % nsizes];
        bool ok = legacy_stream_call(comm, (c / nsizes) % 2 == 1, c / (2 * nsizes) == 0, bytes,
                                     slow, slow_bytes, warm, (it / cases) % 2 == 0, it);
        verdict_log_record(&verdicts, ok);
    }
    cuda_ok(cudaFree(slow), "cudaFree (d) scratch");
    cuda_ok(cudaFree(warm), "cudaFree (d) warm-up");
}

static void usage(void)
{
    fprintf(stderr, "usage: sync_check [--iterations N] [--timeout S] [--expect engine|stock]\n"
                    "                  [--memory device]\n");
}

int main(int argc, char **argv)
{
    /* Always device memory; setup only takes "--memory device" off the
     * command line, accepted for uniformity with the other programs. */
    (void)test_memory_setup(&argc, argv, "sync_check");
    test_memory_require_device("sync_check");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    opts = (options_t){ .iterations = 3, .timeout_s = 120 };
    bool ok = true;
    for (int i = 1; ok && i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (value == NULL)
            ok = false;
        else if (strcmp(argv[i], "--iterations") == 0)
            ok = (opts.iterations = atoi(value)) > 0;
        else if (strcmp(argv[i], "--timeout") == 0)
            ok = (opts.timeout_s = atoi(value)) > 0;
        else if (strcmp(argv[i], "--expect") == 0) {
            ok = expect_mode_parse(value, &opts.expect) == 0;
            opts.check_counters = true;
        }
        else
            ok = false;
        i++;
    }
    if (!ok) {
        if (world_rank == 0)
            usage();
        MPI_Finalize();
        return 2;
    }
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = watch_fired;
    sigaction(SIGALRM, &action, NULL);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (world_rank == 0)
        printf("sync_check: np=%d device=%d iterations=%d timeout=%d s expect=%s\n",
               world_size, test_memory_device(), opts.iterations, opts.timeout_s,
               opts.check_counters ? expect_mode_name(opts.expect) : "(not checked)");

    MPI_Comm comm_a, comm_b, verdict_comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_a);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_b);
    MPI_Comm_dup(MPI_COMM_WORLD, &verdict_comm);
    verdict_log_init(&verdicts);
    double started = MPI_Wtime();

    phase_sync_between_starts(comm_a, comm_b);
    if (world_rank == 0)
        printf("  (a) sync between starts done at %.2f s\n", MPI_Wtime() - started);
    phase_alloc_churn(comm_a);
    if (world_rank == 0)
        printf("  (b) allocation churn done at %.2f s\n", MPI_Wtime() - started);
    phase_blocking_then_sync(comm_b);
    if (world_rank == 0)
        printf("  (c) blocking then sync done at %.2f s\n", MPI_Wtime() - started);
    phase_legacy_stream_inputs(comm_a);
    if (world_rank == 0)
        printf("  (d) inputs on the legacy stream done at %.2f s\n", MPI_Wtime() - started);

    /* The tally itself is bounded too: a rank stuck above would hold it. */
    watch_begin("the final verdict exchange");
    size_t failed = verdict_log_report(&verdicts, "sync_check", MPI_Wtime() - started,
                                       verdict_comm);
    watch_end();
    verdict_log_free(&verdicts);
    MPI_Comm_free(&comm_a);
    MPI_Comm_free(&comm_b);
    MPI_Comm_free(&verdict_comm);
    MPI_Finalize();
    test_memory_teardown();
    return failed == 0 ? 0 : 1;
}
