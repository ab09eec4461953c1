/* perf_options.h - dfccl_perf's command line (nccl-tests' letters where they exist). */
#ifndef DFCCL_PERF_OPTIONS_H
#define DFCCL_PERF_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "tools/perf/perf_colls.h"
#include "tools/perf/perf_types.h"

/*
 * Where the buffers live. device: cudaMalloc buffers handed to MPI as they
 * are; staged: the same device buffers, but each timed call copies the
 * input to page-locked host memory, calls MPI on that and copies the result
 * back (the baseline of an MPI that is not CUDA-aware).
 */
typedef enum { PERF_MEMORY_HOST, PERF_MEMORY_DEVICE, PERF_MEMORY_STAGED } perf_memory_t;

typedef struct {
    size_t begin_bytes, end_bytes;
    double factor;
    const perf_type_t *type;
    const perf_op_t *op;
    int warmup, iterations;
    double time_budget;      /* seconds of calls per size; 0: always -w and -n calls */
    perf_memory_t memory;
    bool in_place, nonblocking, persistent, check, progress;
    bool colls[PERF_COLL_COUNT];
    const char *json_path;   /* NULL: no JSON */
} perf_options_t;

/*
 * Parses argv on every rank alike. Returns 0 to run, 1 when --help was
 * printed, 2 on a usage error (message printed when `verbose`).
 */
int perf_options_parse(perf_options_t *options, int argc, char **argv, bool verbose);

const char *perf_memory_name(perf_memory_t memory);

/* "64K" -> 65536; K, M, G are powers of 1024. Returns -1 on a malformed size. */
int perf_size_parse(const char *text, size_t *bytes);

#endif
