/*
 * coll_check.c - correctness matrix of the collectives the engine carries.
 *
 * communicator {world, dup, split by rank parity, split with reversed keys}
 *   x collective {allreduce, allgather, reduce_scatter, reduce_scatter_block}
 *   x {blocking, nonblocking (--persistent: persistent)} x every carried type
 *   x every op legal for it
 *   x count x {out of place, MPI_IN_PLACE}
 *
 * What "count" means: allreduce, elements per buffer; allgather, elements
 * each rank contributes; reduce_scatter, elements of the reduced vector,
 * split unevenly (some ranks get 0); reduce_scatter_block, also the reduced
 * vector's length, so each rank gets ceil(count / size).
 *
 * Each result is compared bit-exactly against a reference every rank computes
 * on its own (coll_values.c), and the engine's posted counter must rise by
 * exactly 1 per call (--expect engine) or not at all (--expect stock).
 *
 * --memory device hands MPI device buffers: inputs, poison and guard bytes
 * are prepared on the host as in host mode, copied to the device before the
 * call and the whole receive span is copied back for the same checks.
 * --memory mixed: rank 0 passes host buffers, the others device buffers
 * (with coll_dfccl_host_buffers=engine every rank's call is carried).
 *
 * Coverage reduction: counts up to FULL_MATRIX_MAX_COUNT run the whole cross
 * product. Larger counts run each (collective, element size, op) once per
 * communicator and in-place setting: which carried type of that size (signed
 * or unsigned, integer or float, and which MPI alias: MPI_INT vs
 * MPI_INT32_T, ...) and which blocking mode rotate from one such call to the
 * next. --quick applies the same reduction to small counts, keeping both
 * blocking modes. This keeps the CI runs at np up to 8 on two cores within
 * minutes; every type still meets the large count somewhere in the run.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

#include "coll_calls.h"
#include "coll_values.h"
#include "include/dfccl.h"
#include "test_memory.h"
#include "test_util.h"

#define FULL_MATRIX_MAX_COUNT 65537
#define GUARD_BYTES 64
#define GUARD_BYTE 0xa5
#define MAX_PRINTED_FAILURES 20

typedef enum {
    COLL_ALLREDUCE, COLL_ALLGATHER, COLL_REDUCE_SCATTER,
    COLL_REDUCE_SCATTER_BLOCK, COLL_COUNT
} coll_t;

static const struct {
    const char       *name;
    dfccl_coll_type_t engine_kind;
} coll_table[COLL_COUNT] = {
    [COLL_ALLREDUCE]            = { "allreduce", DFCCL_COLL_ALLREDUCE },
    [COLL_ALLGATHER]            = { "allgather", DFCCL_COLL_ALLGATHER },
    [COLL_REDUCE_SCATTER]       = { "reduce_scatter", DFCCL_COLL_REDUCE_SCATTER },
    [COLL_REDUCE_SCATTER_BLOCK] = { "reduce_scatter_block", DFCCL_COLL_REDUCE_SCATTER },
};

typedef struct {
    MPI_Datatype  mpi;
    const char   *name;
    dfccl_dtype_t elem;
} carried_type_t;

static carried_type_t carried_types[] = {
    { MPI_SIGNED_CHAR,        "MPI_SIGNED_CHAR",        DFCCL_INT8 },
    { MPI_UNSIGNED_CHAR,      "MPI_UNSIGNED_CHAR",      DFCCL_UINT8 },
    { MPI_SHORT,              "MPI_SHORT",              DFCCL_INT16 },
    { MPI_UNSIGNED_SHORT,     "MPI_UNSIGNED_SHORT",     DFCCL_UINT16 },
    { MPI_INT,                "MPI_INT",                DFCCL_INT32 },
    { MPI_UNSIGNED,           "MPI_UNSIGNED",           DFCCL_UINT32 },
    { MPI_LONG,               "MPI_LONG",               DFCCL_INT64 },
    { MPI_UNSIGNED_LONG,      "MPI_UNSIGNED_LONG",      DFCCL_UINT64 },
    { MPI_LONG_LONG,          "MPI_LONG_LONG",          DFCCL_INT64 },
    { MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", DFCCL_UINT64 },
    { MPI_INT8_T,             "MPI_INT8_T",             DFCCL_INT8 },
    { MPI_UINT8_T,            "MPI_UINT8_T",            DFCCL_UINT8 },
    { MPI_INT16_T,            "MPI_INT16_T",            DFCCL_INT16 },
    { MPI_UINT16_T,           "MPI_UINT16_T",           DFCCL_UINT16 },
    { MPI_INT32_T,            "MPI_INT32_T",            DFCCL_INT32 },
    { MPI_UINT32_T,           "MPI_UINT32_T",           DFCCL_UINT32 },
    { MPI_INT64_T,            "MPI_INT64_T",            DFCCL_INT64 },
    { MPI_UINT64_T,           "MPI_UINT64_T",           DFCCL_UINT64 },
    { MPI_FLOAT,              "MPI_FLOAT",              DFCCL_FLOAT },
    { MPI_DOUBLE,             "MPI_DOUBLE",             DFCCL_DOUBLE },
    { MPI_C_BOOL,             "MPI_C_BOOL",             DFCCL_BOOL },
    { MPI_BYTE,               "MPI_BYTE",               DFCCL_BYTE },
};
#define TYPE_COUNT (sizeof carried_types / sizeof carried_types[0])

static const size_t default_counts[] = { 0, 1, 7, 4099, 65537, 1048579 };
static const size_t quick_counts[] = { 0, 1, 7, 4099 };
#define MAX_COUNTS 32

typedef struct {
    expect_mode_t expect;
    test_memory_kind_t memory;
    bool          quick;
    bool          verbose;
    bool          persistent;         /* the persistent form instead of the nonblocking one */
    int           only_coll;          /* -1: all */
    size_t        counts[MAX_COUNTS];
    int           ncounts;
} options_t;

