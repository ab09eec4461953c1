/* perf_options.h - dfccl_perf's command line (nccl-tests' letters where they exist). */
#ifndef DFCCL_PERF_OPTIONS_H
#define DFCCL_PERF_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "perf_colls.h"
#include "perf_types.h"

typedef struct {
    size_t begin_bytes, end_bytes;
    double factor;
    const perf_type_t *type;
    const perf_op_t *op;
    int warmup, iterations;
    bool in_place, nonblocking, check, progress;
    bool colls[PERF_COLL_COUNT];
    const char *json_path;   /* NULL: no JSON */
} perf_options_t;

/*
 * Parses argv on every rank alike. Returns 0 to run, 1 when --help was
 * printed, 2 on a usage error (message printed when `verbose`).
 */
int perf_options_parse(perf_options_t *options, int argc, char **argv, bool verbose);

/* "64K" -> 65536; K, M, G are powers of 1024. Returns -1 on a malformed size. */
int perf_size_parse(const char *text, size_t *bytes);

#endif
