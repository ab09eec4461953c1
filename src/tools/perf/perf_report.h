/*
 * perf_report.h - what rank 0 prints: the nccl-tests style table, the
 * summary, progress on stderr, and the same rows as JSON.
 */
#ifndef DFCCL_PERF_REPORT_H
#define DFCCL_PERF_REPORT_H

#include <stdio.h>

#include "tools/perf/perf_colls.h"
#include "tools/perf/perf_options.h"

typedef struct {
    perf_coll_id_t coll;
    size_t bytes, count;
    double time_us, algbw, busbw;
    double median_us;  /* the slowest rank's median call; 0: not measured */
    long long wrong;   /* -1: not checked; otherwise wrong elements over all ranks */
    int errors;        /* MPI calls that returned an error, over all ranks */
    int iterations;    /* timed calls: -n, or fewer under --time-budget */
    double floor_us;   /* device memory: (input + output bytes over all ranks) / B */
} perf_row_t;

/*
 * What the floor columns of device memory rest on: every rank shares one
 * GPU, so no collective can beat moving its inputs and outputs once through
 * that GPU's memory at the bandwidth of a device-to-device copy.
 */
typedef struct {
    char device[128];   /* rank 0's GPU, as perf_device_describe() words it */
    double copy_gbps;   /* B, counting read and write bytes */
    size_t copy_bytes;  /* bytes per measured copy */
    int repetitions;    /* B is the median of these */
} perf_floor_t;

/* floor is NULL in host memory: then no device lines or columns are printed. */
void perf_report_header(FILE *out, const perf_options_t *options, int nranks,
                        const perf_floor_t *floor);
void perf_report_row(FILE *out, const perf_options_t *options, const perf_row_t *row);
void perf_report_summary(FILE *out, const perf_row_t *rows, size_t nrows);
/* One progress update for the size just measured (step of steps). */
void perf_report_progress(const perf_row_t *row, size_t step, size_t steps);
void perf_report_progress_end(void);
/* Returns 0, or -1 when the file could not be written. */
int perf_report_json(const char *path, const perf_options_t *options, int nranks,
                     const perf_floor_t *floor, const perf_row_t *rows, size_t nrows);
/* A row passes when no call failed and, under --check, nothing was wrong. */
int perf_row_passed(const perf_row_t *row);

#endif
