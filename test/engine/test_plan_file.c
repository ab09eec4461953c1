/*
 * test_plan_file.c - plan files (docs/plan-format.md) as the engine loads
 * them. Every valid plan of test/plans runs on simulated ranks over one
 * FIFO per connection (sim_plans.c) for counts that the chunks do not
 * divide, several types and operators, in place where the plan says it
 * serves that, every output element checked; every invalid plan is
 * rejected with a message that names what is wrong and where; the builder
 * refuses the calls a plan does not serve and leaves its output alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/plan_file.h"
#include "sim_plans.h"

static int failures, checks;

#define EXPECT(cond, ...)                                                 \
    do {                                                                  \
        checks++;                                                         \
        if (!(cond)) {                                                    \
            failures++;                                                   \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);          \
            fprintf(stderr, __VA_ARGS__);                                 \
            fputc('\n', stderr);                                          \
        }                                                                 \
    } while (0)

static const struct valid_plan {
    const char       *file;
    dfccl_coll_type_t type;
    int               ranks;
    int               in_place;   /* serves in-place calls */
} valid[] = {
    { "ring_allreduce_4.json", DFCCL_COLL_ALLREDUCE, 4, 1 },
    { "allgather_direct_4.json", DFCCL_COLL_ALLGATHER, 4, 1 },
    { "ring_reduce_scatter_4.json", DFCCL_COLL_REDUCE_SCATTER, 4, 0 },
    { "allreduce_pair_2.json", DFCCL_COLL_ALLREDUCE, 2, 1 },
    { "allreduce_relay_2.json", DFCCL_COLL_ALLREDUCE, 2, 0 },
    { "allreduce_1.json", DFCCL_COLL_ALLREDUCE, 1, 1 },
    /* version 2: runs by its dependencies; in program order it deadlocks */
    { "allgather_recv_first_4.json", DFCCL_COLL_ALLGATHER, 4, 1 },
};

/* Each invalid plan and what its message must say. */
static const struct invalid_plan {
    const char *file;
    const char *says;
} invalid[] = {
    { "bad_unmatched_send.json", "rank 0 step 2: sends to rank 1 a 2nd time" },
    { "bad_chunk_range.json", "rank 1 step 0: chunks 1-2 are not all among the plan's 2" },
    { "bad_forward_after.json", "rank 0 step 1: \"after\" names step 2" },
    { "bad_deadlock.json", "deadlock with FIFOs of 2 chunks: rank 0 step 0 waits for data from "
                           "rank 1; rank 1 step 0 waits for data from rank 0" },
    { "bad_deadlock_fifo.json", "rank 0 step 2 waits for room at rank 1" },
    { "bad_missing_reduce.json", "chunk 0 of the receive buffer with the contributions of ranks "
                                 "0,1,3: it lacks ranks 2" },
    { "bad_self_peer.json", "rank 2 step 0: sends to itself" },
    { "bad_duplicate_rank.json", "programs[2]: rank 1 has a program already" },
    { "bad_range_mismatch.json", "rank 0 step 0: sends chunks 0-0 to rank 1, whose matching step "
                                 "2 receives chunks 1-1" },
    { "bad_unknown_key.json", "rank 0 step 1: unknown key \"reduced\"" },
    { "bad_three_sends.json", "rank 1 step 0: sends to 3 ranks" },
    { "bad_double_count.json", "rank 0 step 1: combines rank 0's contribution to chunk 0 twice" },
    { "bad_undefined_read.json", "rank 0 step 0: reads chunk 0 of the receive buffer before" },
    { "bad_round_order.json", "rank 0 step 1: reads chunk 1 of the receive buffer that step 0 "
                              "writes" },
    { "bad_allgather_gap.json", "rank 1: never writes chunk 0 of its receive buffer" },
    { "bad_no_program.json", "rank 2 has no program" },
    { "bad_recv_first_v1.json", "deadlock with FIFOs of 2 chunks: rank 0 step 0 waits for data "
                                "from rank 1" },
    { "bad_not_json.json", "not JSON" },
};

static const char *plans_dir(void)
{
    static char dir[4096];
    const char *top = getenv("top_srcdir");
    snprintf(dir, sizeof(dir), "%s/test/plans", top != NULL ? top : ".");
    return dir;
}

