/*
 * test_planner.c - the planner on topologies small enough that the best
 * schedule is known by hand (the reasoning is at the table of cases): every
 * method must yield a schedule the checker accepts, the exact ones must
 * reach the optimum, none may beat it; reduce-scatter and allreduce come
 * out as the reversal and the sum; sizes parse as written. Links behave in
 * epochs as the model says (latency threshold, switches passing chunks on);
 * where greedy falls short, the LP's rounding, time partitioning and the
 * MILP each do better by themselves, and the MILP starts from greedy's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "planner/planner.h"

static int failures;

#define EXPECT(cond, ...)                                  \
    do {                                                   \
        if (!(cond)) {                                     \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);    \
            printf(__VA_ARGS__);                           \
            printf("\n");                                  \
            failures++;                                    \
        }                                                  \
    } while (0)

typedef struct {
    const char *topology;
    pl_collective_t coll;
    int chunks;
    pl_epoch_rule_t rule;
    int best;  /* the fewest epochs any schedule needs */
    int ring;  /* the ring's epochs */
    int hard;  /* beyond the greedy planner: only exact methods must reach best */
} case_t;

/* Allgather optima (1 chunk a GPU, 50 GB/s, no latency unless said):
 * two GPUs 1 epoch; a line of 3 needs 2 hops end to end; a ring of 4 both
 * ways 2 (the far GPU is 2 hops off), one way 3 (three chunks through one
 * link in); a star of 4 on one switch 3 (each downlink brings 3 chunks; the
 * switch passes a chunk on as it arrives, so the first is at its GPU from
 * epoch 1, as over a direct link, and the ring's steps through the switch
 * take an epoch each); the uneven line (1 us of latency on 20 or 40 us
 * epochs, under a tenth: no epoch) 4 fast (GPU 1's link to GPU 2 carries two
 * chunks of 2 epochs, GPU 0's from epoch 1 on), 2 slow (2 hops of 1). */
static const case_t cases[] = {
    { "two_gpus", PL_ALLGATHER, 1, PL_EPOCH_FAST, 1, 1, 0 },
    { "line_3", PL_ALLGATHER, 1, PL_EPOCH_FAST, 2, 3, 0 },
    { "ring_4", PL_ALLGATHER, 1, PL_EPOCH_FAST, 2, 3, 0 },
    { "ring_4_one_way", PL_ALLGATHER, 1, PL_EPOCH_FAST, 3, 3, 0 },
    { "star_4", PL_ALLGATHER, 1, PL_EPOCH_FAST, 3, 3, 0 },
    { "line_3_uneven", PL_ALLGATHER, 1, PL_EPOCH_FAST, 4, 5, 0 },
    { "line_3_uneven", PL_ALLGATHER, 1, PL_EPOCH_SLOW, 2, 3, 0 },
    /* two chunks a GPU: each downlink of the star brings 6 */
    { "star_4", PL_ALLGATHER, 2, PL_EPOCH_FAST, 6, 6, 0 },
    /* reduce-scatter is the allgather reversed: the same epochs on these
     * symmetric topologies; allreduce their sum */
    { "line_3", PL_REDUCESCATTER, 1, PL_EPOCH_FAST, 2, 3, 0 },
    { "star_4", PL_REDUCESCATTER, 1, PL_EPOCH_FAST, 3, 3, 0 },
    { "ring_4", PL_ALLREDUCE, 1, PL_EPOCH_FAST, 4, 6, 0 },
    { "star_4", PL_ALLREDUCE, 1, PL_EPOCH_FAST, 6, 6, 0 },
    /* Not by hand: mixed link speeds and latencies (1 us on 10 us epochs
     * costs none, 3 us one); 8 is what the MILP proves optimal within
     * greedy's horizon, hence overall. */
    { "mixed_4", PL_ALLGATHER, 1, PL_EPOCH_FAST, 8, 12, 0 },
    /* A star whose switch does not copy: still 3 epochs (every downlink
     * brings 3 chunks, and the uplinks carry 3 each too: each chunk once
     * for every GPU that gets it), but no schedule may copy or sum in it,
     * and greedy's earliest-first choices cost an epoch. */
    { "star_4_unicast", PL_ALLGATHER, 1, PL_EPOCH_FAST, 3, 3, 1 },
    { "star_4_unicast", PL_REDUCESCATTER, 1, PL_EPOCH_FAST, 3, 3, 1 },
    /* greedy's trap (the file says how): 8, greedy 9 (test_beats_greedy) */
    { "trap_4", PL_ALLGATHER, 1, PL_EPOCH_FAST, 8, 15, 1 },
};

