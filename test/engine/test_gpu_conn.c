/*
 * test_gpu_conn.c - the GPU side's connections (conn_plan.h) on simulated
 * communicators of 1 to 4,096 ranks in many node shapes, without a GPU:
 *   - every rank decides alike whether the communicator spans nodes and
 *     whether the all-peer paths (LL, one-shot, direct) run: only on one
 *     node of at most DFCCL_GPU_ALL_PEER_RANKS ranks;
 *   - the ring's neighbours agree (r's next has r as its previous) and form
 *     one cycle through every rank, entering each node once;
 *   - exactly the neighbours on other nodes go over the network, each link
 *     seen alike from both ends (its FIFOs and credit words too, where the
 *     network side lays them out), as are the connections of the
 *     hierarchical allreduce and of the latency algorithm (its partners on
 *     channel 0 alone at both ends, within the table's room);
 *   - a rank maps (CUDA IPC) every rank of its node where the all-peer
 *     paths run, else at most its next rank, and always the next rank whose
 *     FIFO it writes on its node;
 *   - its region does not grow with the communicator past the all-peer
 *     paths' size, and every plan the entry cannot hold belongs to such a
 *     communicator (plan_pool.h);
 *   - a dead rank fails the communicator on every survivor, watch period
 *     by watch period (peer_watch.h): processes watched on the node, the
 *     statuses in the regions mapped and the word the previous rank
 *     writes, the links across nodes; within one or two periods where the
 *     all-peer paths run, else within half the ring plus two;
 *   - the watch's comparison of posted calls (ident_check.h) waits for a
 *     peer that has not posted, finds a pair that differs and names both
 *     ranks, and skips what the boards no longer hold.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/exec_cpu.h"
#include "backends/gpu/conn_plan.h"
#include "backends/gpu/ident_check.h"
#include "backends/gpu/gpu_shared.h"
#include "core/plan.h"
#include "node_shapes.h"

#define FIFO_BYTES (1u << 20)
#define CHANNELS 16u

static int failures, cases;

static void fail(const char *what, int n, int shape, int rank)
{
    if (failures++ < 20) fprintf(stderr, "FAIL %s: %d ranks, shape %d, rank %d\n", what, n, shape, rank);
}

/* The topology of node[] into t (arrays of n each in scratch). */
static void topo_of(int n, const int *node, int *scratch, dfccl_topo_t *t)
{
    int *local = scratch, *order = scratch + n, *pos = scratch + 2 * n;

    *t = (dfccl_topo_t){ n, 1, node, local, order, pos, 1 };
    dfccl_topo_derive(n, node, local, order, pos, &t->nnodes, &t->uniform);
}

typedef struct span { size_t at, end; } span_t;