typedef struct {
    const char *name;
    MPI_Comm    comm;
} test_comm_t;

typedef struct {
    options_t      opts;
    int            world_rank;
    /* send, recv: host images; send_buffer, recv_buffer: what MPI gets
     * (the same pointers in host mode, device copies in device mode). */
    unsigned char *send, *recv, *expected;
    void          *send_buffer, *recv_buffer;
    size_t         buffer_bytes;
    int           *recvcounts;
    verdict_log_t  log;
    int            printed_failures;
    bool           stock_ulong_minmax_broken;
    size_t         skipped_known_defect;
} checker_t;

/* One matrix entry. */
typedef struct {
    const test_comm_t    *comm;
    coll_t                coll;
    const carried_type_t *type;
    dfccl_op_t            op;       /* DFCCL_OP_NONE for allgather */
    size_t                count;
    bool                  in_place;
    bool                  blocking;
    int                   mode;     /* CALL_*: blocking, or --persistent's other form */
} call_t;

static void usage(void)
{
    fprintf(stderr,
            "usage: coll_check --expect engine|stock [--counts N,N,...] [--quick]\n"
            "                  [--coll allreduce|allgather|reduce_scatter|reduce_scatter_block]\n"
            "                  [--memory host|device|mixed] [--persistent] [--verbose]\n");
}

static int parse_counts(const char *text, options_t *opts)
{
    opts->ncounts = 0;
    const char *p = text;
    while (*p != '\0') {
        char *end;
        unsigned long long value = strtoull(p, &end, 10);
        if (end == p || opts->ncounts == MAX_COUNTS || value > 0x7fffffffULL)
            return -1;
        opts->counts[opts->ncounts++] = (size_t)value;
        p = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0')
            return -1;
    }
    return opts->ncounts > 0 ? 0 : -1;
}