/* Methods, and whether they must reach the optimum: always, or on the
 * cases not marked hard (the greedy planner is not exact in general, but
 * most of these are simple enough for it). None may be worse than greedy,
 * which runs first. Partition runs twice: in windows of its own choosing
 * and in windows of 2 epochs, so that there are several. */
enum { NEVER, EASY, ALWAYS };
static const struct {
    pl_method_t method;
    int exact, window;
} methods[] = {
    { PL_GREEDY, EASY, 0 }, { PL_MILP, ALWAYS, 0 },     { PL_AUTO, ALWAYS, 0 },
    { PL_LP, NEVER, 0 },    { PL_PARTITION, NEVER, 0 }, { PL_PARTITION, NEVER, 2 },
};

/* test/planner/NAME.json, or DIR/NAME.json under the source tree */
static pl_topology_t *load_from(const char *dir, const char *name)
{
    const char *top = getenv("top_srcdir");
    char path[1024], why[512];
    pl_topology_t *t;

    snprintf(path, sizeof(path), "%s/%s/%s.json", top ? top : ".", dir, name);
    if (pl_topology_load(path, &t, why, sizeof(why)) != 0) {
        printf("FAIL: %s: %s\n", path, why);
        failures++;
        return NULL;
    }
    return t;
}

static pl_topology_t *load(const char *name)
{
    return load_from("test/planner", name);
}

/* A plan for bytes (0: chunks of 1 MB) in epochs of the rule's length. */
static int plan_bytes(const pl_topology_t *t, const case_t *c, uint64_t bytes, pl_method_t m,
                      int window, double limit, pl_schedule_t *s)
{
    pl_options_t o;
    char why[512];
    if (bytes == 0) bytes = 1000000ull * (uint64_t)t->ngpus * (uint64_t)c->chunks;
    double epoch = pl_epoch_length(t, pl_chunk_bytes(t, bytes, c->chunks), c->rule);

    pl_options_default(&o);
    o.method = m;
    o.window = window;
    o.time_limit_s = limit;
    if (pl_plan(t, c->coll, bytes, c->chunks, epoch, &o, s, why, sizeof(why)) != 0) {
        printf("FAIL: %s %s with %s: %s\n", c->topology, pl_collective_name(c->coll),
               pl_method_name(m), why);
        failures++;
        return -1;
    }
    return 0;
}

static int plan(const pl_topology_t *t, const case_t *c, pl_method_t m, int window,
                pl_schedule_t *s)
{
    return plan_bytes(t, c, 0, m, window, 20, s);
}

/* pl_plan checks what it returns; check again from the outside, and after a
 * write and read, so a schedule file means what the planner meant. */
static void recheck(const pl_topology_t *t, const pl_schedule_t *s, const char *what)
{
    pl_instance_t in;
    pl_schedule_t back;
    char why[512], path[] = "/tmp/test_planner_XXXXXX";
    int epochs = -1, fd = mkstemp(path);

    EXPECT(fd >= 0, "%s: no temporary file", what);
    if (fd < 0) return;
    EXPECT(pl_schedule_write(s, t, path, why, sizeof(why)) == 0, "%s: write: %s", what, why);
    EXPECT(pl_schedule_read(path, t, &back, why, sizeof(why)) == 0, "%s: read: %s", what, why);
    remove(path);
    EXPECT(back.nflows == s->nflows && back.epochs == s->epochs && back.collective == s->collective,
           "%s: a schedule read back differs", what);
    EXPECT(pl_instance_init(&in, t, back.chunks_per_gpu, back.chunk_bytes, back.epoch_s, why,
                            sizeof(why)) == 0, "%s: %s", what, why);
    EXPECT(pl_check(&in, &back, &epochs, why, sizeof(why)) == 0, "%s: invalid: %s", what, why);
    EXPECT(epochs == s->epochs, "%s: replayed in %d epochs, planned %d", what, epochs, s->epochs);
    pl_instance_fini(&in);
    pl_schedule_fini(&back);
}

