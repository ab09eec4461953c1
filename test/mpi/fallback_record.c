/* fallback_record.c - fallback_check's verdicts: a call's return code, its
 * result check and the engine's counters, recorded per case. */
#include <stdio.h>
#include "fallback_check.h"

/* Deterministic input: small integers whose sums stay exact everywhere. */
int input_of(int rank, int index)
{
    return (rank * 7 + index * 3) % 23 - 11;
}

void report(context_t *ctx, const char *name, bool blocking, const char *why)
{
    fprintf(stderr, "FAIL rank %d case=%s %s: %s\n", ctx->world_rank, name,
            blocking ? "blocking" : "nonblocking", why);
}

/* Records one checked call: its return code, the caller's result check and
 * the engine's counters: unchanged (a fallback), or for an allgather the
 * engine carries as bytes (gather_rise), up by one when the engine runs. */
void record_rise(context_t *ctx, const char *name, bool blocking, int rc,
                        const engine_snapshot_t *before, bool results_ok,
                        const char *result_why, bool gather_rise)
{
    char why[MPI_MAX_ERROR_STRING + 64];
    bool passed = true, counters_ok;

    if (rc != MPI_SUCCESS) {
        char message[MPI_MAX_ERROR_STRING];
        int length = 0;
        MPI_Error_string(rc, message, &length);
        snprintf(why, sizeof why, "returned error %d: %s", rc, message);
        report(ctx, name, blocking, why);
        passed = false;
    } else if (!results_ok) {
        report(ctx, name, blocking, result_why);
        passed = false;
    }
    counters_ok = gather_rise
        ? engine_rise_ok(before, DFCCL_COLL_ALLGATHER, ctx->expect == EXPECT_ENGINE ? 1 : 0, why,
                         sizeof why)
        : engine_unchanged(before, why, sizeof why);
    if (!counters_ok) {
        report(ctx, name, blocking, why);
        passed = false;
    }
    verdict_log_record(&ctx->log, passed);
}

void record(context_t *ctx, const char *name, bool blocking, int rc,
                   const engine_snapshot_t *before, bool results_ok, const char *result_why)
{
    record_rise(ctx, name, blocking, rc, before, results_ok, result_why, false);
}

/* An allgather the engine carries although its datatypes are not the
 * reductions' predefined ones: layouts travel as bytes (packed where they
 * are not contiguous), so that ranks describing the same data differently
 * take the same route. */
void record_gather_bytes(context_t *ctx, const char *name, bool blocking, int rc,
                                const engine_snapshot_t *before, bool results_ok,
                                const char *result_why)
{
    record_rise(ctx, name, blocking, rc, before, results_ok, result_why, true);
}

/* Compares n ints; on a mismatch describes the first one in `why`. */
bool ints_match(const int *got, const int *expected, int n, char *why,
                       size_t why_len)
{
    for (int i = 0; i < n; i++) {
        if (got[i] != expected[i]) {
            snprintf(why, why_len, "index %d: got %d, expected %d", i, got[i],
                     expected[i]);
            return false;
        }
    }
    return true;
}

void fill_poison(int *buf, int n)
{
    for (int i = 0; i < n; i++)
        buf[i] = POISON_INT;
}

/* Records a call that stock Open MPI refuses: the class must match and the
 * engine must not have seen it. */
void record_refusal(context_t *ctx, const char *name, bool blocking, int rc,
                           int expected_class, const engine_snapshot_t *before)
{
    int error_class = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &error_class);
    char why[96];
    snprintf(why, sizeof why, "error class %d, expected %d", error_class, expected_class);
    record(ctx, name, blocking, MPI_SUCCESS, before, error_class == expected_class, why);
}
