/*
 * dfccl_perf.c - bandwidth and latency of MPI_Allreduce, MPI_Allgather,
 * MPI_Reduce_scatter and MPI_Reduce_scatter_block (and their I-forms) over a
 * size sweep, printed like nccl-tests so that figures compare directly.
 *
 * Each size: inputs written, -w untimed calls, a barrier, -n timed calls;
 * the time is the largest over ranks of the average per call. With -c 1
 * one further call on fresh inputs is compared with a local reference.
 * Rank 0 ends with "dfccl_perf: N passed, M failed" (rows without wrong
 * elements or failed calls), which the project's test driver reads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

#include "perf_colls.h"
#include "perf_options.h"
#include "perf_report.h"

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

/* Times one size; fills the row's time, bandwidths and error count (all ranks agree). */
static void measure(const perf_call_t *call, const perf_options_t *o, perf_row_t *row)
{
    int errors = 0;
    MPI_Request request;
    MPI_Request *req = o->nonblocking ? &request : NULL;

    perf_call_fill(call);
    for (int i = 0; i < o->warmup; i++) {
        errors += perf_call_start(call, req) != MPI_SUCCESS;
        if (req)
            errors += MPI_Wait(req, MPI_STATUS_IGNORE) != MPI_SUCCESS;
    }
    MPI_Barrier(call->comm);
    double start = MPI_Wtime();
    for (int i = 0; i < o->iterations; i++) {
        errors += perf_call_start(call, req) != MPI_SUCCESS;
        if (req)
            errors += MPI_Wait(req, MPI_STATUS_IGNORE) != MPI_SUCCESS;
    }
    double average = (MPI_Wtime() - start) / o->iterations, slowest;
    MPI_Allreduce(&average, &slowest, 1, MPI_DOUBLE, MPI_MAX, call->comm);
    MPI_Allreduce(&errors, &row->errors, 1, MPI_INT, MPI_SUM, call->comm);

    row->time_us = slowest * 1e6;
    row->algbw = slowest > 0.0 ? (double)row->bytes / slowest / 1e9 : 0.0;
    row->busbw = row->algbw * perf_coll_busbw_factor(call->coll, call->nranks);
}

/* One call on fresh inputs; the row gets the wrong elements over all ranks. */
static void check(const perf_call_t *call, const perf_options_t *o, perf_row_t *row)
{
    MPI_Request request;
    MPI_Request *req = o->nonblocking ? &request : NULL;
    int errors = 0;
    perf_call_fill(call);
    errors += perf_call_start(call, req) != MPI_SUCCESS;
    if (req)
        errors += MPI_Wait(req, MPI_STATUS_IGNORE) != MPI_SUCCESS;
    long long wrong = errors ? 0 : (long long)perf_call_wrong(call), total_wrong;
    int total_errors;
    MPI_Allreduce(&wrong, &total_wrong, 1, MPI_LONG_LONG, MPI_SUM, call->comm);
    MPI_Allreduce(&errors, &total_errors, 1, MPI_INT, MPI_SUM, call->comm);
    row->wrong = total_wrong;
    row->errors += total_errors;
}

int main(int argc, char **argv)
{
    enum { MAX_SIZES = 256 };
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    perf_options_t o;
    int parsed = perf_options_parse(&o, argc, argv, rank == 0);
    if (parsed) {
        MPI_Finalize();
        return parsed == 1 ? 0 : 2;
    }

    size_t sizes[MAX_SIZES];
    size_t nsizes = sweep_sizes(&o, sizes, MAX_SIZES);
    size_t ncolls = 0;
    for (int c = 0; c < PERF_COLL_COUNT; c++)
        ncolls += o.colls[c];

    /* Largest buffers any collective needs at the largest size, plus one element of slack. */
    size_t buffer_bytes = o.end_bytes + o.type->size;
    perf_call_t call = {.type = o.type, .op = o.op, .in_place = o.in_place,
                        .rank = rank, .nranks = nranks};
    call.send = malloc(buffer_bytes);
    call.recv = malloc(buffer_bytes);
    call.recv_counts = malloc(sizeof(int) * (size_t)nranks);
    perf_row_t *rows = calloc(nsizes * ncolls + 1, sizeof *rows);
    if (!call.send || !call.recv || !call.recv_counts || !rows) {
        fprintf(stderr, "dfccl_perf: rank %d cannot allocate %zu bytes twice\n", rank,
                buffer_bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* A failed call is counted in the row rather than aborting the sweep. */
    MPI_Comm_dup(MPI_COMM_WORLD, &call.comm);
    MPI_Comm_set_errhandler(call.comm, MPI_ERRORS_RETURN);

    if (rank == 0)
        perf_report_header(stdout, &o, nranks);
    size_t nrows = 0, step = 0;
    for (int c = 0; c < PERF_COLL_COUNT; c++) {
        if (!o.colls[c])
            continue;
        call.coll = (perf_coll_id_t)c;
        for (size_t s = 0; s < nsizes; s++) {
            step++;
            if (!perf_call_shape(&call, sizes[s]))
                continue;  /* less than one element per rank */
            perf_row_t *row = &rows[nrows++];
            row->coll = call.coll;
            row->count = call.count;
            row->bytes = call.count * o.type->size;
            row->wrong = -1;
            measure(&call, &o, row);
            if (o.check)
                check(&call, &o, row);
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
        if (o.json_path && perf_report_json(o.json_path, &o, nranks, rows, nrows) != 0) {
            fprintf(stderr, "dfccl_perf: cannot write %s\n", o.json_path);
            failed++;
        }
        if (!o.check)
            printf("# without -c 1 the count below is of rows measured without errors\n");
        printf("dfccl_perf: %d passed, %d failed\n", passed, failed);
        fflush(stdout);
    }
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);

    MPI_Comm_free(&call.comm);
    free(rows);
    free(call.recv_counts);
    free(call.send);
    free(call.recv);
    MPI_Finalize();
    return failed ? 1 : 0;
}
