/*
 * disorder_check.c - nonblocking collectives on many communicators, started
 * in a different order on every rank and waited for in yet another order.
 *
 * Legal MPI: every rank starts every collective of a round before it waits
 * for any, so no rank can block another. An engine that runs collectives
 * strictly in submission order deadlocks on this (rank 0 runs A first while
 * rank 1 runs B first); a preemptive one completes every round.
 *
 * Communicators (slots, created in the same order everywhere): dups of
 * world, the split by parity, a split with reversed keys and splits of
 * seeded random subsets (some leave ranks out). Per round and slot the
 * seed fixes, identically on all ranks, the collective (allreduce,
 * allgather, reduce_scatter, reduce_scatter_block), the (type, op) and a
 * size drawn log-uniformly from 1 B to --max-bytes; the start and wait
 * orders come from (seed, round, rank). Every result is checked bit-exactly
 * and the engine's posted counters must rise by one per call. --memory
 * device hands MPI device buffers (coll_case.c copies them to and fro).
 * --persistent R makes each call a persistent request (MPIX_*_init) that
 * the round starts R times, in a new order with new input each time (every
 * second time all at once, MPI_Startall), and frees at its end: prepared
 * calls must complete under disorder too.
 *
 * Errors come back as return codes (MPI_ERRORS_RETURN) and are printed.
 * After a round with an error anywhere the run stops: further rounds would
 * only pile up watchdog timeouts. --expect-timeout turns the verdict round:
 * the run passes when every rank saw an error, which is what the engine in
 * strict serial order (coll_dfccl_preempt=0) must produce. Verdicts travel
 * point-to-point (p2p_verdict.c), since collectives may be failing.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

#include "coll_case.h"
#include "p2p_verdict.h"
#include "test_rng.h"
#include "test_util.h"

#define MIN_COMMS 6
#define MAX_COMMS 32
#define MAX_PRINTED 20

typedef struct {
    uint64_t seed;
    int      iterations;
    int      comms;
    size_t   max_bytes;
    int      persistent;  /* > 0: persistent requests, each started this many times */
    bool     expect_timeout;
    bool     verbose;
    expect_mode_t expect;  /* stock: the test's own check, nothing carried */
    test_memory_kind_t memory;
} options_t;

typedef struct {
    char     name[32];
    MPI_Comm comm;        /* MPI_COMM_NULL: this rank is not a member */
} slot_t;

static int world_rank, world_size, printed;

static void usage(void)
{
    fprintf(stderr,
            "usage: disorder_check [--seed S] [--iterations N] [--comms K (>= %d)]\n"
            "                      [--max-bytes B] [--expect engine|stock]\n"
            "                      [--expect-timeout] [--memory host|device|mixed] [--verbose]\n"
            "                      [--persistent RUNS]\n",
            MIN_COMMS);
}

static int parse_options(int argc, char **argv, options_t *o)
{
    *o = (options_t){ .seed = 1, .iterations = 10, .comms = 8,
                      .max_bytes = 4u << 20 };
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (strcmp(arg, "--expect-timeout") == 0) {
            o->expect_timeout = true;
            continue;
        }
        if (strcmp(arg, "--verbose") == 0) {
            o->verbose = true;
            continue;
        }
        if (value == NULL)
            return -1;
        if (strcmp(arg, "--expect") == 0) {
            if (expect_mode_parse(value, &o->expect) != 0)
                return -1;
            i++;
            continue;
        }
        unsigned long long n = strtoull(value, &end, 0);
        if (end == value || *end != '\0')
            return -1;
        if (strcmp(arg, "--seed") == 0)
            o->seed = n;
        else if (strcmp(arg, "--iterations") == 0 && n > 0 && n < 1000000)
            o->iterations = (int)n;
        else if (strcmp(arg, "--comms") == 0 && n >= MIN_COMMS && n <= MAX_COMMS)
            o->comms = (int)n;
        else if (strcmp(arg, "--persistent") == 0 && n > 0 && n <= 100)
            o->persistent = (int)n;
        else if (strcmp(arg, "--max-bytes") == 0 && n > 0 && n <= (1u << 28))
            o->max_bytes = (size_t)n;
        else
            return -1;
        i++;
    }
    return 0;
}