static int parse_options(int argc, char **argv, options_t *opts)
{
    bool have_expect = false, have_counts = false;
    memset(opts, 0, sizeof *opts);
    opts->only_coll = -1;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(arg, "--expect") == 0) {
            if (expect_mode_parse(value, &opts->expect) != 0)
                return -1;
            have_expect = true;
            i++;
        } else if (strcmp(arg, "--counts") == 0) {
            if (value == NULL || parse_counts(value, opts) != 0)
                return -1;
            have_counts = true;
            i++;
        } else if (strcmp(arg, "--coll") == 0) {
            opts->only_coll = -2;
            for (int c = 0; c < COLL_COUNT; c++)
                if (value != NULL && strcmp(value, coll_table[c].name) == 0)
                    opts->only_coll = c;
            if (opts->only_coll == -2)
                return -1;
            i++;
        } else if (strcmp(arg, "--quick") == 0) {
            opts->quick = true;
        } else if (strcmp(arg, "--verbose") == 0) {
            opts->verbose = true;
        } else if (strcmp(arg, "--persistent") == 0) {
            opts->persistent = true;
        } else {
            return -1;
        }
    }
    if (!have_expect)
        return -1;
    if (!have_counts) {
        const size_t *list = opts->quick ? quick_counts : default_counts;
        size_t n = opts->quick ? sizeof quick_counts / sizeof *quick_counts
                               : sizeof default_counts / sizeof *default_counts;
        for (size_t i = 0; i < n; i++)
            opts->counts[i] = list[i];
        opts->ncounts = (int)n;
    }
    return 0;
}

/* Element counts each rank receives from reduce_scatter: about `count` in
 * all (so the call costs what an allreduce of `count` costs), split
 * unevenly in the ratio 2:0:3:1 repeating, so rank 1 always gets 0 and
 * small counts leave more ranks empty. */
static void reduce_scatter_counts(size_t count, int size, int *recvcounts)
{
    static const unsigned weights[4] = { 2, 0, 3, 1 };
    for (int r = 0; r < size; r++)
        recvcounts[r] = (int)(count * weights[r % 4] / (2 * (size_t)size));
}

/* reduce_scatter_block's count per rank: the reduced vector holds about
 * `count` elements in all, as for allreduce and reduce_scatter, rather than
 * size * count, which would make the largest count the cost of the run. */
static size_t block_count(size_t count, int size)
{
    return (count + (size_t)size - 1) / (size_t)size;
}

/* Reduced coverage (see the top of the file): among the carried types of
 * the call's element size that admit its op, the call is kept only for the
 * one whose turn it is. The turn moves with communicator, in-place setting,
 * op and collective, so the aliases and classes of one size take turns
 * across the run. With vary_blocking, the blocking mode takes turns too. */
static bool in_reduced_coverage(const call_t *call, int comm_index, bool vary_blocking)
{
    size_t size = value_elem_size(call->type->elem);
    int position = 0, candidates = 0;
    for (size_t t = 0; t < TYPE_COUNT; t++) {
        if (value_elem_size(carried_types[t].elem) != size ||
            !value_op_legal(call->op, carried_types[t].elem))
            continue;
        if (&carried_types[t] == call->type)
            position = candidates;
        candidates++;
    }
    int turn = comm_index + 4 * (int)call->in_place + 3 * (int)call->op + (int)call->coll;
    if (position != turn % candidates)
        return false;
    if (vary_blocking && call->blocking != ((turn + (int)size) % 2 == 0))
        return false;
    return true;
}

/*
 * Open MPI 4.1.2 - 4.1.4 reduce MPI_UNSIGNED_LONG with MIN/MAX as if it were
 * signed (open-mpi/ompi#10525, fixed in 4.1.5). MPI_Reduce_local runs the
 * same op table, so one local call tells whether this library has the defect.
 */
static bool stock_ulong_minmax_is_broken(void)
{
    unsigned long in = 0, inout = ~0UL;
    MPI_Reduce_local(&in, &inout, 1, MPI_UNSIGNED_LONG, MPI_MIN);
    return inout != 0;
}

/* A call whose stock result is known wrong cannot be checked when the stock
 * path is expected; the engine path is checked as usual. */
