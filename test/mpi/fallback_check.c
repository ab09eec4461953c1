/*
 * fallback_check.c - calls the engine must NOT carry still give correct
 * results through Open MPI's stock path, and leave the engine's counters
 * unchanged: derived datatypes (contiguous and vector), MAXLOC/MINLOC on
 * pair types, user ops, types outside the carried list, and
 * inter-communicators. Each case runs on world, a dup and a parity split,
 * blocking and nonblocking. Allgathers (derived types, contiguous or strided,
 * other predefined types, differing send/recv types of equal signature) are
 * carried as bytes, strided layouts packed, and checked here for that too.
 *
 * A control call that the engine does carry (allreduce of MPI_INT, SUM)
 * opens and closes the run: with --expect engine it must raise the counter
 * by 1, which shows the counters are live and the fallbacks are real.
 */
#include <complex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

#include "coll_calls.h"
#include "dfccl.h"
#include "test_util.h"

#define MAX_ELEMS 4096
#define POISON_INT (-7777777)

typedef struct {
    expect_mode_t expect;
    int           world_rank, world_size;
    verdict_log_t log;
} context_t;

/* Everything one case needs to know about the comm it runs on. */
typedef struct {
    MPI_Comm comm;
    bool     is_inter;
    int      rank, size;       /* local group */
    int      remote_size;      /* inter-communicators only */
    int      remote_first;     /* world rank of remote rank 0 / stride 2 */
} case_comm_t;

/* Deterministic input: small integers whose sums stay exact everywhere. */
static int input_of(int rank, int index)
{
    return (rank * 7 + index * 3) % 23 - 11;
}

static void report(context_t *ctx, const char *name, bool blocking, const char *why)
{
    fprintf(stderr, "FAIL rank %d case=%s %s: %s\n", ctx->world_rank, name,
            blocking ? "blocking" : "nonblocking", why);
}

/* Records one checked call: its return code, the caller's result check and
 * the engine's counters: unchanged (a fallback), or for an allgather the
 * engine carries as bytes (gather_rise), up by one when the engine runs. */