static void report(const char *fmt_what, const char *detail)
{
    if (printed == MAX_PRINTED)
        fprintf(stderr, "rank %d: further failures not printed\n", world_rank);
    if (printed++ >= MAX_PRINTED)
        return;
    fprintf(stderr, "FAIL rank %d %s: %s\n", world_rank, fmt_what, detail);
}

/* Slot k's communicator; the kinds rotate so that any K >= 6 has each. */
static void create_slots(slot_t *slots, int count, uint64_t seed)
{
    test_rng_t shared;
    test_rng_init(&shared, test_rng_mix(seed, 0x5107));
    for (int k = 0; k < count; k++) {
        slot_t *s = &slots[k];
        int colour = 0, key = world_rank;
        switch (k % 6) {
        case 0: case 3:
            snprintf(s->name, sizeof s->name, "dup%d", k);
            MPI_Comm_dup(MPI_COMM_WORLD, &s->comm);
            continue;
        case 1:
            snprintf(s->name, sizeof s->name, "parity%d", k);
            colour = world_rank % 2;
            break;
        case 2:
            snprintf(s->name, sizeof s->name, "reversed%d", k);
            key = world_size - 1 - world_rank;
            break;
        case 4: case 5: {
            /* Every rank draws every rank's colour from the shared stream
             * and keeps its own; case 5 may leave ranks out. */
            snprintf(s->name, sizeof s->name, "subset%d", k);
            for (int r = 0; r < world_size; r++) {
                uint64_t draw = test_rng_below(&shared, k % 6 == 5 ? 3 : 2);
                if (r == world_rank)
                    colour = draw == 2 ? MPI_UNDEFINED : (int)draw;
            }
            key = (int)test_rng_below(&shared, 1000);
            break;
        }
        }
        MPI_Comm_split(MPI_COMM_WORLD, colour, key, &s->comm);
    }
}

/* One ordered blocking call per communicator, so that each one's engine
 * side exists before the disorder: its set-up goes through a blocking
 * collective of the stock path, which disorder would deadlock for real. */
static bool warm_up(const slot_t *slots, int count)
{
    bool ok = true;
    for (int k = 0; k < count; k++) {
        if (slots[k].comm == MPI_COMM_NULL)
            continue;
        int one = 1, members = 0, size;
        MPI_Comm_size(slots[k].comm, &size);
        int rc = MPI_Allreduce(&one, &members, 1, MPI_INT, MPI_SUM, slots[k].comm);
        if (rc != MPI_SUCCESS || members != size) {
            char text[MPI_MAX_ERROR_STRING + 32];
            coll_case_error_text(rc, text, sizeof text);
            report(slots[k].name, rc != MPI_SUCCESS ? text : "warm-up sum wrong");
            ok = false;
        }
    }
    return ok;
}

/* Runs one round; records one verdict per slot and one for the counters.
 * Returns the number of MPI errors this rank saw. */