static void test_case(const case_t *c)
{
    pl_topology_t *t = load(c->topology);
    pl_schedule_t s;
    char what[256];
    int greedy = -1;

    if (t == NULL) return;
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        snprintf(what, sizeof(what), "%s %s x%d %s by %s (window %d)", c->topology,
                 pl_collective_name(c->coll), c->chunks, c->rule == PL_EPOCH_FAST ? "fast" : "slow",
                 pl_method_name(methods[i].method), methods[i].window);
        if (plan(t, c, methods[i].method, methods[i].window, &s) != 0) continue;
        if (methods[i].method == PL_GREEDY) greedy = s.epochs;
        EXPECT(greedy < 0 || s.epochs <= greedy, "%s: %d epochs, greedy needs %d", what, s.epochs,
               greedy);
        EXPECT(s.epochs >= c->best, "%s: %d epochs, below the optimum %d (model broken)", what,
               s.epochs, c->best);
        if (methods[i].exact == ALWAYS || (methods[i].exact == EASY && !c->hard))
            EXPECT(s.epochs == c->best, "%s: %d epochs, the optimum is %d", what, s.epochs,
                   c->best);
        recheck(t, &s, what);
        pl_schedule_fini(&s);
    }
    snprintf(what, sizeof(what), "%s %s ring", c->topology, pl_collective_name(c->coll));
    if (plan(t, c, PL_RING, 0, &s) == 0) {
        EXPECT(s.epochs == c->ring, "%s: %d epochs, not %d", what, s.epochs, c->ring);
        recheck(t, &s, what);
        pl_schedule_fini(&s);
    }
    pl_topology_free(t);
}

static void test_bytes(void)
{
    static const struct {
        const char *text;
        uint64_t bytes; /* 0: refused */
    } sizes[] = { { "4096", 4096 },         { "1K", 1000 },       { "1Ki", 1024 },
                  { "64M", 64000000 },      { "64Mi", 67108864 }, { "1G", 1000000000 },
                  { "1GiB", 1073741824 },   { "1.5G", 1500000000 }, { "2T", 2000000000000ull },
                  { "0", 0 },               { "-1K", 0 },         { "1X", 0 },
                  { "G", 0 },               { "0.5", 0 },         { "", 0 } };

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        uint64_t b = 0;
        int rc = pl_parse_bytes(sizes[i].text, &b);
        if (sizes[i].bytes == 0) EXPECT(rc != 0, "\"%s\" accepted as %llu bytes", sizes[i].text,
                                        (unsigned long long)b);
        else EXPECT(rc == 0 && b == sizes[i].bytes, "\"%s\" read as %llu bytes, not %llu",
                    sizes[i].text, (unsigned long long)b, (unsigned long long)sizes[i].bytes);
    }
}

/* The epoch model of links (instance.c): latency up to a tenth of an epoch
 * costs none, above it whole epochs; a switch passes a chunk on as it
 * arrives, so the hop from it to a GPU is an epoch shorter than its span
 * and delay (the hop into it is not). */
