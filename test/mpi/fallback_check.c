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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fallback_check.h"

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
