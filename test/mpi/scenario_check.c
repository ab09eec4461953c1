/*
 * scenario_check.c - seeded random scenarios of collectives in disorder.
 *
 * Scenario seed X (the run's --seed, then --seed + 1, ...) fixes, the same
 * on every rank:
 *   - 1 to 3 communicators, each a dup of world, a split of a random
 *     subset (each rank's colour drawn from the seed; ranks drawn
 *     MPI_UNDEFINED get no communicator), the ranks of one node
 *     (MPI_COMM_TYPE_SHARED), or the ranks of one local index on every
 *     node (spanning nodes with one rank each), re-created with
 *     MPI_Comm_dup_with_info carrying a random "dfccl_priority";
 *   - 2 to 9 calls: collective, (type, op), size (mostly small), blocking
 *     or not.
 * Blocking calls keep one relative order on every rank, as MPI requires.
 * A nonblocking call is started somewhere before blocking call s and waited
 * for after blocking call w - 1 (s <= w, both from the seed); within each
 * such segment a rank starts its calls in its own random order, then waits
 * in another (one by one or MPI_Waitall). Starts before waits within a
 * segment keep it legal MPI; the per-rank orders are the disorder an engine
 * in strict submission order cannot survive.
 *
 * Every result is checked bit-exactly; the engine's posted counters must
 * rise by one per carried call. A failing scenario prints its seed;
 * "--scenarios 1 --seed X" replays it. Ranks agree point-to-point after
 * each scenario and stop at the first failure. --memory device hands MPI
 * device buffers (coll_case.c).
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

#define MAX_SCENARIO_COMMS 3
#define MAX_CALLS 9
#define MAX_PRINTED 20
#define PRIORITY_KEY "dfccl_priority"

typedef struct {
    uint64_t      seed;
    long          scenarios;
    expect_mode_t expect;
    test_memory_kind_t memory;
    bool          verbose;
} options_t;

typedef struct {
    int         slot;       /* which communicator */
    bool        blocking;
    int         start_seg;  /* nonblocking: started in this segment */
    int         wait_seg;   /* nonblocking: waited for in this segment */
    coll_case_t c;
    MPI_Request request;
    bool        member;
    bool        passed;
} call_t;

static int world_rank, world_size, printed;

static void fail(uint64_t scenario_seed, const char *what, const char *why)
{
    if (printed == MAX_PRINTED)
        fprintf(stderr, "rank %d: further failures not printed\n", world_rank);
    if (printed++ >= MAX_PRINTED)
        return;
    fprintf(stderr, "FAIL rank %d scenario seed %" PRIu64 " %s: %s\n", world_rank,
            scenario_seed, what, why);
}

/* Mostly small sizes keep 1,000 scenarios within minutes; one call in ten
 * is up to 256 KiB. */
static size_t draw_bytes(test_rng_t *rng)
{
    if (test_rng_below(rng, 10) == 0)
        return (size_t)test_rng_log_uniform(rng, 4096, 256 * 1024);
    return (size_t)test_rng_log_uniform(rng, 1, 4096);
}

