/*
 * dfccl_perf.c - bandwidth and latency of MPI_Allreduce, MPI_Allgather,
 * MPI_Reduce_scatter and MPI_Reduce_scatter_block (and their I-forms) over a
 * size sweep, printed like nccl-tests so that figures compare directly.
 *
 * Each size: inputs written, -w untimed calls, a barrier, -n timed calls;
 * the time is the largest over ranks of the average per call, the median
 * the largest over ranks of the median call (each call timed from the end
 * of the one before, as a loop of calls sees it). With -c 1
 * one further call on fresh inputs is compared with a local reference.
 * --memory device|staged put the buffers on the GPU (see perf_options.h);
 * then each row also gets a floor: the time the GPU's memory needs to read
 * every input and write every output once, at its measured copy bandwidth.
 * Rank 0 ends with "dfccl_perf: N passed, M failed" (rows without wrong
 * elements or failed calls), which the project's test driver reads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

#include "tools/perf/perf_colls.h"
#include "tools/perf/perf_device.h"
#include "tools/perf/perf_options.h"
#include "tools/perf/perf_report.h"

/* The sweep: begin, begin x factor, ... up to end; always strictly rising. */
static size_t sweep_sizes(const perf_options_t *o, size_t *sizes, size_t capacity)
{
    size_t n = 0;
    for (double s = (double)o->begin_bytes; s <= (double)o->end_bytes && n < capacity;) {
        sizes[n++] = (size_t)s;
        double next = s * o->factor;
        s = next < s + 1.0 ? s + 1.0 : next;
    }
    return n;
}

/*
 * One run's buffers. MPI is handed call's buffers: malloc'd (host),
 * cudaMalloc'd (device) or page-locked staging buffers (staged). Inputs are
 * written to and results checked in host_send/host_recv, which are call's
 * own buffers in host memory; device_send/device_recv hold the data on the
 * GPU in device and staged memory.
 */
typedef struct {
    perf_memory_t memory;
    perf_call_t call;
    void *host_send, *host_recv;
    void *device_send, *device_recv;
    MPI_Request *persistent;   /* --persistent: the size's request, made once; else NULL */
} bench_t;

/* Where a call's input starts among these two buffers. */
static void *input_at(void *send, void *recv, const perf_extent_t *e)
{
    return (char *)(e->input_in_recv ? recv : send) + e->input_offset;
}

/* The call as seen through the host copies (fill and check work on host memory). */
static perf_call_t host_view(const bench_t *b)
{
    perf_call_t view = b->call;
    view.send = b->host_send;
    view.recv = b->host_recv;
    return view;
}

/* One call; staged, with the copies an application without CUDA-aware MPI makes. Returns errors. */
static int one_call(const bench_t *b, MPI_Request *req)
{
    int errors = 0;
    perf_extent_t e = perf_call_extent(&b->call);
    if (b->memory == PERF_MEMORY_STAGED)
        errors += perf_device_download(input_at(b->call.send, b->call.recv, &e),
                                       input_at(b->device_send, b->device_recv, &e),
                                       e.input_bytes) != 0;
    if (b->persistent != NULL)
        req = b->persistent;
    errors += (b->persistent != NULL ? MPI_Start(req) : perf_call_start(&b->call, req, false)) !=
              MPI_SUCCESS;
    if (req)
        errors += MPI_Wait(req, MPI_STATUS_IGNORE) != MPI_SUCCESS;
    if (b->memory == PERF_MEMORY_STAGED)
        errors += perf_device_upload(b->device_recv, b->call.recv, e.output_bytes) != 0;
    return errors;
}

/* Writes this rank's inputs on the host and copies them to the device. Returns errors. */
static int fill_inputs(const bench_t *b)
{
    perf_call_t view = host_view(b);
    perf_call_fill(&view);
    if (b->memory == PERF_MEMORY_HOST)
        return 0;
    perf_extent_t e = perf_call_extent(&b->call);
    int failed = perf_device_upload(input_at(b->device_send, b->device_recv, &e),
                                    input_at(b->host_send, b->host_recv, &e), e.input_bytes);
    return failed || perf_device_synchronize() ? 1 : 0;
}