static void record_rise(context_t *ctx, const char *name, bool blocking, int rc,
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

static void record(context_t *ctx, const char *name, bool blocking, int rc,
                   const engine_snapshot_t *before, bool results_ok, const char *result_why)
{
    record_rise(ctx, name, blocking, rc, before, results_ok, result_why, false);
}

/* An allgather the engine carries although its datatypes are not the
 * reductions' predefined ones: layouts travel as bytes (packed where they
 * are not contiguous), so that ranks describing the same data differently
 * take the same route. */
static void record_gather_bytes(context_t *ctx, const char *name, bool blocking, int rc,
                                const engine_snapshot_t *before, bool results_ok,
                                const char *result_why)
{
    record_rise(ctx, name, blocking, rc, before, results_ok, result_why, true);
}

/* Compares n ints; on a mismatch describes the first one in `why`. */
static bool ints_match(const int *got, const int *expected, int n, char *why,
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

static void fill_poison(int *buf, int n)
{
    for (int i = 0; i < n; i++)
        buf[i] = POISON_INT;
}

/* ---- the control call ------------------------------------------------- */

static void check_control(context_t *ctx, const char *name)
{
    int send[4], recv[4], expected[4];
    for (int i = 0; i < 4; i++) {
        send[i] = input_of(ctx->world_rank, i);
        expected[i] = 0;
        for (int r = 0; r < ctx->world_size; r++)
            expected[i] += input_of(r, i);
    }
    fill_poison(recv, 4);
    engine_snapshot_t before;
    engine_snapshot_take(&before);
    int rc = MPI_Allreduce(send, recv, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    char why[MPI_MAX_ERROR_STRING + 64] = "";
    bool passed = rc == MPI_SUCCESS && ints_match(recv, expected, 4, why, sizeof why);
    if (!passed)
        report(ctx, name, true, rc != MPI_SUCCESS ? "returned an error" : why);
    uint64_t rise = ctx->expect == EXPECT_ENGINE ? 1 : 0;
    if (!engine_rise_ok(&before, DFCCL_COLL_ALLREDUCE, rise, why, sizeof why)) {
        report(ctx, name, true, why);
        passed = false;
    }
    verdict_log_record(&ctx->log, passed);
}

/* ---- derived datatypes ------------------------------------------------ */

/*
 * Stock Open MPI 4.1.4 accepts predefined ops on predefined datatypes only:
 * a derived type with MPI_SUM is refused with MPI_ERR_OP before any
 * collective component sees it. Reductions of derived types are therefore
 * run with user ops (which receive the derived type); the refusal itself is
 * checked as well, since the engine must not carry it either.
 */

/* User op: elementwise int sum over a type made of ints without holes. */
static void sum_packed_ints(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int type_size;
    MPI_Type_size(*type, &type_size);
    const int *a = in;
    int *b = inout;
    size_t n = (size_t)*len * (size_t)type_size / sizeof(int);
    for (size_t i = 0; i < n; i++)
        b[i] += a[i];
}

/* User op for the every-other-int vector below: sums ints 0 and 2 of each
 * 4-int extent and leaves the holes alone. */
static void sum_every_other_int(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const int *a = in;
    int *b = inout;
    for (int v = 0; v < *len; v++) {
        b[4 * v] += a[4 * v];
        b[4 * v + 2] += a[4 * v + 2];
    }
}

/* Records a call that stock Open MPI refuses: the class must match and the
 * engine must not have seen it. */
static void record_refusal(context_t *ctx, const char *name, bool blocking, int rc,
                           int expected_class, const engine_snapshot_t *before)
{
    int error_class = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &error_class);
    char why[96];
    snprintf(why, sizeof why, "error class %d, expected %d", error_class, expected_class);
    record(ctx, name, blocking, MPI_SUCCESS, before, error_class == expected_class, why);
}

/* MPI_INT triples built with MPI_Type_contiguous: the same bytes as
 * MPI_INT, but not a predefined type. */
static void check_contiguous_derived(context_t *ctx, const case_comm_t *cc, bool blocking)
{
    MPI_Datatype triple;
    MPI_Type_contiguous(3, MPI_INT, &triple);
    MPI_Type_commit(&triple);
    MPI_Op packed_sum;
    MPI_Op_create(sum_packed_ints, 1, &packed_sum);
    enum { TRIPLES = 5 };
    static int send[MAX_ELEMS], recv[MAX_ELEMS], expected[MAX_ELEMS];
    char why[128] = "";
    engine_snapshot_t before;

    int n = 3 * TRIPLES;
    for (int i = 0; i < n; i++) {
        send[i] = input_of(cc->rank, i);
        expected[i] = 0;
        for (int r = 0; r < cc->size; r++)
            expected[i] += input_of(r, i);
    }
    fill_poison(recv, n);
    engine_snapshot_take(&before);
    int rc = allreduce_call(blocking, send, recv, TRIPLES, triple, packed_sum, cc->comm);
    record(ctx, "contiguous_derived_user_op_allreduce", blocking, rc, &before,
           ints_match(recv, expected, n, why, sizeof why), why);

    engine_snapshot_take(&before);
    rc = allreduce_call(blocking, send, recv, TRIPLES, triple, MPI_SUM, cc->comm);
    record_refusal(ctx, "contiguous_derived_mpi_sum_allreduce_refused", blocking, rc,
                   MPI_ERR_OP, &before);

    /* reduce_scatter_block: each rank gets TRIPLES triples. */
    if (3 * TRIPLES * cc->size <= MAX_ELEMS) {
        n = 3 * TRIPLES * cc->size;
        for (int i = 0; i < n; i++)
            send[i] = input_of(cc->rank, i);
        for (int i = 0; i < 3 * TRIPLES; i++) {
            int global = 3 * TRIPLES * cc->rank + i;
            expected[i] = 0;
            for (int r = 0; r < cc->size; r++)
                expected[i] += input_of(r, global);
        }
        fill_poison(recv, 3 * TRIPLES);
        engine_snapshot_take(&before);
        rc = reduce_scatter_block_call(blocking, send, recv, TRIPLES, triple,
                                       packed_sum, cc->comm);
        record(ctx, "contiguous_derived_user_op_reduce_scatter_block", blocking, rc,
               &before, ints_match(recv, expected, 3 * TRIPLES, why, sizeof why), why);

        engine_snapshot_take(&before);
        rc = reduce_scatter_block_call(blocking, send, recv, TRIPLES, triple, MPI_SUM,
                                       cc->comm);
        record_refusal(ctx, "contiguous_derived_mpi_sum_reduce_scatter_block_refused",
                       blocking, rc, MPI_ERR_OP, &before);
    }

    /* Allgather with the same derived type on both sides. */
    if (3 * cc->size <= MAX_ELEMS) {
        for (int i = 0; i < 3; i++)
            send[i] = input_of(cc->rank, i);
        for (int r = 0; r < cc->size; r++)
            for (int i = 0; i < 3; i++)
                expected[3 * r + i] = input_of(r, i);
        fill_poison(recv, 3 * cc->size);
        engine_snapshot_take(&before);
        rc = allgather_call(blocking, send, 1, triple, recv, 1, triple, cc->comm);
        record_gather_bytes(ctx, "contiguous_derived_allgather", blocking, rc, &before,
               ints_match(recv, expected, 3 * cc->size, why, sizeof why), why);
    }
    MPI_Op_free(&packed_sum);
    MPI_Type_free(&triple);
}

/* A vector type with holes: every other int of 4, resized so consecutive
 * elements tile memory. The holes must keep their poison. */
static void check_vector(context_t *ctx, const case_comm_t *cc, bool blocking)
{
    MPI_Datatype strided, every_other;
    MPI_Type_vector(2, 1, 2, MPI_INT, &strided);
    MPI_Type_create_resized(strided, 0, 4 * (MPI_Aint)sizeof(int), &every_other);
    MPI_Type_commit(&every_other);
    MPI_Type_free(&strided);
    MPI_Op strided_sum;
    MPI_Op_create(sum_every_other_int, 1, &strided_sum);
    enum { VECTORS = 3 };
    static int send[MAX_ELEMS], recv[MAX_ELEMS], expected[MAX_ELEMS];
    char why[128] = "";
    engine_snapshot_t before;

    int n = 4 * VECTORS;
    for (int i = 0; i < n; i++) {
        send[i] = input_of(cc->rank, i);
        expected[i] = POISON_INT;
        if (i % 2 == 0) {
            expected[i] = 0;
            for (int r = 0; r < cc->size; r++)
                expected[i] += input_of(r, i);
        }
    }
    fill_poison(recv, n);
    engine_snapshot_take(&before);
    int rc = allreduce_call(blocking, send, recv, VECTORS, every_other, strided_sum,
                            cc->comm);
    record(ctx, "vector_user_op_allreduce", blocking, rc, &before,
           ints_match(recv, expected, n, why, sizeof why), why);

    engine_snapshot_take(&before);
    rc = allreduce_call(blocking, send, recv, VECTORS, every_other, MPI_SUM, cc->comm);
    record_refusal(ctx, "vector_mpi_sum_allreduce_refused", blocking, rc, MPI_ERR_OP,
                   &before);

    if (4 * cc->size <= MAX_ELEMS) {
        for (int i = 0; i < 4; i++)
            send[i] = input_of(cc->rank, i);
        for (int r = 0; r < cc->size; r++)
            for (int i = 0; i < 4; i++)
                expected[4 * r + i] = i % 2 == 0 ? input_of(r, i) : POISON_INT;
        fill_poison(recv, 4 * cc->size);
        engine_snapshot_take(&before);
        rc = allgather_call(blocking, send, 1, every_other, recv, 1, every_other,
                            cc->comm);
        record_gather_bytes(ctx, "vector_allgather", blocking, rc, &before,
               ints_match(recv, expected, 4 * cc->size, why, sizeof why), why);
    }
    MPI_Op_free(&strided_sum);
    MPI_Type_free(&every_other);
}

/* ---- MAXLOC / MINLOC -------------------------------------------------- */

typedef struct { int value; int index; } int_pair_t;
typedef struct { double value; int index; } double_int_t;

/* Values tie between ranks on purpose: MAXLOC/MINLOC then pick the lowest
 * index, which a wrong implementation easily gets wrong. */
static int loc_value(int rank, int i)
{
    return (rank * 5 + i * 3) % 4;
}

static void check_maxloc_minloc(context_t *ctx, const case_comm_t *cc, bool blocking)
{
    enum { N = 9 };
    int_pair_t isend[N * 64], irecv[N], iexpected[N];
    double_int_t dsend[N], drecv[N], dexpected[N];
    char why[128] = "";
    engine_snapshot_t before;

    for (int i = 0; i < N; i++) {
        isend[i] = (int_pair_t){ loc_value(cc->rank, i), cc->rank };
        dsend[i] = (double_int_t){ -0.5 * loc_value(cc->rank, i), cc->rank };
        iexpected[i] = (int_pair_t){ loc_value(0, i), 0 };
        dexpected[i] = (double_int_t){ -0.5 * loc_value(0, i), 0 };
        for (int r = 1; r < cc->size; r++) {
            if (loc_value(r, i) > iexpected[i].value)
                iexpected[i] = (int_pair_t){ loc_value(r, i), r };
            if (-0.5 * loc_value(r, i) < dexpected[i].value)
                dexpected[i] = (double_int_t){ -0.5 * loc_value(r, i), r };
        }
    }
    memset(irecv, 0xa5, sizeof irecv);
    engine_snapshot_take(&before);
    int rc = allreduce_call(blocking, isend, irecv, N, MPI_2INT, MPI_MAXLOC, cc->comm);
    record(ctx, "maxloc_2int_allreduce", blocking, rc, &before,
           ints_match(&irecv[0].value, &iexpected[0].value, 2 * N, why, sizeof why), why);

    memset(drecv, 0xa5, sizeof drecv);
    engine_snapshot_take(&before);
    rc = allreduce_call(blocking, dsend, drecv, N, MPI_DOUBLE_INT, MPI_MINLOC, cc->comm);
    bool ok = true;
    for (int i = 0; i < N && ok; i++) {
        if (drecv[i].value != dexpected[i].value || drecv[i].index != dexpected[i].index) {
            snprintf(why, sizeof why, "index %d: got (%g,%d), expected (%g,%d)", i,
                     drecv[i].value, drecv[i].index, dexpected[i].value,
                     dexpected[i].index);
            ok = false;
        }
    }
    record(ctx, "minloc_double_int_allreduce", blocking, rc, &before, ok, why);

    /* reduce_scatter_block: each rank gets 1 pair of a size-long vector. */
    if (cc->size <= 64) {
        for (int i = 0; i < cc->size; i++)
            isend[i] = (int_pair_t){ loc_value(cc->rank, i), cc->rank };
        int_pair_t want = { loc_value(0, cc->rank), 0 };
        for (int r = 1; r < cc->size; r++)
            if (loc_value(r, cc->rank) > want.value)
                want = (int_pair_t){ loc_value(r, cc->rank), r };
        memset(irecv, 0xa5, sizeof irecv);
        engine_snapshot_take(&before);
        rc = reduce_scatter_block_call(blocking, isend, irecv, 1, MPI_2INT, MPI_MAXLOC,
                                       cc->comm);
        record(ctx, "maxloc_2int_reduce_scatter_block", blocking, rc, &before,
               ints_match(&irecv[0].value, &want.value, 2, why, sizeof why), why);
    }
}

/* ---- user ops ----------------------------------------------------------- */

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const int *a = in;
    int *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] += a[i];
}