static void create_comms(test_rng_t *shared, int ncomms, MPI_Comm *comms)
{
    for (int j = 0; j < ncomms; j++) {
        uint64_t kind = test_rng_below(shared, 6);   /* 0-1 dup, 2-3 random, 4 node, 5 across */
        bool is_dup = kind < 2;
        int colour = 0, key = (int)test_rng_below(shared, 2) ? world_rank : -world_rank;
        for (int r = 0; r < world_size; r++) {
            uint64_t draw = test_rng_below(shared, 4);  /* 0, 1 or (3) left out */
            if (r == world_rank && !is_dup)
                colour = draw == 3 ? MPI_UNDEFINED : (int)(draw % 2);
        }
        int priority[2] = { (int)test_rng_below(shared, 8), (int)test_rng_below(shared, 8) };
        MPI_Comm base = MPI_COMM_WORLD, split = MPI_COMM_NULL;
        comms[j] = MPI_COMM_NULL;
        if (kind >= 4) {
            /* by node: the ranks that share it, or one rank of each */
            MPI_Comm node;
            int local;
            MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL,
                                &node);
            MPI_Comm_rank(node, &local);
            if (kind == 4) split = node;
            else {
                MPI_Comm_split(MPI_COMM_WORLD, local, key, &split);
                MPI_Comm_free(&node);
            }
            colour = 0;
            base = split;
        } else if (!is_dup) {
            MPI_Comm_split(MPI_COMM_WORLD, colour, key, &split);
            if (split == MPI_COMM_NULL)
                continue;
            base = split;
        }
        MPI_Info info;
        char text[16];
        MPI_Info_create(&info);
        snprintf(text, sizeof text, "%d", priority[is_dup ? 0 : colour]);
        MPI_Info_set(info, PRIORITY_KEY, text);
        MPI_Comm_dup_with_info(base, info, &comms[j]);
        MPI_Info_free(&info);
        if (split != MPI_COMM_NULL)
            MPI_Comm_free(&split);
    }
}

/*
 * MPI requires the calls on one communicator, nonblocking ones included,
 * to be started in the same order on every rank. A shuffled start order
 * keeps its positions per communicator but gets the calls of each
 * communicator back in index order: disorder across communicators only.
 */
static void keep_order_per_comm(const call_t *calls, int *order, int n)
{
    for (int p = 0; p < n; p++)
        for (int q = p + 1; q < n; q++)
            if (calls[order[q]].slot == calls[order[p]].slot && order[q] < order[p]) {
                int tmp = order[p];
                order[p] = order[q];
                order[q] = tmp;
            }
}

static void wait_one(uint64_t sseed, call_t *call, int index)
{
    int rc = MPI_Wait(&call->request, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        char what[64], why[MPI_MAX_ERROR_STRING + 64];
        snprintf(what, sizeof what, "call %d wait", index);
        coll_case_error_text(rc, why, sizeof why);
        fail(sseed, what, why);
        call->passed = false;
    }
}