static int run_round(const options_t *o, int round, const slot_t *slots, int count,
                     verdict_log_t *log)
{
    coll_case_t cases[MAX_COMMS];
    MPI_Request requests[MAX_COMMS];
    int start_order[MAX_COMMS], wait_order[MAX_COMMS], active = 0, errors = 0;
    bool passed[MAX_COMMS];
    uint64_t rise[DFCCL_COLL_TYPE_COUNT] = { 0 };
    test_rng_t shared, mine;
    test_rng_init(&shared, test_rng_mix(o->seed, 0x10000 + (uint64_t)round));
    test_rng_init(&mine, test_rng_mix(test_rng_mix(o->seed, (uint64_t)round),
                                      0x20000 + (uint64_t)world_rank));

    for (int k = 0; k < count; k++) {
        /* Drawn on every rank, member or not, to keep the streams equal. */
        case_kind_t kind = (case_kind_t)test_rng_below(&shared, CASE_KIND_COUNT);
        uint64_t type_draw = test_rng_next(&shared);
        size_t bytes = (size_t)test_rng_log_uniform(&shared, 1, o->max_bytes);
        uint32_t value_seed = (uint32_t)test_rng_next(&shared);
        passed[k] = true;
        requests[k] = MPI_REQUEST_NULL;
        memset(&cases[k], 0, sizeof cases[k]);
        if (slots[k].comm == MPI_COMM_NULL)
            continue;
        int size;
        MPI_Comm_size(slots[k].comm, &size);
        coll_case_t *c = &cases[k];
        c->kind = kind;
        c->type = coll_case_pick_type(kind, type_draw);
        c->count = coll_case_count_for_bytes(kind, c->type, bytes, size);
        c->seed = value_seed;
        c->comm = slots[k].comm;
        c->memory = o->memory;
        if (coll_case_prepare(c) != 0) {
            fprintf(stderr, "rank %d: out of memory\n", world_rank);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        start_order[active] = k;
        wait_order[active] = k;
        active++;
        if (o->expect == EXPECT_ENGINE && coll_case_moves_data(c))
            rise[coll_case_engine_kind(kind)]++;
    }
    char what[160], text[MPI_MAX_ERROR_STRING + 64];
    engine_snapshot_t before;
    engine_snapshot_take(&before);
    /* --persistent: the requests are made once and each run starts them in
     * a new order with new input; otherwise one nonblocking call each */
    int runs = o->persistent > 0 ? o->persistent : 1;
    for (int i = 0; i < active && o->persistent > 0; i++) {
        int k = start_order[i];
        int rc = coll_case_init(&cases[k], &requests[k]);
        if (rc != MPI_SUCCESS) {
            coll_case_error_text(rc, text, sizeof text);
            snprintf(what, sizeof what, "round %d %s %s init", round, slots[k].name,
                     coll_case_kind_name(cases[k].kind));
            report(what, text);
            passed[k] = false;
            errors++;
            requests[k] = MPI_REQUEST_NULL;
        }
    }
    for (int run = 0; run < runs; run++) {
        test_rng_shuffle(&mine, start_order, (size_t)active);
        test_rng_shuffle(&mine, wait_order, (size_t)active);
        /* odd runs of persistent requests start them all in one MPI_Startall */
        bool all_at_once = o->persistent > 0 && run % 2 == 1;
        MPI_Request batch[MAX_COMMS];
        int batch_k[MAX_COMMS], nbatch = 0;
        for (int i = 0; i < active; i++) {
            int k = start_order[i];
            if (o->persistent > 0 && run > 0)
                coll_case_reseed(&cases[k], cases[k].seed * 2654435761u + (uint32_t)run);
            if (all_at_once) {
                if (requests[k] != MPI_REQUEST_NULL) {
                    batch[nbatch] = requests[k];
                    batch_k[nbatch++] = k;
                }
                continue;
            }
            int rc = MPI_SUCCESS;
            if (o->persistent == 0) rc = coll_case_start(&cases[k], &requests[k]);
            else if (requests[k] != MPI_REQUEST_NULL) rc = MPI_Start(&requests[k]);
            if (rc != MPI_SUCCESS) {
                coll_case_error_text(rc, text, sizeof text);
                snprintf(what, sizeof what, "round %d run %d %s %s start", round, run,
                         slots[k].name, coll_case_kind_name(cases[k].kind));
                report(what, text);
                passed[k] = false;
                errors++;
                if (o->persistent > 0) MPI_Request_free(&requests[k]);
                requests[k] = MPI_REQUEST_NULL;
            }
        }
        int rc = nbatch > 0 ? MPI_Startall(nbatch, batch) : MPI_SUCCESS;
        if (rc != MPI_SUCCESS) {
            coll_case_error_text(rc, text, sizeof text);
            snprintf(what, sizeof what, "round %d run %d MPI_Startall of %d", round, run, nbatch);
            report(what, text);
            errors++;
            for (int b = 0; b < nbatch; b++) {   /* which ones started is unknown: wait for none */
                passed[batch_k[b]] = false;
                MPI_Request_free(&requests[batch_k[b]]);
                requests[batch_k[b]] = MPI_REQUEST_NULL;
            }
        }
        for (int i = 0; i < active; i++) {
            int k = wait_order[i];
            coll_case_t *c = &cases[k];
            snprintf(what, sizeof what, "round %d run %d %s %s %s count=%zu", round, run,
                     slots[k].name, coll_case_kind_name(c->kind), c->type->name, c->count);
            if (requests[k] == MPI_REQUEST_NULL)
                continue;
            int rc = MPI_Wait(&requests[k], MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) {
                coll_case_error_text(rc, text, sizeof text);
                report(what, text);
                passed[k] = false;
                errors++;
            } else if (!coll_case_verify(c, text, sizeof text)) {
                report(what, text);
                passed[k] = false;
            }
        }
    }
    for (int k = 0; k < count && o->persistent > 0; k++)
        if (requests[k] != MPI_REQUEST_NULL) MPI_Request_free(&requests[k]);
    for (int kind = 0; kind < DFCCL_COLL_TYPE_COUNT; kind++)
        rise[kind] *= (uint64_t)runs;
    bool counters_ok = true;
    engine_snapshot_t after;
    engine_snapshot_take(&after);
    for (int kind = 0; kind < DFCCL_COLL_TYPE_COUNT; kind++) {
        uint64_t got = after.posted[kind] - before.posted[kind];
        if (got != rise[kind]) {
            snprintf(text, sizeof text, "engine posted[%s] rose by %" PRIu64
                     ", expected %" PRIu64, dfccl_coll_type_name((dfccl_coll_type_t)kind),
                     got, rise[kind]);
            snprintf(what, sizeof what, "round %d counters", round);
            report(what, text);
            counters_ok = false;
        }
    }
    for (int k = 0; k < count; k++) {
        if (!o->expect_timeout)
            verdict_log_record(log, passed[k]);
        coll_case_free(&cases[k]);
    }
    if (!o->expect_timeout)
        verdict_log_record(log, counters_ok);
    return errors;
}

int main(int argc, char **argv)
{
    /* Device selection must precede MPI_Init. */
    test_memory_kind_t memory = test_memory_setup(&argc, argv, "disorder_check");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    options_t o;
    if (parse_options(argc, argv, &o) != 0) {
        if (world_rank == 0)
            usage();
        MPI_Finalize();
        return 2;
    }
    o.memory = memory;
    /* Inherited by every communicator created below. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (world_rank == 0)
        printf("disorder_check: np=%d seed=%" PRIu64 " iterations=%d comms=%d "
               "max_bytes=%zu expect=%s memory=%s%s persistent=%d\n", world_size, o.seed,
               o.iterations, o.comms, o.max_bytes, expect_mode_name(o.expect),
               test_memory_name(o.memory), o.expect_timeout ? " expect-timeout" : "",
               o.persistent);

    slot_t slots[MAX_COMMS];
    create_slots(slots, o.comms, o.seed);
    verdict_log_t log;
    verdict_log_init(&log);
    double started = MPI_Wtime();
    bool warm = warm_up(slots, o.comms);
    if (!o.expect_timeout)
        verdict_log_record(&log, warm);

    long errors_seen = 0;
    int rounds = 0;
    for (int round = 0; round < o.iterations; round++) {
        errors_seen += run_round(&o, round, slots, o.comms, &log);
        rounds++;
        if (p2p_reduce_long(errors_seen, P2P_MAX) > 0) {
            if (world_rank == 0)
                printf("disorder_check: errors in round %d; stopping\n", round);
            break;
        }
        if (o.verbose && world_rank == 0)
            printf("  round %d done at %.2f s\n", round, MPI_Wtime() - started);
    }
    if (o.expect_timeout) {
        /* One verdict per rank: each must have seen at least one error. */
        long ranks_with_errors = p2p_reduce_long(errors_seen > 0, P2P_SUM);
        if (world_rank == 0)
            printf("disorder_check: %ld of %d ranks saw errors after %d round(s)%s\n",
                   ranks_with_errors, world_size, rounds,
                   ranks_with_errors == world_size ? " (expected: serial order deadlocks)"
                                                   : "");
        for (int r = 0; r < world_size; r++)
            verdict_log_record(&log, r != world_rank || errors_seen > 0);
    }
    size_t failed = p2p_verdict_report(&log, "disorder_check", MPI_Wtime() - started);

    for (int k = 0; k < o.comms; k++)
        if (slots[k].comm != MPI_COMM_NULL)
            MPI_Comm_free(&slots[k].comm);
    verdict_log_free(&log);
    MPI_Finalize();
    test_memory_teardown();
    return failed == 0 ? 0 : 1;
}