static dfccl_plan_file_t *load(const char *file, char *why, size_t len, dfccl_status_t *st)
{
    char path[4200];
    dfccl_plan_file_t *pf = (dfccl_plan_file_t *)&pf;   /* must stay as it is on failure */

    snprintf(path, sizeof(path), "%s/%s", plans_dir(), file);
    *st = dfccl_plan_file_load(path, &pf, why, len);
    if (*st != DFCCL_OK) {
        EXPECT(pf == (dfccl_plan_file_t *)&pf, "%s: a failed load set its output", file);
        return NULL;
    }
    return pf;
}

static dfccl_status_t build_file(void *arg, const dfccl_plan_call_t *call, int rank,
                                 dfccl_plan_t *plan)
{
    return dfccl_plan_file_build(arg, call, rank, plan);
}

static int file_peers(void *arg, int rank, int *peers, int max)
{
    return dfccl_plan_file_send_peers(arg, rank, peers, max);
}

static const struct { dfccl_dtype_t dtype; dfccl_op_t op; } kinds[] = {
    { DFCCL_INT32, DFCCL_OP_SUM }, { DFCCL_DOUBLE, DFCCL_OP_MAX }, { DFCCL_UINT8, DFCCL_OP_BXOR },
    { DFCCL_FLOAT, DFCCL_OP_PROD }, { DFCCL_INT64, DFCCL_OP_MIN }, { DFCCL_INT16, DFCCL_OP_SUM },
    { DFCCL_BOOL, DFCCL_OP_LOR },
};
static const size_t counts[] = { 0, 1, 7, 37, 1000, 1001 };
static const uint32_t slot_counts[] = { 2, 3, 8 };

/* Every call of the plan's collective on simulated ranks. */
static void run_plan(const struct valid_plan *v, dfccl_plan_file_t *pf, unsigned long *elems)
{
    sim_plan_source_t src = { build_file, file_peers, pf, dfccl_plan_file_max_steps(pf), v->file,
                              dfccl_plan_file_max_more(pf), dfccl_plan_file_max_deps(pf) };
    unsigned seed = 1;

    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
        for (int in_place = 0; in_place < 2; in_place++)
            for (size_t s = 0; s < sizeof(slot_counts) / sizeof(slot_counts[0]); s++)
                for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
                    sim_plan_case_t pc = { v->type, v->ranks, counts[c], NULL, in_place,
                                           kinds[k].dtype, kinds[k].op, slot_counts[s], seed++ };
                    sim_plan_result_t r;
                    if (v->type == DFCCL_COLL_ALLGATHER) pc.op = DFCCL_OP_NONE;
                    r = sim_plan_run(&src, &pc, elems);
                    if (in_place && !v->in_place) {
                        EXPECT(r == SIM_PLAN_UNSUPPORTED, "%s: an in-place call was not refused",
                               v->file);
                    } else {
                        EXPECT(r == SIM_PLAN_RIGHT, "%s: count %zu in_place %d: wrong result",
                               v->file, counts[c], in_place);
                    }
                }
}

/* What the builder refuses, and that a refusal changes nothing. */
static void check_build_refusals(const struct valid_plan *v, dfccl_plan_file_t *pf)
{
    uint32_t cap = dfccl_plan_file_max_steps(pf);
    dfccl_step_t steps[16];
    dfccl_step_peers_t peers[16];
    int32_t more[64];
    uint32_t deps[64];
    dfccl_plan_t plan = { .steps = steps, .peers = peers, .nsteps = 77, .cap = cap, .max_block = 99,
                          .more_peers = more, .more_cap = 64, .deps = deps, .deps_cap = 64 };
    size_t equal[4] = { 5, 5, 5, 5 }, unequal[4] = { 5, 6, 5, 5 };
    dfccl_plan_call_t call = { (dfccl_coll_type_t)((v->type + 1) % DFCCL_COLL_TYPE_COUNT), 0, 5,
                               equal };

    EXPECT(dfccl_plan_file_build(pf, &call, 0, &plan) == DFCCL_ERR_UNSUPPORTED,
           "%s: another collective was not refused", v->file);
    call.type = v->type;
    EXPECT(dfccl_plan_file_build(pf, &call, v->ranks, &plan) == DFCCL_ERR_INVALID_PARAM,
           "%s: a rank out of range was not refused", v->file);
    plan.cap = cap - 1;
    EXPECT(dfccl_plan_file_build(pf, &call, 0, &plan) == DFCCL_ERR_INVALID_PARAM,
           "%s: too small a capacity was not refused", v->file);
    plan.cap = cap;
    if (v->type == DFCCL_COLL_REDUCE_SCATTER && v->ranks > 1) {
        call.counts = unequal;
        EXPECT(dfccl_plan_file_build(pf, &call, 0, &plan) == DFCCL_ERR_UNSUPPORTED,
               "%s: unequal counts were not refused", v->file);
        call.counts = equal;
    }
    EXPECT(plan.nsteps == 77 && plan.max_block == 99, "%s: a refused build changed the plan",
           v->file);
    EXPECT(dfccl_plan_file_build(pf, &call, 0, &plan) == DFCCL_OK && plan.nsteps > 0,
           "%s: the plain call was refused", v->file);
}