/* Runs scenario `sseed`; returns whether it passed on this rank. */
static bool run_scenario(const options_t *o, uint64_t sseed)
{
    test_rng_t shared, mine;
    test_rng_init(&shared, test_rng_mix(sseed, 0x5ce0));
    test_rng_init(&mine, test_rng_mix(test_rng_mix(sseed, 0x5ce1), (uint64_t)world_rank));
    bool passed = true;
    char what[160], why[MPI_MAX_ERROR_STRING + 64];

    int ncomms = 1 + (int)test_rng_below(&shared, MAX_SCENARIO_COMMS);
    MPI_Comm comms[MAX_SCENARIO_COMMS];
    create_comms(&shared, ncomms, comms);
    /* Ordered set-up of each communicator's engine side: it goes through a
     * blocking stock collective, which disorder would deadlock for real. */
    for (int j = 0; j < ncomms; j++) {
        if (comms[j] == MPI_COMM_NULL)
            continue;
        int one = 1, sum = 0, size;
        MPI_Comm_size(comms[j], &size);
        int rc = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comms[j]);
        if (rc != MPI_SUCCESS || sum != size) {
            coll_case_error_text(rc, why, sizeof why);
            snprintf(what, sizeof what, "warm-up of communicator %d", j);
            fail(sseed, what, rc != MPI_SUCCESS ? why : "wrong sum");
            passed = false;
        }
    }

    int ncalls = 2 + (int)test_rng_below(&shared, MAX_CALLS - 1);
    call_t calls[MAX_CALLS];
    int blocking_count = 0;
    uint64_t rise[DFCCL_COLL_TYPE_COUNT] = { 0 };
    for (int i = 0; i < ncalls; i++) {
        call_t *call = &calls[i];
        memset(call, 0, sizeof *call);
        call->slot = (int)test_rng_below(&shared, (uint64_t)ncomms);
        call->blocking = test_rng_below(&shared, 10) < 3;
        call->c.kind = (case_kind_t)test_rng_below(&shared, CASE_KIND_COUNT);
        call->c.type = coll_case_pick_type(call->c.kind, test_rng_next(&shared));
        size_t bytes = draw_bytes(&shared);
        call->c.seed = (uint32_t)test_rng_next(&shared);
        call->request = MPI_REQUEST_NULL;
        call->passed = true;
        if (call->blocking)
            call->start_seg = call->wait_seg = blocking_count++;
        MPI_Comm comm = comms[call->slot];
        call->member = comm != MPI_COMM_NULL;
        if (!call->member)
            continue;
        int size;
        MPI_Comm_size(comm, &size);
        call->c.comm = comm;
        call->c.memory = o->memory;
        call->c.count = coll_case_count_for_bytes(call->c.kind, call->c.type, bytes, size);
        if (coll_case_prepare(&call->c) != 0) {
            fprintf(stderr, "rank %d: out of memory\n", world_rank);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (o->expect == EXPECT_ENGINE && coll_case_moves_data(&call->c))
            rise[coll_case_engine_kind(call->c.kind)]++;
    }
    /* Segments of nonblocking calls, drawn once all blocking calls are known. */
    for (int i = 0; i < ncalls; i++) {
        if (calls[i].blocking)
            continue;
        calls[i].start_seg = (int)test_rng_below(&shared, (uint64_t)blocking_count + 1);
        calls[i].wait_seg = calls[i].start_seg +
            (int)test_rng_below(&shared, (uint64_t)(blocking_count + 1 - calls[i].start_seg));
    }

    engine_snapshot_t before;
    engine_snapshot_take(&before);
    int blocking_done = 0;
    for (int seg = 0; seg <= blocking_count; seg++) {
        int order[MAX_CALLS], n = 0;
        for (int i = 0; i < ncalls; i++)
            if (!calls[i].blocking && calls[i].member && calls[i].start_seg == seg)
                order[n++] = i;
        test_rng_shuffle(&mine, order, (size_t)n);
        keep_order_per_comm(calls, order, n);
        for (int k = 0; k < n; k++) {
            call_t *call = &calls[order[k]];
            int rc = coll_case_start(&call->c, &call->request);
            if (rc != MPI_SUCCESS) {
                coll_case_error_text(rc, why, sizeof why);
                snprintf(what, sizeof what, "call %d start", order[k]);
                fail(sseed, what, why);
                call->passed = false;
                call->request = MPI_REQUEST_NULL;
            }
        }
        n = 0;
        for (int i = 0; i < ncalls; i++)
            if (!calls[i].blocking && calls[i].member && calls[i].wait_seg == seg &&
                calls[i].request != MPI_REQUEST_NULL)
                order[n++] = i;
        test_rng_shuffle(&mine, order, (size_t)n);
        if (n > 1 && test_rng_below(&mine, 3) == 0) {
            MPI_Request requests[MAX_CALLS];
            MPI_Status statuses[MAX_CALLS];
            for (int k = 0; k < n; k++)
                requests[k] = calls[order[k]].request;
            int rc = MPI_Waitall(n, requests, statuses);
            for (int k = 0; k < n; k++) {
                calls[order[k]].request = requests[k];
                int error = rc == MPI_ERR_IN_STATUS ? statuses[k].MPI_ERROR : rc;
                if (error != MPI_SUCCESS) {
                    coll_case_error_text(error, why, sizeof why);
                    snprintf(what, sizeof what, "call %d waitall", order[k]);
                    fail(sseed, what, why);
                    calls[order[k]].passed = false;
                }
            }
        } else {
            for (int k = 0; k < n; k++)
                wait_one(sseed, &calls[order[k]], order[k]);
        }
        if (seg == blocking_count)
            break;
        /* Blocking call number seg, in the same place on every rank. */
        for (int i = 0; i < ncalls; i++) {
            if (!calls[i].blocking || calls[i].start_seg != seg || !calls[i].member)
                continue;
            int rc = coll_case_run_blocking(&calls[i].c);
            if (rc != MPI_SUCCESS) {
                coll_case_error_text(rc, why, sizeof why);
                snprintf(what, sizeof what, "call %d blocking", i);
                fail(sseed, what, why);
                calls[i].passed = false;
            }
        }
        blocking_done++;
    }

    for (int i = 0; i < ncalls; i++) {
        call_t *call = &calls[i];
        if (!call->member)
            continue;
        if (call->passed && !coll_case_verify(&call->c, why, sizeof why)) {
            call->passed = false;
            snprintf(what, sizeof what, "call %d %s %s %s count=%zu on communicator %d",
                     i, call->blocking ? "blocking" : "nonblocking",
                     coll_case_kind_name(call->c.kind), call->c.type->name,
                     call->c.count, call->slot);
            fail(sseed, what, why);
        }
        passed = passed && call->passed;
        coll_case_free(&call->c);
    }
    engine_snapshot_t after;
    engine_snapshot_take(&after);
    for (int kind = 0; kind < DFCCL_COLL_TYPE_COUNT; kind++) {
        uint64_t got = after.posted[kind] - before.posted[kind];
        if (got != rise[kind]) {
            snprintf(why, sizeof why, "engine posted[%s] rose by %" PRIu64 ", expected %"
                     PRIu64, dfccl_coll_type_name((dfccl_coll_type_t)kind), got, rise[kind]);
            fail(sseed, "counters", why);
            passed = false;
        }
    }
    for (int j = 0; j < ncomms; j++)
        if (comms[j] != MPI_COMM_NULL)
            MPI_Comm_free(&comms[j]);
    (void)blocking_done;
    return passed;
}

