/* perf_report.c - table, summary, progress and JSON output of dfccl_perf. */
#include "tools/perf/perf_report.h"

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

/* The floor columns exist wherever the buffers are device memory. */
static bool has_floor(const perf_options_t *o) { return o->memory != PERF_MEMORY_HOST; }

void perf_report_header(FILE *out, const perf_options_t *o, int nranks,
                        const perf_floor_t *floor)
{
    fprintf(out, "# dfccl_perf: np %d, memory %s, minBytes %zu, maxBytes %zu, step x%g, "
                 "warmup %d, iters %d, %s, %s, check %s\n",
            nranks, perf_memory_name(o->memory), o->begin_bytes, o->end_bytes, o->factor,
            o->warmup, o->iterations, o->in_place ? "in-place" : "out-of-place",
            o->persistent ? "persistent" : o->nonblocking ? "nonblocking" : "blocking",
            o->check ? "on" : "off");
    if (o->time_budget > 0.0)
        fprintf(out, "# time budget %g s per size: slow sizes run fewer warm-up and timed "
                     "calls (the JSON rows give the timed count)\n", o->time_budget);
    if (o->memory == PERF_MEMORY_STAGED)
        fprintf(out, "# staged: each call copies its input device -> page-locked host, calls "
                     "MPI on host buffers and copies the output back; the time includes "
                     "the copies\n");
    if (floor)
        fprintf(out, "# device %s; B = %.1f GB/s (cudaMemcpy device to device of %zu B, "
                     "median of %d, read + write bytes)\n"
                     "# floor = (input + output bytes over all ranks) / B; "
                     "%%floor = floor / time x 100\n",
                floor->device, floor->copy_gbps, floor->copy_bytes, floor->repetitions);
    fprintf(out, "#\n# %-20s %12s %12s %7s %6s %10s %10s %8s %8s %7s", "collective", "size",
            "count", "type", "redop", "time", "median", "algbw", "busbw", "#wrong");
    if (has_floor(o))
        fprintf(out, " %10s %7s", "floor", "%floor");
    fprintf(out, "\n# %-20s %12s %12s %7s %6s %10s %10s %8s %8s %7s", "", "(B)", "(elements)", "",
            "", "(us)", "(us)", "(GB/s)", "(GB/s)", "");
    if (has_floor(o))
        fprintf(out, " %10s %7s", "(us)", "");
    fprintf(out, "\n");
}

/* floor as a share of the measured time; 0 where nothing was measured */
static double floor_percent(const perf_row_t *r)
{
    return r->time_us > 0.0 ? r->floor_us / r->time_us * 100.0 : 0.0;
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
    fprintf(out, "  %-20s %12zu %12zu %7s %6s %10.2f %10.2f %8.3f %8.3f %7s",
            perf_coll_name(r->coll), r->bytes, r->count, o->type->name, op_column(o, r->coll),
            r->time_us, r->median_us, r->algbw, r->busbw, wrong);
    if (has_floor(o))
        fprintf(out, " %10.2f %7.2f", r->floor_us, floor_percent(r));
    fprintf(out, "\n");
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
                     const perf_floor_t *floor, const perf_row_t *rows, size_t nrows)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\n  \"tool\": \"dfccl_perf\",\n  \"np\": %d,\n  \"memory\": \"%s\",\n",
            nranks, perf_memory_name(o->memory));
    if (floor)
        fprintf(f, "  \"device\": \"%s\",\n  \"device_copy_gbps\": %.3f,\n"
                   "  \"device_copy_bytes\": %zu,\n  \"device_copy_repetitions\": %d,\n",
                floor->device, floor->copy_gbps, floor->copy_bytes, floor->repetitions);
    if (o->time_budget > 0.0)
        fprintf(f, "  \"time_budget_s\": %g,\n", o->time_budget);
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
               "  \"nonblocking\": %s,\n  \"persistent\": %s,\n  \"check\": %s,\n"
               "  \"rows\": [",
            o->warmup, o->iterations, o->in_place ? "true" : "false",
            o->nonblocking ? "true" : "false", o->persistent ? "true" : "false",
            o->check ? "true" : "false");
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
                   "\"median_us\": %.3f, \"algbw_gbps\": %.6f, \"busbw_gbps\": %.6f, "
                   "\"wrong\": %s, \"errors\": %d",
                i ? "," : "", perf_coll_name(r->coll), r->bytes, r->count, o->type->name,
                op_column(o, r->coll), r->time_us, r->median_us, r->algbw, r->busbw, wrong,
                r->errors);
        if (o->time_budget > 0.0)
            fprintf(f, ", \"iterations\": %d", r->iterations);
        if (has_floor(o))
            fprintf(f, ", \"floor_us\": %.3f, \"floor_pct\": %.3f", r->floor_us,
                    floor_percent(r));
        fprintf(f, "}");
        busbw_sum += r->busbw;
    }
    fprintf(f, "\n  ],\n  \"avg_busbw_gbps\": %.6f\n}\n",
            nrows ? busbw_sum / (double)nrows : 0.0);
    return fclose(f) == 0 ? 0 : -1;
}