static bool hits_known_stock_defect(const checker_t *ck, const call_t *call)
{
    return ck->opts.expect == EXPECT_STOCK && ck->stock_ulong_minmax_broken &&
           call->type->mpi == MPI_UNSIGNED_LONG &&
           (call->op == DFCCL_OP_MIN || call->op == DFCCL_OP_MAX);
}

static int issue(const call_t *call, const void *sendbuf, void *recvbuf,
                 const int *recvcounts)
{
    MPI_Comm comm = call->comm->comm;
    MPI_Datatype type = call->type->mpi;
    MPI_Op op = test_mpi_op(call->op);
    int count = (int)call->count;
    int size;
    MPI_Comm_size(comm, &size);

    switch (call->coll) {
    case COLL_ALLREDUCE:
        return allreduce_call(call->mode, sendbuf, recvbuf, count, type, op, comm);
    case COLL_ALLGATHER:
        /* With MPI_IN_PLACE the send arguments are ignored: pass ones a
         * careless implementation would trip over. */
        if (call->in_place)
            return allgather_call(call->mode, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL,
                                  recvbuf, count, type, comm);
        return allgather_call(call->mode, sendbuf, count, type, recvbuf, count,
                              type, comm);
    case COLL_REDUCE_SCATTER:
        return reduce_scatter_call(call->mode, sendbuf, recvbuf, recvcounts,
                                   type, op, comm);
    case COLL_REDUCE_SCATTER_BLOCK:
        return reduce_scatter_block_call(call->mode, sendbuf, recvbuf,
                                         (int)block_count(call->count, size),
                                         type, op, comm);
    default:
        return MPI_ERR_INTERN;
    }
}

static void report_failure(checker_t *ck, const call_t *call, const char *what)
{
    if (ck->printed_failures == MAX_PRINTED_FAILURES)
        fprintf(stderr, "rank %d: further failures not printed\n", ck->world_rank);
    if (ck->printed_failures++ >= MAX_PRINTED_FAILURES)
        return;
    fprintf(stderr,
            "FAIL rank %d comm=%s coll=%s %s type=%s op=%s count=%zu in_place=%s: %s\n",
            ck->world_rank, call->comm->name, coll_table[call->coll].name,
            call->mode == CALL_BLOCKING ? "blocking"
            : call->mode == CALL_PERSISTENT ? "persistent" : "nonblocking", call->type->name,
            value_op_name(call->op), call->count, call->in_place ? "yes" : "no",
            what);
}