/* a (op) b = a: associative but not commutative; the result is rank 0's
 * input, which only holds if operands are combined in rank order. */
static void user_first(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    memcpy(inout, in, (size_t)*len * sizeof(int));
}

static void check_user_ops(context_t *ctx, const case_comm_t *cc, bool blocking)
{
    MPI_Op sum_op, first_op;
    MPI_Op_create(user_sum, 1, &sum_op);
    MPI_Op_create(user_first, 0, &first_op);
    static int send[MAX_ELEMS], recv[MAX_ELEMS], expected[MAX_ELEMS];
    int recvcounts[MAX_ELEMS / 4];
    char why[128] = "";
    engine_snapshot_t before;
    enum { N = 33 };

    for (int i = 0; i < N; i++) {
        send[i] = input_of(cc->rank, i);
        expected[i] = 0;
        for (int r = 0; r < cc->size; r++)
            expected[i] += input_of(r, i);
    }
    fill_poison(recv, N);
    engine_snapshot_take(&before);
    int rc = allreduce_call(blocking, send, recv, N, MPI_INT, sum_op, cc->comm);
    record(ctx, "user_op_commutative_allreduce", blocking, rc, &before,
           ints_match(recv, expected, N, why, sizeof why), why);

    for (int i = 0; i < N; i++)
        expected[i] = input_of(0, i);
    fill_poison(recv, N);
    engine_snapshot_take(&before);
    rc = allreduce_call(blocking, send, recv, N, MPI_INT, first_op, cc->comm);
    record(ctx, "user_op_noncommutative_allreduce", blocking, rc, &before,
           ints_match(recv, expected, N, why, sizeof why), why);

    /* reduce_scatter: rank r gets r + 1 elements. */
    if (cc->size <= MAX_ELEMS / 4) {
        int total = 0, first = 0;
        for (int r = 0; r < cc->size; r++) {
            recvcounts[r] = r + 1;
            if (r == cc->rank)
                first = total;
            total += r + 1;
        }
        if (total <= MAX_ELEMS) {
            for (int i = 0; i < total; i++)
                send[i] = input_of(cc->rank, i);
            for (int i = 0; i < cc->rank + 1; i++) {
                expected[i] = 0;
                for (int r = 0; r < cc->size; r++)
                    expected[i] += input_of(r, first + i);
            }
            fill_poison(recv, cc->rank + 1);
            engine_snapshot_take(&before);
            rc = reduce_scatter_call(blocking, send, recv, recvcounts, MPI_INT, sum_op,
                                     cc->comm);
            record(ctx, "user_op_reduce_scatter", blocking, rc, &before,
                   ints_match(recv, expected, cc->rank + 1, why, sizeof why), why);
        }
    }
    MPI_Op_free(&sum_op);
    MPI_Op_free(&first_op);
}

