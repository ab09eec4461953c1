/*
 * perf_report.h - what rank 0 prints: the nccl-tests style table, the
 * summary, progress on stderr, and the same rows as JSON.
 */
#ifndef DFCCL_PERF_REPORT_H
#define DFCCL_PERF_REPORT_H

#include <stdio.h>

#include "perf_colls.h"
#include "perf_options.h"

typedef struct {
    perf_coll_id_t coll;
    size_t bytes, count;
    double time_us, algbw, busbw;
    long long wrong;   /* -1: not checked; otherwise wrong elements over all ranks */
    int errors;        /* MPI calls that returned an error, over all ranks */
} perf_row_t;

void perf_report_header(FILE *out, const perf_options_t *options, int nranks);
void perf_report_row(FILE *out, const perf_options_t *options, const perf_row_t *row);
void perf_report_summary(FILE *out, const perf_row_t *rows, size_t nrows);
/* One progress update for the size just measured (step of steps). */
void perf_report_progress(const perf_row_t *row, size_t step, size_t steps);
void perf_report_progress_end(void);
/* Returns 0, or -1 when the file could not be written. */
int perf_report_json(const char *path, const perf_options_t *options, int nranks,
                     const perf_row_t *rows, size_t nrows);
/* A row passes when no call failed and, under --check, nothing was wrong. */
int perf_row_passed(const perf_row_t *row);

#endif