/* Runs one call and checks result, guard bytes and engine counter. */
static bool check_call(checker_t *ck, const call_t *call)
{
    MPI_Comm comm = call->comm->comm;
    int size, me;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &me);

    size_t esize = value_elem_size(call->type->elem);
    size_t count = call->count;
    value_spec_t spec = {
        .elem = call->type->elem, .op = call->op, .nranks = size,
        .seed = (uint32_t)(((unsigned)(call->type - carried_types) * 131u +
                            (unsigned)call->op * 17u + (unsigned)call->coll * 7u) *
                           2654435761u) ^ (uint32_t)count,
    };

    /* input_elems: one rank's input; span: what recvbuf holds (with
     * MPI_IN_PLACE the input lives there); result: the rank's output. */
    size_t input_elems = count, span, result_elems;
    uint64_t result_first = 0;
    switch (call->coll) {
    case COLL_ALLREDUCE:
        span = result_elems = count;
        values_expect_reduction(ck->expected, count, 0, &spec);
        break;
    case COLL_ALLGATHER:
        span = result_elems = (size_t)size * count;
        for (int r = 0; r < size; r++)
            values_fill(ck->expected + (size_t)r * count * esize, count, 0, r, &spec);
        break;
    case COLL_REDUCE_SCATTER:
        reduce_scatter_counts(count, size, ck->recvcounts);
        input_elems = 0;
        for (int r = 0; r < size; r++) {
            if (r == me)
                result_first = input_elems;
            input_elems += (size_t)ck->recvcounts[r];
        }
        result_elems = (size_t)ck->recvcounts[me];
        span = call->in_place ? input_elems : result_elems;
        values_expect_reduction(ck->expected, result_elems, result_first, &spec);
        break;
    default: /* COLL_REDUCE_SCATTER_BLOCK */
        result_elems = block_count(count, size);
        input_elems = (size_t)size * result_elems;
        result_first = (uint64_t)me * result_elems;
        span = call->in_place ? input_elems : result_elems;
        values_expect_reduction(ck->expected, result_elems, result_first, &spec);
        break;
    }

    /* Poison: every result byte starts as the complement of its expected
     * value, so a call that leaves any byte unwritten fails. */
    size_t result_bytes = result_elems * esize;
    for (size_t i = 0; i < result_bytes; i++)
        ck->recv[i] = (unsigned char)~ck->expected[i];
    const void *sendbuf = ck->send;
    if (call->in_place) {
        sendbuf = MPI_IN_PLACE;
        if (call->coll == COLL_ALLGATHER)
            values_fill(ck->recv + (size_t)me * count * esize, count, 0, me, &spec);
        else
            values_fill(ck->recv, input_elems, 0, me, &spec);
    } else {
        values_fill(ck->send, input_elems, 0, me, &spec);
    }
    memset(ck->recv + span * esize, GUARD_BYTE, GUARD_BYTES);
    /* Every byte of recv up to the guard's end is defined now (poison,
     * in-place input, guard): the device gets exactly the host image. */
    size_t recv_bytes = span * esize + GUARD_BYTES;
    if (!call->in_place) {
        test_memory_to_buffer(ck->opts.memory, ck->send_buffer, ck->send, input_elems * esize);
        sendbuf = ck->send_buffer;
    }
    test_memory_to_buffer(ck->opts.memory, ck->recv_buffer, ck->recv, recv_bytes);

    engine_snapshot_t before;
    engine_snapshot_take(&before);
    int rc = issue(call, sendbuf, ck->recv_buffer, ck->recvcounts);
    char why[MPI_MAX_ERROR_STRING + 64];
    bool passed = true;

    if (rc != MPI_SUCCESS) {
        char message[MPI_MAX_ERROR_STRING];
        int length = 0;
        MPI_Error_string(rc, message, &length);
        snprintf(why, sizeof why, "returned error %d: %s", rc, message);
        report_failure(ck, call, why);
        return false;
    }
    uint64_t rise = ck->opts.expect == EXPECT_ENGINE ? 1 : 0;
    /* Open MPI builds communicators on nonblocking allreduces of one
     * MPI_INT with MPI_MAX or MPI_MIN, which dfccl leaves to the stock path
     * (docs/design.md, "After a failure") */
    if (call->coll == COLL_ALLREDUCE && call->mode == CALL_NONBLOCKING && call->count == 1 &&
        call->type->mpi == MPI_INT && (call->op == DFCCL_OP_MAX || call->op == DFCCL_OP_MIN))
        rise = 0;
    /* A call that moves nothing (every count 0, or recvcounts summing to 0)
     * may never reach a component: Open MPI's MPI layer returns early for
     * most of them, so no rise is right too. */
    if (input_elems == 0 && rise == 1 &&
        engine_rise_ok(&before, coll_table[call->coll].engine_kind, 0, why, sizeof why))
        rise = 0;
    if (!engine_rise_ok(&before, coll_table[call->coll].engine_kind, rise, why, sizeof why)) {
        report_failure(ck, call, why);
        passed = false;
    }
    test_memory_from_buffer(ck->opts.memory, ck->recv, ck->recv_buffer, recv_bytes);
    if (memcmp(ck->recv, ck->expected, result_bytes) != 0) {
        size_t index = 0;
        while (memcmp(ck->recv + index * esize, ck->expected + index * esize, esize) == 0)
            index++;
        char got[64], want[64];
        values_format(got, sizeof got, ck->recv + index * esize, call->type->elem);
        values_format(want, sizeof want, ck->expected + index * esize, call->type->elem);
        snprintf(why, sizeof why, "index %zu: got %s, expected %s", index, got, want);
        report_failure(ck, call, why);
        passed = false;
    }
    /* MPI's in-place reduce-scatter leaves the rest of the receive buffer
     * as the caller wrote it (mpi4py's tests and users rely on it). Stock
     * Open MPI 4.1.4 does not always: rank 0's buffer at 4 ranks and more
     * (ompi_coll_base_reduce_scatter), so only the engine is held to it. */
    if (call->in_place && span > result_elems && ck->opts.expect == EXPECT_ENGINE) {
        values_fill(ck->send, input_elems, 0, me, &spec);
        if (memcmp(ck->recv + result_bytes, ck->send + result_bytes,
                   (span - result_elems) * esize) != 0) {
            size_t index = result_elems;
            while (memcmp(ck->recv + index * esize, ck->send + index * esize, esize) == 0)
                index++;
            snprintf(why, sizeof why, "in place: input element %zu past the result was changed",
                     index);
            report_failure(ck, call, why);
            passed = false;
        }
    }
    for (size_t i = 0; i < GUARD_BYTES; i++) {
        if (ck->recv[span * esize + i] != GUARD_BYTE) {
            snprintf(why, sizeof why, "wrote past the end of recvbuf (byte %zu)",
                     span * esize + i);
            report_failure(ck, call, why);
            passed = false;
            break;
        }
    }
    return passed;
}