/* ---- types outside the carried list ------------------------------------- */

static void check_uncarried_types(context_t *ctx, const case_comm_t *cc, bool blocking)
{
    enum { N = 17 };
    long double lsend[N], lrecv[N * 64], lexpected[N * 64];
    double complex csend[N], crecv[N], cexpected[N];
    char why[160] = "";
    engine_snapshot_t before;

    for (int i = 0; i < N; i++) {
        lsend[i] = input_of(cc->rank, i) * 0.25L;
        csend[i] = input_of(cc->rank, i) + input_of(cc->rank, i + 100) * I;
        lexpected[i] = 0;
        cexpected[i] = 0;
        for (int r = 0; r < cc->size; r++) {
            lexpected[i] += input_of(r, i) * 0.25L;
            cexpected[i] += input_of(r, i) + input_of(r, i + 100) * I;
        }
    }
    memset(lrecv, 0xa5, sizeof lrecv);
    engine_snapshot_take(&before);
    int rc = allreduce_call(blocking, lsend, lrecv, N, MPI_LONG_DOUBLE, MPI_SUM, cc->comm);
    bool ok = true;
    for (int i = 0; i < N && ok; i++) {
        if (lrecv[i] != lexpected[i]) {
            snprintf(why, sizeof why, "index %d: got %Lg, expected %Lg", i, lrecv[i],
                     lexpected[i]);
            ok = false;
        }
    }
    record(ctx, "long_double_sum_allreduce", blocking, rc, &before, ok, why);

    memset(crecv, 0xa5, sizeof crecv);
    engine_snapshot_take(&before);
    rc = allreduce_call(blocking, csend, crecv, N, MPI_C_DOUBLE_COMPLEX, MPI_SUM, cc->comm);
    ok = true;
    for (int i = 0; i < N && ok; i++) {
        if (crecv[i] != cexpected[i]) {
            snprintf(why, sizeof why, "index %d: got %g%+gi, expected %g%+gi", i,
                     creal(crecv[i]), cimag(crecv[i]), creal(cexpected[i]),
                     cimag(cexpected[i]));
            ok = false;
        }
    }
    record(ctx, "double_complex_sum_allreduce", blocking, rc, &before, ok, why);

    /* Allgather of a type outside the list, same type on both sides. */
    if (cc->size <= 64) {
        for (int r = 0; r < cc->size; r++)
            for (int i = 0; i < N; i++)
                lexpected[r * N + i] = input_of(r, i) * 0.25L;
        memset(lrecv, 0xa5, sizeof lrecv);
        engine_snapshot_take(&before);
        rc = allgather_call(blocking, lsend, N, MPI_LONG_DOUBLE, lrecv, N,
                            MPI_LONG_DOUBLE, cc->comm);
        ok = true;
        for (int i = 0; i < N * cc->size && ok; i++) {
            if (lrecv[i] != lexpected[i]) {
                snprintf(why, sizeof why, "index %d: got %Lg, expected %Lg", i,
                         lrecv[i], lexpected[i]);
                ok = false;
            }
        }
        record_gather_bytes(ctx, "long_double_allgather", blocking, rc, &before, ok, why);
    }
}