int main(int argc, char **argv)
{
    /* Device selection must precede MPI_Init. */
    test_memory_kind_t memory = test_memory_setup(&argc, argv, "scenario_check");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    options_t o = { .seed = 1, .scenarios = 100, .memory = memory };
    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true;
        if (strcmp(argv[i], "--verbose") == 0) {
            o.verbose = true;
            continue;
        }
        if (value == NULL)
            ok = false;
        else if (strcmp(argv[i], "--scenarios") == 0)
            ok = (o.scenarios = atol(value)) > 0;
        else if (strcmp(argv[i], "--seed") == 0)
            o.seed = strtoull(value, NULL, 0);
        else if (strcmp(argv[i], "--expect") == 0)
            ok = expect_mode_parse(value, &o.expect) == 0;
        else
            ok = false;
        if (!ok) {
            if (world_rank == 0)
                fprintf(stderr, "usage: scenario_check [--scenarios N] [--seed S] "
                                "[--expect engine|stock] [--memory host|device|mixed] "
                                "[--verbose]\n");
            MPI_Finalize();
            return 2;
        }
        i++;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (world_rank == 0)
        printf("scenario_check: np=%d scenarios=%ld seed=%" PRIu64 " expect=%s memory=%s\n",
               world_size, o.scenarios, o.seed, expect_mode_name(o.expect),
               test_memory_name(o.memory));

    verdict_log_t log;
    verdict_log_init(&log);
    double started = MPI_Wtime();
    for (long s = 0; s < o.scenarios; s++) {
        uint64_t sseed = o.seed + (uint64_t)s;
        bool passed = run_scenario(&o, sseed);
        verdict_log_record(&log, passed);
        if (p2p_reduce_long(!passed, P2P_MAX) != 0) {
            if (world_rank == 0)
                printf("scenario_check: scenario seed %" PRIu64 " failed; replay with "
                       "--scenarios 1 --seed %" PRIu64 "\n", sseed, sseed);
            break;
        }
        if (o.verbose && world_rank == 0 && (s + 1) % 100 == 0)
            printf("  %ld scenarios at %.2f s\n", s + 1, MPI_Wtime() - started);
    }
    size_t failed = p2p_verdict_report(&log, "scenario_check", MPI_Wtime() - started);
    verdict_log_free(&log);
    MPI_Finalize();
    test_memory_teardown();
    return failed == 0 ? 0 : 1;
}