/* Overwrites the output so that a result left by an earlier call cannot pass the check. */
static int poison_output(const bench_t *b)
{
    perf_extent_t e = perf_call_extent(&b->call);
    if (b->call.in_place)
        return 0;  /* the fresh inputs fill the receive buffer already */
    if (b->memory != PERF_MEMORY_DEVICE)
        memset(b->call.recv, 0xff, e.output_bytes);
    if (b->memory == PERF_MEMORY_HOST)
        return 0;
    return perf_device_poison(b->device_recv, e.output_bytes) ? 1 : 0;
}

/* Number of calls the budget affords at `seconds` per call, within [low, high]. */
static int calls_within(double budget, double seconds, int low, int high)
{
    double affordable = seconds > 0.0 ? budget / seconds : (double)high;
    return affordable < low ? low : affordable > high ? high : (int)affordable;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of n > 0 values (reorders them). */
static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), compare_doubles);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* Times one size; fills the row's time, bandwidths, calls and error count (all ranks agree). */
static void measure(const bench_t *b, const perf_options_t *o, perf_row_t *row)
{
    MPI_Comm comm = b->call.comm;
    MPI_Request request;
    MPI_Request *req = o->nonblocking ? &request : NULL;
    int errors = fill_inputs(b), warmup = o->warmup, iterations = o->iterations;

    if (o->time_budget > 0.0) {
        /* The first warm-up call, timed on the slowest rank, prices the rest. */
        MPI_Barrier(comm);
        double start = MPI_Wtime();
        errors += one_call(b, req);
        double seconds = MPI_Wtime() - start, slowest;
        MPI_Allreduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
        iterations = calls_within(o->time_budget, slowest, 1, o->iterations);
        warmup = calls_within(o->time_budget - iterations * slowest, slowest, 0,
                              o->warmup > 1 ? o->warmup - 1 : 0);
    }
    for (int i = 0; i < warmup; i++)
        errors += one_call(b, req);
    double *took = malloc((size_t)iterations * sizeof(*took));   /* per call; NULL: no median */
    MPI_Barrier(comm);
    double start = MPI_Wtime(), last = start;
    for (int i = 0; i < iterations; i++) {
        errors += one_call(b, req);
        if (took != NULL) {
            double now = MPI_Wtime();
            took[i] = now - last;
            last = now;
        }
    }
    double average = (MPI_Wtime() - start) / iterations, slowest;
    double median = took != NULL ? median_of(took, iterations) : 0.0, slowest_median;
    free(took);
    MPI_Allreduce(&average, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
    MPI_Allreduce(&median, &slowest_median, 1, MPI_DOUBLE, MPI_MAX, comm);
    MPI_Allreduce(&errors, &row->errors, 1, MPI_INT, MPI_SUM, comm);

    row->iterations = iterations;
    row->time_us = slowest * 1e6;
    row->median_us = slowest_median * 1e6;
    row->algbw = slowest > 0.0 ? (double)row->bytes / slowest / 1e9 : 0.0;
    row->busbw = row->algbw * perf_coll_busbw_factor(b->call.coll, b->call.nranks);
}

/* One call on fresh inputs; the row gets the wrong elements over all ranks. */
static void check(const bench_t *b, const perf_options_t *o, perf_row_t *row)
{
    MPI_Request request;
    MPI_Request *req = o->nonblocking ? &request : NULL;
    int errors = fill_inputs(b);
    errors += poison_output(b);
    errors += one_call(b, req);
    if (!errors && b->memory != PERF_MEMORY_HOST)
        errors += perf_device_download(b->host_recv, b->device_recv,
                                       perf_call_extent(&b->call).output_bytes) != 0;
    perf_call_t view = host_view(b);
    long long wrong = errors ? 0 : (long long)perf_call_wrong(&view), total_wrong;
    int total_errors;
    MPI_Allreduce(&wrong, &total_wrong, 1, MPI_LONG_LONG, MPI_SUM, b->call.comm);
    MPI_Allreduce(&errors, &total_errors, 1, MPI_INT, MPI_SUM, b->call.comm);
    row->wrong = total_wrong;
    row->errors += total_errors;
}

/*
 * B for the floor columns: rank 0 copies on the GPU while the others wait
 * in a barrier (they share that GPU), then everyone gets the figure.
 * Returns B in GB/s, or a value <= 0 when rank 0 could not measure it.
 */
static double measure_floor(const perf_options_t *o, int rank, perf_floor_t *floor)
{
    const size_t least = 64u << 20, most = 1u << 30;
    memset(floor, 0, sizeof *floor);
    floor->copy_bytes = o->end_bytes < least ? least : o->end_bytes > most ? most : o->end_bytes;
    floor->repetitions = 5;
    if (rank == 0) {
        perf_device_describe(floor->device, sizeof floor->device);
        floor->copy_gbps = perf_device_copy_bandwidth(floor->copy_bytes, floor->repetitions);
        if (floor->copy_gbps <= 0.0)
            fprintf(stderr, "dfccl_perf: cannot measure the device copy bandwidth: %s\n",
                    perf_device_error());
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Bcast(&floor->copy_gbps, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return floor->copy_gbps;
}

/* Allocates the buffers `memory` needs; aborts the job with the reason when one fails. */
static void bench_alloc(bench_t *b, perf_memory_t memory, size_t bytes, int rank)
{
    b->memory = memory;
    b->host_send = malloc(bytes);
    b->host_recv = malloc(bytes);
    const char *failed = !b->host_send || !b->host_recv ? "malloc" : NULL;
    if (!failed && memory != PERF_MEMORY_HOST) {
        b->device_send = perf_device_alloc(bytes);
        b->device_recv = b->device_send ? perf_device_alloc(bytes) : NULL;
        if (!b->device_recv)
            failed = perf_device_error();
    }
    switch (memory) {
    case PERF_MEMORY_HOST:
        b->call.send = b->host_send;
        b->call.recv = b->host_recv;
        break;
    case PERF_MEMORY_DEVICE:
        b->call.send = b->device_send;
        b->call.recv = b->device_recv;
        break;
    case PERF_MEMORY_STAGED:
        if (!failed) {
            b->call.send = perf_device_alloc_pinned(bytes);
            b->call.recv = b->call.send ? perf_device_alloc_pinned(bytes) : NULL;
            if (!b->call.recv)
                failed = perf_device_error();
        }
        break;
    }
    if (failed) {
        fprintf(stderr, "dfccl_perf: rank %d cannot allocate two %s buffers of %zu bytes: %s\n",
                rank, perf_memory_name(memory), bytes, failed);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

static void bench_free(bench_t *b)
{
    if (b->memory == PERF_MEMORY_STAGED) {
        perf_device_free_pinned(b->call.send);
        perf_device_free_pinned(b->call.recv);
    }
    perf_device_free(b->device_send);
    perf_device_free(b->device_recv);
    free(b->host_send);
    free(b->host_recv);
}

/*
 * Device and staged memory: picks the GPU before MPI_Init, so that the
 * process's CUDA context (and anything MPI creates on it) lands there.
 * Options are parsed quietly here; rank 0 reports mistakes after MPI_Init.
 */
static void select_device_early(int argc, char **argv, char *error, size_t len)
{
    perf_options_t early;
    error[0] = '\0';
    if (perf_options_parse(&early, argc, argv, false) != 0 || early.memory == PERF_MEMORY_HOST)
        return;
    const char *local_rank = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    int device;
    perf_device_select(local_rank ? atoi(local_rank) : 0, &device, error, len);
}

/* Whether every rank has its GPU; otherwise the lowest failing rank says why. */
static bool devices_ready(const char *error, int rank, int nranks)
{
    int mine = error[0] ? rank : nranks, first;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first < nranks && rank == first)
        fprintf(stderr, "dfccl_perf: rank %d: --memory device/staged: %s\n", rank, error);
    return first == nranks;
}

int main(int argc, char **argv)
{
    enum { MAX_SIZES = 256 };
    char device_error[256];
    /* Whole lines: under mpirun stdout is a pipe, and a block-buffered table
     * would reach the launcher cut mid-row, with other ranks' log lines
     * spliced into the cut. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    select_device_early(argc, argv, device_error, sizeof device_error);
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    perf_options_t o;
    int parsed = perf_options_parse(&o, argc, argv, rank == 0);
    if (!parsed && o.memory != PERF_MEMORY_HOST && !devices_ready(device_error, rank, nranks))
        parsed = 2;
    if (parsed) {
        MPI_Finalize();
        return parsed == 1 ? 0 : 2;
    }

    size_t sizes[MAX_SIZES];
    size_t nsizes = sweep_sizes(&o, sizes, MAX_SIZES);
    size_t ncolls = 0;
    for (int c = 0; c < PERF_COLL_COUNT; c++)
        ncolls += o.colls[c];

    perf_floor_t floor_basis, *floor = NULL;
    if (o.memory != PERF_MEMORY_HOST) {
        /* before the sweep's buffers exist, so that the copy finds the memory it needs */
        if (measure_floor(&o, rank, &floor_basis) <= 0.0) {
            MPI_Finalize();
            return 2;
        }
        floor = &floor_basis;
    }

    /* Largest buffers any collective needs at the largest size, plus one element of slack. */
    size_t buffer_bytes = o.end_bytes + o.type->size;
    bench_t bench = {.call = {.type = o.type, .op = o.op, .in_place = o.in_place,
                              .rank = rank, .nranks = nranks}};
    perf_call_t *call = &bench.call;
    bench_alloc(&bench, o.memory, buffer_bytes, rank);
    call->recv_counts = malloc(sizeof(int) * (size_t)nranks);
    perf_row_t *rows = calloc(nsizes * ncolls + 1, sizeof *rows);
    if (!call->recv_counts || !rows) {
        fprintf(stderr, "dfccl_perf: rank %d is out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* A failed call is counted in the row rather than aborting the sweep. */
    MPI_Comm_dup(MPI_COMM_WORLD, &call->comm);
    MPI_Comm_set_errhandler(call->comm, MPI_ERRORS_RETURN);

    if (rank == 0)
        perf_report_header(stdout, &o, nranks, floor);
    size_t nrows = 0, step = 0;
    for (int c = 0; c < PERF_COLL_COUNT; c++) {
        if (!o.colls[c])
            continue;
        call->coll = (perf_coll_id_t)c;
        for (size_t s = 0; s < nsizes; s++) {
            step++;
            if (!perf_call_shape(call, sizes[s]))
                continue;  /* less than one element per rank */
            perf_row_t *row = &rows[nrows++];
            row->coll = call->coll;
            row->count = call->count;
            row->bytes = call->count * o.type->size;
            row->wrong = -1;
            /* --persistent: one request per size, for the timed calls and the check */
            MPI_Request persistent = MPI_REQUEST_NULL;
            bench.persistent = NULL;
            if (o.persistent) {
                if (perf_call_start(call, &persistent, true) == MPI_SUCCESS)
                    bench.persistent = &persistent;
                else
                    row->errors = 1;
            }
            if (!o.persistent || bench.persistent != NULL)
                measure(&bench, &o, row);
            if (floor) {
                perf_extent_t e = perf_call_extent(call);
                double moved = (double)nranks * (double)(e.input_bytes + e.output_bytes);
                row->floor_us = moved / (floor->copy_gbps * 1e9) * 1e6;
            }
            if (o.check && (!o.persistent || bench.persistent != NULL))
                check(&bench, &o, row);
            if (persistent != MPI_REQUEST_NULL)
                MPI_Request_free(&persistent);
            if (rank == 0) {
                if (o.progress)
                    perf_report_progress(row, step, nsizes * ncolls);
                perf_report_row(stdout, &o, row);
            }
        }
    }

    int passed = 0, failed = 0;
    for (size_t i = 0; i < nrows; i++)
        perf_row_passed(&rows[i]) ? passed++ : failed++;
    if (rank == 0) {
        if (o.progress)
            perf_report_progress_end();
        perf_report_summary(stdout, rows, nrows);
        if (o.json_path && perf_report_json(o.json_path, &o, nranks, floor, rows, nrows) != 0) {
            fprintf(stderr, "dfccl_perf: cannot write %s\n", o.json_path);
            failed++;
        }
        if (!o.check)
            printf("# without -c 1 the count below is of rows measured without errors\n");
        printf("dfccl_perf: %d passed, %d failed\n", passed, failed);
        fflush(stdout);
    }
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);

    MPI_Comm_free(&call->comm);
    free(rows);
    free(call->recv_counts);
    bench_free(&bench);
    MPI_Finalize();
    return failed ? 1 : 0;
}