/* ---- allgather with differing send and recv types ----------------------- */

static void check_allgather_mixed_types(context_t *ctx, const case_comm_t *cc,
                                        bool blocking)
{
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    static int send[MAX_ELEMS], recv[MAX_ELEMS], expected[MAX_ELEMS];
    char why[128] = "";
    engine_snapshot_t before;
    enum { PAIRS = 3 };

    if (2 * PAIRS * cc->size <= MAX_ELEMS) {
        for (int i = 0; i < 2 * PAIRS; i++)
            send[i] = input_of(cc->rank, i);
        for (int r = 0; r < cc->size; r++)
            for (int i = 0; i < 2 * PAIRS; i++)
                expected[2 * PAIRS * r + i] = input_of(r, i);

        /* 6 MPI_INT sent, 3 pairs received: same signature, other types. */
        fill_poison(recv, 2 * PAIRS * cc->size);
        engine_snapshot_take(&before);
        int rc = allgather_call(blocking, send, 2 * PAIRS, MPI_INT, recv, PAIRS, pair,
                                cc->comm);
        record_gather_bytes(ctx, "allgather_int_to_pair", blocking, rc, &before,
               ints_match(recv, expected, 2 * PAIRS * cc->size, why, sizeof why), why);

        /* And the other way round. */
        fill_poison(recv, 2 * PAIRS * cc->size);
        engine_snapshot_take(&before);
        rc = allgather_call(blocking, send, PAIRS, pair, recv, 2 * PAIRS, MPI_INT,
                            cc->comm);
        record_gather_bytes(ctx, "allgather_pair_to_int", blocking, rc, &before,
               ints_match(recv, expected, 2 * PAIRS * cc->size, why, sizeof why), why);
    }
    MPI_Type_free(&pair);
}

