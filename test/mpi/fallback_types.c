/* fallback_types.c - fallback_check's cases on datatypes: derived types
 * (contiguous and vector), MAXLOC/MINLOC pairs, predefined types outside the
 * carried list, and allgathers whose send and recv types differ. */
#include <complex.h>
#include <stdio.h>
#include <string.h>
#include "fallback_check.h"

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

/* MPI_INT triples built with MPI_Type_contiguous: the same bytes as
 * MPI_INT, but not a predefined type. */
void check_contiguous_derived(context_t *ctx, const case_comm_t *cc, bool blocking)
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
void check_vector(context_t *ctx, const case_comm_t *cc, bool blocking)
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
int loc_value(int rank, int i)
{
    return (rank * 5 + i * 3) % 4;
}

void check_maxloc_minloc(context_t *ctx, const case_comm_t *cc, bool blocking)
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

/* ---- types outside the carried list ------------------------------------- */

void check_uncarried_types(context_t *ctx, const case_comm_t *cc, bool blocking)
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

void check_allgather_mixed_types(context_t *ctx, const case_comm_t *cc,
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