static void run_matrix(checker_t *ck, const test_comm_t *comms, int ncomms)
{
    for (int ci = 0; ci < ncomms; ci++) {
        for (int coll = 0; coll < COLL_COUNT; coll++) {
            if (ck->opts.only_coll >= 0 && ck->opts.only_coll != coll)
                continue;
            double started = MPI_Wtime();
            size_t calls = 0;
            for (int k = 0; k < ck->opts.ncounts; k++) {
                size_t count = ck->opts.counts[k];
                bool reduced = ck->opts.quick || count > FULL_MATRIX_MAX_COUNT;
                for (size_t t = 0; t < TYPE_COUNT; t++) {
                    for (int op = 0; op <= DFCCL_OP_COUNT; op++) {
                        /* allgather takes no op; the others need one */
                        bool reduces = coll != COLL_ALLGATHER;
                        if (reduces == (op == DFCCL_OP_NONE))
                            continue;
                        if (!value_op_legal((dfccl_op_t)op, carried_types[t].elem))
                            continue;
                        for (int in_place = 0; in_place < 2; in_place++) {
                            for (int blocking = 1; blocking >= 0; blocking--) {
                                call_t call = {
                                    .comm = &comms[ci], .coll = (coll_t)coll,
                                    .type = &carried_types[t], .op = (dfccl_op_t)op,
                                    .count = count, .in_place = in_place,
                                    .blocking = blocking,
                                    .mode = blocking ? CALL_BLOCKING
                                            : ck->opts.persistent ? CALL_PERSISTENT
                                                                  : CALL_NONBLOCKING,
                                };
                                if (reduced && !in_reduced_coverage(
                                        &call, ci, count > FULL_MATRIX_MAX_COUNT))
                                    continue;
                                if (hits_known_stock_defect(ck, &call)) {
                                    ck->skipped_known_defect++;
                                    continue;
                                }
                                verdict_log_record(&ck->log, check_call(ck, &call));
                                calls++;
                            }
                        }
                    }
                }
            }
            if (ck->opts.verbose && ck->world_rank == 0)
                printf("  %-22s %-20s %6zu calls %8.2f s\n", comms[ci].name,
                       coll_table[coll].name, calls, MPI_Wtime() - started);
        }
    }
}