/* ---- inter-communicators ------------------------------------------------ */

/* Group A (even world ranks) and group B (odd) each reduce the other's
 * data. Inputs are keyed by world rank so the groups are told apart. */
static int remote_world_rank(const case_comm_t *cc, int remote_rank)
{
    return cc->remote_first + 2 * remote_rank;
}

static void check_intercomm(context_t *ctx, const case_comm_t *cc, bool blocking)
{
    static int send[MAX_ELEMS], recv[MAX_ELEMS], expected[MAX_ELEMS];
    int recvcounts[MAX_ELEMS / 4];
    char why[128] = "";
    engine_snapshot_t before;
    int me = ctx->world_rank;
    enum { N = 11 };

    /* allreduce: the result is the reduction over the remote group. */
    for (int i = 0; i < N; i++) {
        send[i] = input_of(me, i);
        expected[i] = 0;
        for (int r = 0; r < cc->remote_size; r++)
            expected[i] += input_of(remote_world_rank(cc, r), i);
    }
    fill_poison(recv, N);
    engine_snapshot_take(&before);
    int rc = allreduce_call(blocking, send, recv, N, MPI_INT, MPI_SUM, cc->comm);
    record(ctx, "intercomm_allreduce", blocking, rc, &before,
           ints_match(recv, expected, N, why, sizeof why), why);

    /* allgather: every rank gets the remote group's contributions. */
    for (int r = 0; r < cc->remote_size; r++)
        for (int i = 0; i < N; i++)
            expected[N * r + i] = input_of(remote_world_rank(cc, r), i);
    fill_poison(recv, N * cc->remote_size);
    engine_snapshot_take(&before);
    rc = allgather_call(blocking, send, N, MPI_INT, recv, N, MPI_INT, cc->comm);
    record(ctx, "intercomm_allgather", blocking, rc, &before,
           ints_match(recv, expected, N * cc->remote_size, why, sizeof why), why);

    /* reduce_scatter_block: both groups' vectors must have the same length,
     * size_A * block_A == size_B * block_B. */
    int total = cc->size * cc->remote_size * 2;
    int block = total / cc->size;
    for (int i = 0; i < total; i++)
        send[i] = input_of(me, i);
    for (int i = 0; i < block; i++) {
        expected[i] = 0;
        for (int r = 0; r < cc->remote_size; r++)
            expected[i] += input_of(remote_world_rank(cc, r), cc->rank * block + i);
    }
    fill_poison(recv, block);
    engine_snapshot_take(&before);
    rc = reduce_scatter_block_call(blocking, send, recv, block, MPI_INT, MPI_SUM, cc->comm);
    record(ctx, "intercomm_reduce_scatter_block", blocking, rc, &before,
           ints_match(recv, expected, block, why, sizeof why), why);

    /* reduce_scatter: the same total split unevenly over the local group
     * (the last rank takes the remainder). */
    int first = 0, assigned = 0;
    for (int r = 0; r < cc->size; r++) {
        recvcounts[r] = r == cc->size - 1 ? total - assigned : (total / cc->size) / 2;
        if (r == cc->rank)
            first = assigned;
        assigned += recvcounts[r];
    }
    for (int i = 0; i < recvcounts[cc->rank]; i++) {
        expected[i] = 0;
        for (int r = 0; r < cc->remote_size; r++)
            expected[i] += input_of(remote_world_rank(cc, r), first + i);
    }
    fill_poison(recv, recvcounts[cc->rank] + 1);
    engine_snapshot_take(&before);
    rc = reduce_scatter_call(blocking, send, recv, recvcounts, MPI_INT, MPI_SUM, cc->comm);
    record(ctx, "intercomm_reduce_scatter", blocking, rc, &before,
           ints_match(recv, expected, recvcounts[cc->rank], why, sizeof why), why);
}

