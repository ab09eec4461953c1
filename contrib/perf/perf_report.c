/* perf_report.c - table, summary, progress and JSON output of dfccl_perf. */
#include "perf_report.h"

#include <stdbool.h>
#include <unistd.h>

static const char *op_column(const perf_options_t *o, perf_coll_id_t coll)
{
    return perf_coll_reduces(coll) ? o->op->name : "none";
}

int perf_row_passed(const perf_row_t *row)
{
    return row->errors == 0 && row->wrong <= 0;
}

void perf_report_header(FILE *out, const perf_options_t *o, int nranks)
{
    fprintf(out, "# dfccl_perf: np %d, memory host, minBytes %zu, maxBytes %zu, step x%g, "
                 "warmup %d, iters %d, %s, %s, check %s\n",
            nranks, o->begin_bytes, o->end_bytes, o->factor, o->warmup, o->iterations,
            o->in_place ? "in-place" : "out-of-place",
            o->nonblocking ? "nonblocking" : "blocking", o->check ? "on" : "off");
    fprintf(out, "#\n# %-20s %12s %12s %7s %6s %10s %8s %8s %7s\n", "collective", "size",
            "count", "type", "redop", "time", "algbw", "busbw", "#wrong");
    fprintf(out, "# %-20s %12s %12s %7s %6s %10s %8s %8s %7s\n", "", "(B)", "(elements)", "",
            "", "(us)", "(GB/s)", "(GB/s)", "");
}

void perf_report_row(FILE *out, const perf_options_t *o, const perf_row_t *r)
{
    char wrong[24];
    if (r->errors)
        snprintf(wrong, sizeof wrong, "ERR");
    else if (r->wrong < 0)
        snprintf(wrong, sizeof wrong, "N/A");
    else
        snprintf(wrong, sizeof wrong, "%lld", r->wrong);
    fprintf(out, "  %-20s %12zu %12zu %7s %6s %10.2f %8.3f %8.3f %7s\n",
            perf_coll_name(r->coll), r->bytes, r->count, o->type->name, op_column(o, r->coll),
            r->time_us, r->algbw, r->busbw, wrong);
    fflush(out);
}

void perf_report_summary(FILE *out, const perf_row_t *rows, size_t nrows)
{
    double sum = 0.0;
    long long wrong = 0;
    for (size_t i = 0; i < nrows; i++) {
        sum += rows[i].busbw;
        wrong += rows[i].wrong > 0 ? rows[i].wrong : 0;
    }
    fprintf(out, "# Out of bounds values : %lld %s\n", wrong, wrong ? "FAILED" : "OK");
    fprintf(out, "# Avg bus bandwidth    : %g\n#\n", nrows ? sum / (double)nrows : 0.0);
}

/* A terminal gets one line rewritten in place; a log gets one line per size. */
void perf_report_progress(const perf_row_t *row, size_t step, size_t steps)
{
    bool tty = isatty(STDERR_FILENO);
    fprintf(stderr, "%sdfccl_perf: %zu/%zu %s %zu B%s", tty ? "\r\033[K" : "", step, steps,
            perf_coll_name(row->coll), row->bytes, tty ? "" : "\n");
    fflush(stderr);
}

void perf_report_progress_end(void)
{
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "\r\033[K");
}

int perf_report_json(const char *path, const perf_options_t *o, int nranks,
                     const perf_row_t *rows, size_t nrows)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\n  \"tool\": \"dfccl_perf\",\n  \"np\": %d,\n  \"memory\": \"host\",\n",
            nranks);
    fprintf(f, "  \"collectives\": [");
    for (int c = 0, first = 1; c < PERF_COLL_COUNT; c++)
        if (o->colls[c]) {
            fprintf(f, "%s\"%s\"", first ? "" : ", ", perf_coll_name(c));
            first = 0;
        }
    fprintf(f, "],\n  \"datatype\": \"%s\",\n  \"op\": \"%s\",\n", o->type->name, o->op->name);
    fprintf(f, "  \"min_bytes\": %zu,\n  \"max_bytes\": %zu,\n  \"step_factor\": %g,\n",
            o->begin_bytes, o->end_bytes, o->factor);
    fprintf(f, "  \"warmup\": %d,\n  \"iterations\": %d,\n  \"in_place\": %s,\n"
               "  \"nonblocking\": %s,\n  \"check\": %s,\n  \"rows\": [",
            o->warmup, o->iterations, o->in_place ? "true" : "false",
            o->nonblocking ? "true" : "false", o->check ? "true" : "false");
    double busbw_sum = 0.0;
    for (size_t i = 0; i < nrows; i++) {
        const perf_row_t *r = &rows[i];
        char wrong[24];
        if (r->wrong < 0 && !r->errors)
            snprintf(wrong, sizeof wrong, "null");
        else
            snprintf(wrong, sizeof wrong, "%lld", r->wrong > 0 ? r->wrong : 0);
        fprintf(f, "%s\n    {\"collective\": \"%s\", \"size\": %zu, \"count\": %zu, "
                   "\"type\": \"%s\", \"op\": \"%s\", \"time_us\": %.3f, "
                   "\"algbw_gbps\": %.6f, \"busbw_gbps\": %.6f, \"wrong\": %s, "
                   "\"errors\": %d}",
                i ? "," : "", perf_coll_name(r->coll), r->bytes, r->count, o->type->name,
                op_column(o, r->coll), r->time_us, r->algbw, r->busbw, wrong, r->errors);
        busbw_sum += r->busbw;
    }
    fprintf(f, "\n  ],\n  \"avg_busbw_gbps\": %.6f\n}\n",
            nrows ? busbw_sum / (double)nrows : 0.0);
    return fclose(f) == 0 ? 0 : -1;
}