int main(int argc, char **argv)
{
    /* Device selection must precede MPI_Init. */
    test_memory_kind_t memory = test_memory_setup(&argc, argv, "coll_check");
    MPI_Init(&argc, &argv);
    checker_t ck;
    memset(&ck, 0, sizeof ck);
    MPI_Comm_rank(MPI_COMM_WORLD, &ck.world_rank);
    int world_size;
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);

    if (parse_options(argc, argv, &ck.opts) != 0) {
        if (ck.world_rank == 0)
            usage();
        MPI_Finalize();
        return 2;
    }
    ck.opts.memory = memory;
    /* Errors come back as return codes (inherited by the derived comms), so
     * a failing call is counted instead of aborting the run. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    size_t max_count = 0;
    for (int k = 0; k < ck.opts.ncounts; k++)
        if (ck.opts.counts[k] > max_count)
            max_count = ck.opts.counts[k];
    /* The largest need is allgather's size * count elements of 8 bytes. */
    ck.buffer_bytes = (size_t)world_size * max_count * 8 + GUARD_BYTES;
    ck.send = malloc(ck.buffer_bytes);
    ck.recv = malloc(ck.buffer_bytes);
    ck.expected = malloc(ck.buffer_bytes);
    ck.recvcounts = malloc((size_t)world_size * sizeof *ck.recvcounts);
    if (memory == TEST_MEMORY_HOST) {
        ck.send_buffer = ck.send;
        ck.recv_buffer = ck.recv;
    } else {
        ck.send_buffer = test_memory_alloc(memory, ck.buffer_bytes);
        ck.recv_buffer = test_memory_alloc(memory, ck.buffer_bytes);
    }
    if (!ck.send || !ck.recv || !ck.expected || !ck.recvcounts || !ck.send_buffer ||
        !ck.recv_buffer) {
        fprintf(stderr, "rank %d: cannot allocate %zu bytes of host and %zu of %s memory\n",
                ck.world_rank, 3 * ck.buffer_bytes, 2 * ck.buffer_bytes,
                test_memory_name(memory));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    verdict_log_init(&ck.log);

    test_comm_t comms[4] = {
        { "world", MPI_COMM_WORLD },
        { "dup", MPI_COMM_NULL },
        { "split_parity", MPI_COMM_NULL },
        { "split_reversed", MPI_COMM_NULL },
    };
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1].comm);
    MPI_Comm_split(MPI_COMM_WORLD, ck.world_rank % 2, ck.world_rank, &comms[2].comm);
    MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - 1 - ck.world_rank, &comms[3].comm);
    /* The verdict exchange gets a communicator of its own so that it never
     * interleaves with the calls under test. */
    MPI_Comm verdict_comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &verdict_comm);

    ck.stock_ulong_minmax_broken = stock_ulong_minmax_is_broken();
    if (ck.world_rank == 0)
        printf("coll_check: np=%d expect=%s memory=%s%s\n", world_size,
               expect_mode_name(ck.opts.expect), test_memory_name(memory),
               ck.opts.quick ? " quick" : "");
    double started = MPI_Wtime();
    run_matrix(&ck, comms, 4);
    double elapsed = MPI_Wtime() - started;
    if (ck.world_rank == 0 && ck.skipped_known_defect > 0)
        printf("coll_check: skipped %zu MPI_UNSIGNED_LONG MIN/MAX calls: this Open MPI "
               "reduces them as signed (open-mpi/ompi#10525)\n", ck.skipped_known_defect);

    size_t failed = verdict_log_report(&ck.log, "coll_check", elapsed, verdict_comm);

    for (int c = 1; c < 4; c++)
        MPI_Comm_free(&comms[c].comm);
    MPI_Comm_free(&verdict_comm);
    verdict_log_free(&ck.log);
    if (memory != TEST_MEMORY_HOST) {
        test_memory_free(memory, ck.send_buffer);
        test_memory_free(memory, ck.recv_buffer);
    }
    free(ck.send);
    free(ck.recv);
    free(ck.expected);
    free(ck.recvcounts);
    MPI_Finalize();
    test_memory_teardown();
    return failed == 0 ? 0 : 1;
}