/* ---- driver ------------------------------------------------------------- */

static case_comm_t describe_intra(MPI_Comm comm)
{
    case_comm_t cc = { .comm = comm };
    MPI_Comm_rank(comm, &cc.rank);
    MPI_Comm_size(comm, &cc.size);
    return cc;
}

static void run_intra_cases(context_t *ctx, MPI_Comm comm)
{
    case_comm_t cc = describe_intra(comm);
    for (int blocking = 1; blocking >= 0; blocking--) {
        check_contiguous_derived(ctx, &cc, blocking);
        check_vector(ctx, &cc, blocking);
        check_maxloc_minloc(ctx, &cc, blocking);
        check_user_ops(ctx, &cc, blocking);
        check_uncarried_types(ctx, &cc, blocking);
        check_allgather_mixed_types(ctx, &cc, blocking);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    context_t ctx;
    memset(&ctx, 0, sizeof ctx);
    MPI_Comm_rank(MPI_COMM_WORLD, &ctx.world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ctx.world_size);

    if (argc != 3 || strcmp(argv[1], "--expect") != 0 ||
        expect_mode_parse(argv[2], &ctx.expect) != 0) {
        if (ctx.world_rank == 0)
            fprintf(stderr, "usage: fallback_check --expect engine|stock\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    verdict_log_init(&ctx.log);
    MPI_Comm verdict_comm, dup, parity;
    MPI_Comm_dup(MPI_COMM_WORLD, &verdict_comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, ctx.world_rank % 2, ctx.world_rank, &parity);

    double started = MPI_Wtime();
    check_control(&ctx, "control_carried_allreduce_first");
    run_intra_cases(&ctx, MPI_COMM_WORLD);
    run_intra_cases(&ctx, dup);
    run_intra_cases(&ctx, parity);

    /* An inter-communicator needs two groups: at least two processes. */
    if (ctx.world_size >= 2) {
        MPI_Comm inter;
        int remote_leader = ctx.world_rank % 2 == 0 ? 1 : 0;
        MPI_Intercomm_create(parity, 0, MPI_COMM_WORLD, remote_leader, 42, &inter);
        case_comm_t cc = describe_intra(inter);
        cc.is_inter = true;
        MPI_Comm_remote_size(inter, &cc.remote_size);
        cc.remote_first = remote_leader;
        for (int blocking = 1; blocking >= 0; blocking--)
            check_intercomm(&ctx, &cc, blocking);
        MPI_Comm_free(&inter);
    } else if (ctx.world_rank == 0) {
        printf("fallback_check: inter-communicator cases need 2 or more processes\n");
    }
    check_control(&ctx, "control_carried_allreduce_last");
    double elapsed = MPI_Wtime() - started;

    size_t failed = verdict_log_report(&ctx.log, "fallback_check", elapsed, verdict_comm);
    MPI_Comm_free(&parity);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&verdict_comm);
    verdict_log_free(&ctx.log);
    MPI_Finalize();
    return failed == 0 ? 0 : 1;
}