static void test_timing(void)
{
    static const char *const file =
        "{\"nodes\": [{\"id\": 0, \"kind\": \"gpu\"}, {\"id\": 1, \"kind\": \"gpu\"},"
        " {\"id\": 2, \"kind\": \"switch\"}], \"links\": ["
        " {\"src\": 0, \"dst\": 1, \"bandwidth_GBps\": 50, \"latency_us\": 2},"
        " {\"src\": 1, \"dst\": 0, \"bandwidth_GBps\": 50, \"latency_us\": 2.2},"
        " {\"src\": 0, \"dst\": 2, \"bandwidth_GBps\": 25, \"latency_us\": 0},"
        " {\"src\": 2, \"dst\": 1, \"bandwidth_GBps\": 25, \"latency_us\": 0},"
        " {\"src\": 2, \"dst\": 0, \"bandwidth_GBps\": 50, \"latency_us\": 5},"
        " {\"src\": 1, \"dst\": 2, \"bandwidth_GBps\": 100, \"latency_us\": 0}]}";
    /* in epochs of 20 us (1 MB at 50 GB/s): span, delay, hop of each link */
    static const int want[][5] = { { 0, 1, 1, 0, 1 }, { 1, 0, 1, 1, 2 }, { 0, 2, 2, 0, 2 },
                                   { 2, 1, 2, 0, 1 }, { 2, 0, 1, 1, 1 }, { 1, 2, 1, 0, 1 } };
    char path[] = "/tmp/test_planner_XXXXXX", why[512];
    int fd = mkstemp(path);
    pl_topology_t *t = NULL;
    pl_instance_t in;

    EXPECT(fd >= 0 && write(fd, file, strlen(file)) == (ssize_t)strlen(file), "timing: no file");
    if (fd >= 0) close(fd);
    EXPECT(pl_topology_load(path, &t, why, sizeof(why)) == 0, "timing: %s", why);
    remove(path);
    if (t == NULL) return;
    EXPECT(pl_instance_init(&in, t, 1, 1e6, 20e-6, why, sizeof(why)) == 0, "timing: %s", why);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        int l = pl_topology_link(t, pl_topology_node(t, want[i][0]),
                                 pl_topology_node(t, want[i][1]));
        EXPECT(l >= 0, "timing: no link %d -> %d", want[i][0], want[i][1]);
        if (l < 0) continue;
        const pl_timing_t *tm = &in.timing[l];
        EXPECT(tm->span == want[i][2] && tm->delay == want[i][3] && pl_hop(&in, l) == want[i][4],
               "timing: link %d -> %d: span %d, delay %d, hop %d; want %d, %d, %d", want[i][0],
               want[i][1], tm->span, tm->delay, pl_hop(&in, l), want[i][2], want[i][3],
               want[i][4]);
    }
    /* the 2 us on 0 -> 1 (exactly a tenth) is what the model leaves out */
    EXPECT(pl_latency_left_out(&in) > 1.99e-6 && pl_latency_left_out(&in) < 2.01e-6,
           "timing: %g s of latency left out, want 2 us", pl_latency_left_out(&in));
    pl_instance_fini(&in);
    pl_topology_free(t);
}

/* Where greedy is not optimal, each method that claims to do better must,
 * by its own means: the LP's rounded fractions, time partitioning's
 * windows (in windows of 2 epochs too: several of them), the MILP. Each
 * starts from greedy's schedule (start_epochs) and ends strictly shorter,
 * named for itself; any of them replaced by the greedy planner would
 * return greedy's epochs, say "greedy" and start from nothing. */