static void check_valid(const struct valid_plan *v, unsigned long *elems)
{
    char why[1024];
    dfccl_status_t st;
    dfccl_plan_file_t *pf = load(v->file, why, sizeof(why), &st);
    const char *ip_why;
    int peers[8], n;

    EXPECT(pf != NULL, "%s: rejected: %s", v->file, why);
    if (pf == NULL) return;
    EXPECT(dfccl_plan_file_type(pf) == v->type && dfccl_plan_file_ranks(pf) == v->ranks,
           "%s: type or ranks differ", v->file);
    EXPECT(dfccl_plan_file_in_place(pf, &ip_why) == v->in_place, "%s: in place: %s", v->file, ip_why);
    EXPECT(dfccl_plan_file_send_peers(pf, v->ranks, peers, 8) == -1, "%s: rank out of range", v->file);
    for (int r = 0; r < v->ranks; r++) {
        n = dfccl_plan_file_send_peers(pf, r, peers, 8);
        for (int i = 1; i < n; i++) EXPECT(peers[i - 1] < peers[i], "%s: peers not sorted", v->file);
        for (int i = 0; i < n; i++) EXPECT(peers[i] != r, "%s: rank %d sends to itself", v->file, r);
    }
    check_build_refusals(v, pf);
    run_plan(v, pf, elems);
    dfccl_plan_file_free(pf);
}

static void check_invalid(const struct invalid_plan *b)
{
    char why[1024];
    dfccl_status_t st;
    dfccl_plan_file_t *pf = load(b->file, why, sizeof(why), &st);

    EXPECT(pf == NULL && st == DFCCL_ERR_INVALID_PARAM, "%s: accepted", b->file);
    if (pf != NULL) dfccl_plan_file_free(pf);
    else EXPECT(strstr(why, b->says) != NULL, "%s: says \"%s\", not \"%s\"", b->file, why, b->says);
}

/* Text in memory: what the file reader adds nothing to. */
static void check_texts(void)
{
    static const struct { const char *text, *says; } texts[] = {
        { "", "not JSON" },
        { "{} {}", "text after the plan" },
        { "[]", "a plan must be an object" },
        { "{\"format\": \"other\"}", "\"format\" must be \"dfccl-plan\"" },
        { "{\"format\": \"dfccl-plan\", \"version\": 3}", "version 3 is newer" },
        { "{\"format\": \"dfccl-plan\", \"version\": 1, \"collective\": \"allgather\", \"ranks\": 3,"
          " \"chunks\": 4, \"programs\": []}", "4 chunks do not cut 3 blocks alike" },
        { "{\"format\": \"dfccl-plan\", \"version\": 1, \"collective\": \"allreduce\", \"ranks\": 2,"
          " \"chunks\": 1, \"programs\": [{\"rank\": 0, \"steps\": [{\"chunk\": 0, \"src\": \"send\","
          " \"dst\": \"send\"}]}]}", "rank 0 step 0: \"dst\" must be \"recv\" or null" },
    };
    char why[256];

    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        dfccl_plan_file_t *pf = NULL;
        dfccl_status_t st = dfccl_plan_file_parse(texts[i].text, strlen(texts[i].text), &pf, why,
                                                  sizeof(why));
        EXPECT(st == DFCCL_ERR_INVALID_PARAM && pf == NULL, "text %zu accepted", i);
        EXPECT(strstr(why, texts[i].says) != NULL, "text %zu says \"%s\", not \"%s\"", i, why,
               texts[i].says);
    }
    /* a message cut to the buffer stays terminated */
    dfccl_plan_file_parse("[]", 2, &(dfccl_plan_file_t *){ NULL }, why, 5);
    EXPECT(strlen(why) == 4, "a short buffer was overrun");
    EXPECT(dfccl_plan_file_load("/nonexistent/plan.json", &(dfccl_plan_file_t *){ NULL }, why,
                                sizeof(why)) == DFCCL_ERR_SYSTEM, "a missing file was not refused");
}