static int span_cmp(const void *a, const void *b)
{
    const span_t *x = a, *y = b;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* q's network side (gpu_conn_plan_net_at): every connection to another
 * node has its FIFOs, channel by channel, and (sending) its credit words;
 * none overlaps another or passes the side's end; and the peer finds the
 * other end of the link in its own layout. Strides that differ each way,
 * so that a mix-up shows. */
static void check_net_layout(int n, int shape, const dfccl_topo_t *t, const gpu_conn_plan_t *plan,
                             int q)
{
    static const gpu_net_strides_t st = { CHANNELS, 1000, 3000, 64 };
    const gpu_conn_plan_t *p = &plan[q];
    span_t spans[4 * GPU_CONN0_MAX];
    size_t bytes = gpu_conn_plan_net_at(p, t, q, &st, 0, -1, NULL);
    int ns = 0;

    for (int sending = 0; sending < 2; sending++) {
        const int *peers = sending ? p->send_peer : p->recv_peer;
        int count = sending ? p->nsend : p->nrecv, every = sending ? p->nsend_all : p->nrecv_all;
        for (int k = 0; k < count; k++) {
            int r = peers[k];
            size_t nch = k < every ? CHANNELS : 1, credit = SIZE_MAX, theirs_credit = SIZE_MAX;
            size_t at = gpu_conn_plan_net_at(p, t, q, &st, sending, r, &credit);
            size_t theirs = gpu_conn_plan_net_at(&plan[r], t, r, &st, !sending, q, &theirs_credit);
            if (t->node[r] == t->node[q]) {
                if (at != SIZE_MAX) fail("a FIFO on the node in the network side", n, shape, q);
                continue;
            }
            if (at == SIZE_MAX || theirs == SIZE_MAX) {
                fail("a link without its FIFO at one end", n, shape, q);
                continue;
            }
            if ((!sending && theirs_credit == SIZE_MAX) ||
                (!sending && theirs_credit + 64 > gpu_conn_plan_net_at(&plan[r], t, r, &st, 0, -1,
                                                                       NULL)))
                fail("the sender's credit word", n, shape, q);
            spans[ns++] = (span_t){ at, at + nch * (sending ? st.send : st.recv) };
            if (sending) spans[ns++] = (span_t){ credit, credit + nch * st.credit };
        }
    }
    qsort(spans, (size_t)ns, sizeof(spans[0]), span_cmp);
    for (int i = 0; i < ns; i++)
        if (spans[i].end > bytes || (i > 0 && spans[i].at < spans[i - 1].end)) {
            fail("the network side's layout overlaps or overflows", n, shape, q);
            break;
        }
}

/* The connections of q seen from both ends: each send of q is a receive of
 * its peer, the same number of connections on other nodes each way as the
 * network side counts them, and one FIFO in device memory at most each way. */
static void check_conns(int n, int shape, const dfccl_topo_t *t, const gpu_conn_plan_t *plan, int q,
                        unsigned wants)
{
    const gpu_conn_plan_t *p = &plan[q];
    const int *node = t->node;
    int local_in = 0, local_out = 0, net_in = 0, net_out = 0, partners[GPU_CONN0_MAX], np;

    if (p->nrecv > GPU_CONN0_MAX || p->nsend > GPU_CONN0_MAX || p->nrecv_all > GPU_CONN_MAX ||
        p->nsend_all > GPU_CONN_MAX || p->nrecv_all > p->nrecv || p->nsend_all > p->nsend)
        fail("connections", n, shape, q);
    if (n > 1 && (p->recv_peer[0] != p->ring_prev || p->send_peer[0] != p->ring_next))
        fail("connection 0 is not the ring's", n, shape, q);
    for (int k = 0; k < p->nsend; k++) {
        int r = p->send_peer[k];
        int kr = gpu_conn_plan_recv_index(&plan[r], q);
        if (kr < 0) fail("a send no one receives", n, shape, q);
        else if ((k < p->nsend_all) != (kr < plan[r].nrecv_all))
            fail("a connection on every channel at one end only", n, shape, q);
        if (node[r] == node[q]) {
            local_out++;
            if (r != p->node_next || !gpu_conn_plan_maps(p, node, q, r))
                fail("a FIFO on the node not mapped", n, shape, q);
        } else {
            net_out++;
            if (gpu_conn_plan_net_recv_index(&plan[r], t, r, q) < 0)
                fail("a link the peer does not number", n, shape, q);
        }
    }
    for (int k = 0; k < p->nrecv; k++) {
        int r = p->recv_peer[k];
        if (gpu_conn_plan_send_index(&plan[r], q) < 0) fail("a receive no one sends", n, shape, q);
        if (node[r] == node[q]) local_in += r == p->node_prev ? 1 : 100;
        else if (gpu_conn_plan_net_send_index(&plan[r], t, r, q) < 0) fail("link ids", n, shape, q);
        else net_in++;
    }
    if (local_in > 1 || local_out > 1) fail("more than one FIFO in device memory", n, shape, q);
    if (net_in > GPU_CONN_NET_MAX || net_out > GPU_CONN_NET_MAX) fail("links", n, shape, q);
    if (p->hier != ((wants & GPU_CONN_WANT_HIER) && t->nnodes > 1 && t->uniform && t->nnodes < n))
        fail("hier", n, shape, q);
    if (p->rd != ((wants & GPU_CONN_WANT_RD) && t->nnodes > 1 &&
                  t->nnodes <= GPU_CONN_RD_MAX_NODES))
        fail("rd", n, shape, q);
    /* the latency algorithm's partners: both ways, on other nodes */
    np = p->rd ? dfccl_plan_node_rd_peers(t, q, partners, GPU_CONN0_MAX) : 0;
    for (int i = 0; i < np; i++)
        if (node[partners[i]] == node[q] || gpu_conn_plan_send_index(p, partners[i]) < 0 ||
            gpu_conn_plan_recv_index(p, partners[i]) < 0)
            fail("a partner of the latency algorithm without its connections", n, shape, q);
    if (p->hier && (node[p->cross_next] == node[q] || t->local[p->cross_next] != t->local[q] ||
                    plan[p->cross_next].cross_prev != q || node[p->node_next] != node[q]))
        fail("hierarchical neighbours", n, shape, q);
}

static void check(int n, int shape, const int *node, gpu_conn_plan_t *plan, int *seen,
                  unsigned wants)
{
    int nnodes = 0, crossings = 0, r = 0, *scratch = malloc(sizeof(int) * 3 * (size_t)n);
    dfccl_topo_t t;

    cases++;
    if (scratch == NULL) { fail("memory", n, shape, -1); return; }
    topo_of(n, node, scratch, &t);
    for (int q = 0; q < n; q++) {
        int prev, next;
        if (node[q] + 1 > nnodes) nnodes = node[q] + 1;
        gpu_conn_plan_make(&t, q, wants, NULL, &plan[q]);
        /* the kernel's ring plan runs over the ring the plan names (n small:
         * this walks every rank) */
        if (n <= 257) {
            dfccl_plan_ring_peers(n, node, q, &prev, &next);
            if (prev != plan[q].ring_prev || next != plan[q].ring_next)
                fail("ring differs from the plan's", n, shape, q);
        }
    }
    for (int q = 0; q < n; q++) {
        check_conns(n, shape, &t, plan, q, wants);
        check_net_layout(n, shape, &t, plan, q);
    }
    for (int q = 0; q < n; q++) {
        const gpu_conn_plan_t *p = &plan[q];
        int mapped = 0, local = 0;

        if (p->spans != plan[0].spans || p->all_peers != plan[0].all_peers ||
            p->hier != plan[0].hier || p->rd != plan[0].rd)
            fail("ranks decide differently", n, shape, q);
        if (p->spans != (nnodes > 1)) fail("spans", n, shape, q);
        if (p->all_peers != (nnodes == 1 && n <= DFCCL_GPU_ALL_PEER_RANKS))
            fail("all-peer paths where they cannot run", n, shape, q);
        if (p->ring_next < 0 || p->ring_next >= n || plan[p->ring_next].ring_prev != q)
            fail("ring neighbours disagree", n, shape, q);
        if ((p->net_next >= 0) != (node[p->ring_next] != node[q]) ||
            (p->net_next >= 0 && plan[p->net_next].net_prev != q))
            fail("network link", n, shape, q);
        if (p->net_next >= 0) crossings++;
        for (int x = 0; x < n; x++) {
            local += x != q && node[x] == node[q];
            mapped += gpu_conn_plan_maps(p, node, q, x);
        }
        if (p->all_peers ? mapped != local : mapped > 1) fail("ranks mapped", n, shape, q);
        if (n > 1 && p->net_next < 0 && !gpu_conn_plan_maps(p, node, q, p->ring_next))
            fail("the next rank's FIFO is not mapped", n, shape, q);
        /* on its node it watches whom it waits for, and tells its next
         * rank (which maps nothing of it otherwise) */
        if (n > 1 && p->net_prev < 0 && !gpu_conn_plan_waits_on(p, node, q, p->ring_prev))
            fail("the previous rank is not watched", n, shape, q);
        if (p->node_prev >= 0 && !gpu_conn_plan_waits_on(p, node, q, p->node_prev))
            fail("the node's previous rank is not watched", n, shape, q);
        if (n > 2 && p->node_next >= 0 && p->node_next != q &&
            !gpu_conn_plan_tells(p, node, q, p->node_next))
            fail("the next rank is not told", n, shape, q);
    }
    free(scratch);
/* one cycle through all ranks */
    for (int q = 0; q < n; q++) seen[q] = 0;
    for (int k = 0; k < n; k++) {
        if (seen[r]++) { fail("ring cycle shorter than the communicator", n, shape, r); break; }
        r = plan[r].ring_next;
    }
    if (r != 0) fail("ring does not close", n, shape, r);
    if (crossings != (nnodes > 1 ? nnodes : 0)) fail("ring enters a node more than once", n, shape, -1);
}

/* The peers q's watch reads: every rank it may wait for or map (the
 * all-peer paths: its node; else its ring neighbours). */
static int watch_candidates(const gpu_conn_plan_t *p, int n, int q, int *c)
{
    int k = 0;

    if (p->all_peers) {
        for (int r = 0; r < n; r++) if (r != q) c[k++] = r;
    } else if (n > 1) {
        c[k++] = p->ring_prev;
        if (p->ring_next != p->ring_prev) c[k++] = p->ring_next;
        if (p->node_prev >= 0 && p->node_prev != p->ring_prev) c[k++] = p->node_prev;
        if (p->node_next >= 0 && p->node_next != p->ring_next && p->node_next != p->node_prev)
            c[k++] = p->node_next;
    }
    return k;
}

/* Rank `dead` is gone: rounds of the watch on every other rank until all
 * failed; -1 if some never does. failed[r]: the round r failed in (0: not). */
static int propagate(int n, const int *node, const gpu_conn_plan_t *plan, int dead, int *failed)
{
    int cand[DFCCL_GPU_ALL_PEER_RANKS + 4], left = n - 1;

    for (int r = 0; r < n; r++) failed[r] = 0;
    for (int round = 1; left > 0; round++) {
        int moved = 0;
        for (int q = 0; q < n; q++) {
            const gpu_conn_plan_t *p = &plan[q];
            int k = watch_candidates(p, n, q, cand), fail = 0;
            if (q == dead || failed[q]) continue;
            for (int i = 0; i < k && !fail; i++) {
                int r = cand[i];
                /* gone, and watched; or failed before this round, and q
                 * reads its status or is told by it */
                int before = r != dead && failed[r] && failed[r] < round;
                fail = (r == dead && gpu_conn_plan_waits_on(p, node, q, r)) ||
                       (before && gpu_conn_plan_maps(p, node, q, r)) ||
                       (before && gpu_conn_plan_tells(&plan[r], node, r, q));
            }
            /* links across nodes: a failed link, or what the peer tells */
            for (int i = 0; i < p->nrecv + p->nsend && !fail; i++) {
                int r = i < p->nrecv ? p->recv_peer[i] : p->send_peer[i - p->nrecv];
                fail = node[r] != node[q] && (r == dead || (failed[r] && failed[r] < round));
            }
            if (fail) {
                failed[q] = round;
                left--;
                moved = 1;
            }
        }
        if (!moved) return -1;
        if (left == 0) return round;
    }
    return 0;
}

static void check_failures(int n, int shape, const int *node, const gpu_conn_plan_t *plan,
                           int *failed)
{
    const int victims[3] = { 0, n / 2, n - 1 };

    if (n < 2) return;
    for (int v = 0; v < 3; v++) {
        int rounds = propagate(n, node, plan, victims[v], failed);
        int bound = plan[0].all_peers ? 2 : n / 2 + 2;
        cases++;
        if (rounds < 0) fail("a survivor never fails", n, shape, victims[v]);
        else if (rounds > bound) fail("failure travels too slowly", n, shape, victims[v]);
    }
}

static void post(dfccl_board_t *b, uint64_t seq, dfccl_op_t op)
{
    dfccl_coll_args_t a = { .type = DFCCL_COLL_ALLREDUCE, .count = 10, .dtype = DFCCL_FLOAT,
                            .op = op };
    dfccl_ident_t id;

    dfccl_ident_make(&id, &a, 3, DFCCL_OK);
    dfccl_board_post(b, seq, &id);
}

static void check_idents(void)
{
    dfccl_board_t *b = calloc(3, sizeof(*b));
    const dfccl_board_t *peers[2];
    int ranks[2] = { 1, 2 };
    uint64_t checked = 0;
    char why[400] = "";

    if (b == NULL) { fail("memory", 3, -1, -1); return; }
    for (int r = 0; r < 3; r++) dfccl_board_init(&b[r]);
    peers[0] = &b[1];
    peers[1] = &b[2];
    for (uint64_t s = 0; s < 10; s++) {
        post(&b[0], s, DFCCL_OP_SUM);
        if (s < 3) post(&b[1], s, DFCCL_OP_SUM);
        post(&b[2], s, s == 5 ? DFCCL_OP_MAX : DFCCL_OP_SUM);
    }
    cases++;
    if (gpu_ident_check(&b[0], 0, peers, ranks, 2, &checked, why, sizeof(why)) != 0 || checked != 3)
        fail("a peer that has not posted is waited for", 3, -1, (int)checked);
    for (uint64_t s = 3; s < 10; s++) post(&b[1], s, DFCCL_OP_SUM);
    cases++;
    if (gpu_ident_check(&b[0], 0, peers, ranks, 2, &checked, why, sizeof(why)) != 1 ||
        checked != 5 || strstr(why, "rank 2") == NULL || strstr(why, "rank 0") == NULL)
        fail("calls that differ are found and named", 3, -1, (int)checked);
    /* far behind: what the boards no longer hold is skipped, the rest matched */
    for (uint64_t s = 10; s < 10 + 3 * DFCCL_BOARD_IDENTS; s++)
        for (int r = 0; r < 3; r++) post(&b[r], s, DFCCL_OP_SUM);
    cases++;
    if (gpu_ident_check(&b[0], 0, peers, ranks, 2, &checked, why, sizeof(why)) != 0 ||
        checked != 10 + 3 * DFCCL_BOARD_IDENTS)
        fail("old entries skipped", 3, -1, (int)checked);
    /* a mirror of a peer on another node, whose messages skipped one
     * collective (its owner posted more than a board holds between two
     * looks): the gap is passed over, not waited for, and the rest matched */
    {
        uint64_t at = checked, gap = at + 2;
        for (uint64_t s = at; s < at + 5; s++) {
            post(&b[0], s, DFCCL_OP_SUM);
            post(&b[1], s, DFCCL_OP_SUM);
            if (s != gap) post(&b[2], s, DFCCL_OP_SUM);
        }
        dfccl_ident_t id;
        cases++;
        if (dfccl_board_ident(&b[2], gap, &id) != -1 ||
            gpu_ident_check(&b[0], 0, peers, ranks, 2, &checked, why, sizeof(why)) != 0 ||
            checked != at + 5)
            fail("a mirror's gap is passed over", 3, -1, (int)checked);
    }
    free(b);
}

int main(void)
{
    static const int sizes[] = { 1, 2, 7, 31, 32, 33, 40, 64, 100, 257, 1024, 4096 };
    size_t big = gpu_conn_region_bytes(DFCCL_GPU_ALL_PEER_RANKS + 1, CHANNELS, FIFO_BYTES, 256);

    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        int n = sizes[si];
        int *node = malloc(sizeof(int) * (size_t)n), *seen = malloc(sizeof(int) * (size_t)n);
        gpu_conn_plan_t *plan = malloc(sizeof(*plan) * (size_t)n);
        size_t region = gpu_conn_region_bytes(n, CHANNELS, FIFO_BYTES, 256);

        if (node == NULL || seen == NULL || plan == NULL) {
            fprintf(stderr, "test_gpu_conn: out of memory\n");
            return 1;
        }
        for (int shape = 0; shape < NODE_SHAPES; shape++) {
            node_shape(shape, n, node);
            /* the algorithm knob forces one algorithm across nodes besides the ring */
            check(n, shape, node, plan, seen, GPU_CONN_WANT_HIER);
            check_failures(n, shape, node, plan, seen);
            check(n, shape, node, plan, seen, GPU_CONN_WANT_RD);
            check_failures(n, shape, node, plan, seen);
            /* auto: both, each for its sizes */
            check(n, shape, node, plan, seen, GPU_CONN_WANT_HIER | GPU_CONN_WANT_RD);
            check_failures(n, shape, node, plan, seen);
        }
        cases++;
        if (n > DFCCL_GPU_ALL_PEER_RANKS ? region != big
                                         : region < CHANNELS * (size_t)FIFO_BYTES +
                                                    DFCCL_GPU_INBOX_BYTES(n))
            fail("region size", n, -1, -1);
        if ((dfccl_plan_max_steps(n) > DFCCL_GPU_INLINE_STEPS) != (n > DFCCL_GPU_ALL_PEER_RANKS))
            fail("entry holds the plan", n, -1, -1);
        free(node);
        free(seen);
        free(plan);
    }
    check_idents();
    printf("test_gpu_conn: %d passed, %d failed\n", cases - (failures > cases ? cases : failures),
           failures);
    return failures ? 1 : 0;
}