static void test_beats_greedy(void)
{
    static const struct {
        case_t c;
        int greedy;
    } traps[] = {
        /* trap_4.json: GPU 2's chunk reaches GPU 0 as early straight as
         * through GPU 1; straight, it holds up GPU 3's (9 epochs, 8) */
        { { "trap_4", PL_ALLGATHER, 1, PL_EPOCH_FAST, 8, 15, 1 }, 9 },
        /* the star whose switch does not copy: greedy's earliest pairs
         * collide in the switch (4 epochs, 3) */
        { { "star_4_unicast", PL_ALLGATHER, 1, PL_EPOCH_FAST, 3, 3, 1 }, 4 },
    };
    static const struct {
        pl_method_t m;
        int window;
        const char *name;
    } methods[] = { { PL_LP, 0, "lp" },
                    { PL_PARTITION, 0, "partition" },
                    { PL_PARTITION, 2, "partition" },
                    { PL_MILP, 0, "milp" } };

    for (size_t i = 0; i < sizeof(traps) / sizeof(traps[0]); i++) {
        const case_t *c = &traps[i].c;
        pl_topology_t *t = load(c->topology);
        pl_schedule_t s;

        if (t == NULL) continue;
        if (plan(t, c, PL_GREEDY, 0, &s) == 0) {
            EXPECT(s.epochs == traps[i].greedy && s.start_epochs == 0,
                   "%s by greedy: %d epochs (start %d), want %d", c->topology, s.epochs,
                   s.start_epochs, traps[i].greedy);
            pl_schedule_fini(&s);
        }
        for (size_t j = 0; j < sizeof(methods) / sizeof(methods[0]); j++) {
            /* the star's LP is all thirds: nothing to round */
            if (methods[j].m == PL_LP && strcmp(c->topology, "trap_4") != 0) continue;
            if (plan(t, c, methods[j].m, methods[j].window, &s) != 0) continue;
            EXPECT(s.epochs == c->best && strcmp(s.method, methods[j].name) == 0 &&
                       s.start_epochs == traps[i].greedy,
                   "%s by %s (window %d): %d epochs by %s from greedy's %d; want %d by %s "
                   "from %d", c->topology, pl_method_name(methods[j].m), methods[j].window,
                   s.epochs, s.method, s.start_epochs, c->best, methods[j].name,
                   traps[i].greedy);
            pl_schedule_fini(&s);
        }
        pl_topology_free(t);
    }
}

/* The MILP starts from greedy's schedule (horizon, cutoff, fallback): with
 * too little time for CBC (TE-CCL's NDv2 of 16 GPUs at 1 MB, tens of
 * thousands of columns, half a second) it still returns a schedule as
 * short as greedy's, and says it started from it. */
static void test_warm_start(void)
{
    case_t c = { "teccl_ndv2_2x8", PL_ALLGATHER, 1, PL_EPOCH_FAST, 0, 0, 1 };
    pl_topology_t *t = load_from("contrib/bench/topologies", c.topology);
    pl_schedule_t g, s;

    if (t == NULL) return;
    if (plan_bytes(t, &c, 1000000, PL_GREEDY, 0, 20, &g) == 0) {
        if (plan_bytes(t, &c, 1000000, PL_MILP, 0, 0.5, &s) == 0) {
            EXPECT(s.start_epochs == g.epochs && s.epochs <= g.epochs,
                   "milp in 0.5 s: %d epochs by %s, from a start of %d; greedy %d", s.epochs,
                   s.method, s.start_epochs, g.epochs);
            pl_schedule_fini(&s);
        }
        pl_schedule_fini(&g);
    }
    pl_topology_free(t);
}

/* auto keeps the hierarchical schedule where it is shorter than what its
 * method found: on hosts whose GPUs each send through a budget of their
 * own, greedy loads one GPU with the forwarding. */
static void test_auto_keeps_hier(void)
{
    case_t c = { "hosts_2x2_budget", PL_ALLGATHER, 1, PL_EPOCH_FAST, 0, 0, 1 };
    pl_topology_t *t = load(c.topology);
    pl_schedule_t g, h, a;

    if (t == NULL) return;
    if (plan(t, &c, PL_GREEDY, 0, &g) == 0) {
        if (plan(t, &c, PL_HIER, 0, &h) == 0) {
            EXPECT(h.epochs < g.epochs, "%s: hier %d epochs, greedy %d: the case lost its point",
                   c.topology, h.epochs, g.epochs);
            if (plan_bytes(t, &c, 0, PL_AUTO, 0, 2, &a) == 0) {
                EXPECT(a.epochs <= h.epochs, "%s by auto: %d epochs by %s, hier has %d",
                       c.topology, a.epochs, a.method, h.epochs);
                recheck(t, &a, "auto on hosts_2x2_budget");
                pl_schedule_fini(&a);
            }
            pl_schedule_fini(&h);
        }
        pl_schedule_fini(&g);
    }
    pl_topology_free(t);
}

int main(void)
{
    test_bytes();
    test_timing();
    test_beats_greedy();
    test_warm_start();
    test_auto_keeps_hier();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) test_case(&cases[i]);
    if (failures == 0) printf("test_planner: all passed\n");
    return failures ? 1 : 0;
}