/* Where a plan applies: "nodes", "min_bytes", "max_bytes". */
#define PAIR_HEAD "{\"format\": \"dfccl-plan\", \"version\": 1, \"collective\": \"allreduce\"," \
                  " \"ranks\": 2, \"chunks\": 1, "
#define PAIR_PROGRAMS "\"programs\": [{\"rank\": 0, \"steps\": [{\"send\": [1], \"chunk\": 0," \
    " \"src\": \"send\"}, {\"recv\": 1, \"reduce\": true, \"chunk\": 0, \"src\": \"send\"," \
    " \"dst\": \"recv\"}]}, {\"rank\": 1, \"steps\": [{\"send\": [0], \"chunk\": 0," \
    " \"src\": \"send\"}, {\"recv\": 0, \"reduce\": true, \"chunk\": 0, \"src\": \"send\"," \
    " \"dst\": \"recv\"}]}]}"
static void check_scope(void)
{
    static const struct { const char *scope, *says; } bad[] = {
        { "\"nodes\": [0], ", "\"nodes\" must list the node of each of the 2 ranks" },
        { "\"nodes\": [1, 0], ", "\"nodes\"[0] must be a node already named or 0" },
        { "\"nodes\": [0, 2], ", "\"nodes\"[1] must be a node already named or 1" },
        { "\"min_bytes\": -1, ", "\"min_bytes\" must be a non-negative integer" },
        { "\"max_bytes\": \"1M\", ", "\"max_bytes\" must be a non-negative integer" },
        { "\"min_bytes\": 9, \"max_bytes\": 8, ", "\"min_bytes\" 9 is above \"max_bytes\" 8" },
    };
    const int same[2] = { 0, 0 }, apart[2] = { 0, 1 };
    char text[1024], why[256];
    dfccl_plan_file_t *pf = NULL, *other = NULL;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(text, sizeof(text), PAIR_HEAD "%s" PAIR_PROGRAMS, bad[i].scope);
        EXPECT(dfccl_plan_file_parse(text, strlen(text), &pf, why, sizeof(why)) ==
               DFCCL_ERR_INVALID_PARAM && pf == NULL, "scope %zu accepted", i);
        EXPECT(strstr(why, bad[i].says) != NULL, "scope %zu says \"%s\", not \"%s\"", i, why,
               bad[i].says);
        pf = NULL;
    }
    snprintf(text, sizeof(text), PAIR_HEAD "\"nodes\": [0, 1], \"min_bytes\": 8, \"max_bytes\": 64, "
             PAIR_PROGRAMS);
    EXPECT(dfccl_plan_file_parse(text, strlen(text), &pf, why, sizeof(why)) == DFCCL_OK,
           "a scoped plan was refused: %s", why);
    if (pf == NULL) return;
    EXPECT(dfccl_plan_file_fits(pf, 2, apart) && !dfccl_plan_file_fits(pf, 2, same) &&
           !dfccl_plan_file_fits(pf, 3, apart), "nodes [0, 1] fit the wrong layouts");
    EXPECT(!dfccl_plan_file_serves_bytes(pf, 7) && dfccl_plan_file_serves_bytes(pf, 8) &&
           dfccl_plan_file_serves_bytes(pf, 64) && !dfccl_plan_file_serves_bytes(pf, 65),
           "sizes 8..64 served wrongly");
    snprintf(text, sizeof(text), PAIR_HEAD PAIR_PROGRAMS);
    EXPECT(dfccl_plan_file_parse(text, strlen(text), &other, why, sizeof(why)) == DFCCL_OK,
           "an unscoped plan was refused: %s", why);
    if (other != NULL) {
        EXPECT(dfccl_plan_file_fits(other, 2, same) && dfccl_plan_file_fits(other, 2, apart) &&
               dfccl_plan_file_serves_bytes(other, 0) &&
               dfccl_plan_file_serves_bytes(other, UINT64_MAX), "an unscoped plan does not fit all");
        EXPECT(dfccl_plan_file_digest(other) != dfccl_plan_file_digest(pf),
               "two different plans have one digest");
        dfccl_plan_file_free(other);
    }
    dfccl_plan_file_free(pf);
}

int main(void)
{
    unsigned long elems = 0;

    sim_plan_quiet_after(20);
    for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) check_valid(&valid[i], &elems);
    for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) check_invalid(&invalid[i]);
    check_texts();
    check_scope();
    printf("test_plan_file: %zu valid plans run, %lu elements checked; %zu invalid plans\n",
           sizeof(valid) / sizeof(valid[0]), elems, sizeof(invalid) / sizeof(invalid[0]));
    printf("test_plan_file: %d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
