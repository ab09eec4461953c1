/* sim_plans.c - plans on simulated ranks over per-connection FIFOs. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/host/exec_host.h"
#include "sim_plans.h"
#include "sim_ranks.h"

#define MAX_RANKS SIM_PLANS_MAX_RANKS
#define SLOT_BYTES 64   /* tiny slots: many slices, many rounds, many preemption points */

static int lines_left = 30;

void sim_plan_quiet_after(int max_lines)
{
    lines_left = max_lines;
}

/* One call's ranks: programs, buffers, connections, executors. */
typedef struct sim {
    const sim_plan_source_t *src;
    const sim_plan_case_t   *c;
    size_t               counts[MAX_RANKS], displ[MAX_RANKS + 1], in_elems, out_elems, esize;
    dfccl_step_t        *steps[MAX_RANKS];
    dfccl_step_peers_t  *peers[MAX_RANKS];
    int32_t             *more_peers[MAX_RANKS];
    uint8_t             *more_conns[MAX_RANKS];
    uint32_t            *deps[MAX_RANKS];
    dfccl_exec_graph_t   graph[MAX_RANKS];
    void                *graph_mem[MAX_RANKS];
    dfccl_plan_t         plan[MAX_RANKS];
    unsigned char       *send[MAX_RANKS], *recv[MAX_RANKS];
    int                  out_peer[MAX_RANKS][MAX_RANKS], nout[MAX_RANKS];
    int                  in_peer[MAX_RANKS][MAX_RANKS], nin[MAX_RANKS];
    dfccl_fifo_ctrl_t    ctrl[MAX_RANKS][MAX_RANKS];   /* [sender][receiver] */
    unsigned char       *slots;
    dfccl_fifo_t         send_fifo[MAX_RANKS][MAX_RANKS], recv_fifo[MAX_RANKS][MAX_RANKS];
    dfccl_exec_t         exec[MAX_RANKS];
} sim_t;

static void say(const sim_t *s, const char *what, int rank, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void say(const sim_t *s, const char *what, int rank, const char *fmt, ...)
{
    const sim_plan_case_t *c = s->c;
    va_list ap;

    if (lines_left <= 0) return;
    if (--lines_left == 0) {
        fprintf(stderr, "FAIL ... (further failures not shown)\n");
        return;
    }
    fprintf(stderr, "FAIL %s: %s: %s n=%d count=%zu in_place=%d %s %s nslots=%u rank %d: ",
            s->src->label, what, dfccl_coll_type_name(c->type), c->n, c->count, c->in_place,
            dfccl_dtype_name(c->dtype), dfccl_op_name(c->op), c->nslots, rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static int index_of(const int *list, int n, int v)
{
    for (int i = 0; i < n; i++)
        if (list[i] == v) return i;
    return -1;
}

/* Connections: FIFO (a, b) lives at b; b numbers its senders in rank order. */
static int connect_ranks(sim_t *s)
{
    int n = s->c->n;

    for (int a = 0; a < n; a++) {
        s->nout[a] = s->src->send_peers(s->src->arg, a, s->out_peer[a], MAX_RANKS);
        if (s->nout[a] < 0 || s->nout[a] > n) return -1;
    }
    for (int b = 0; b < n; b++) {
        s->nin[b] = 0;
        for (int a = 0; a < n; a++)
            if (index_of(s->out_peer[a], s->nout[a], b) >= 0) s->in_peer[b][s->nin[b]++] = a;
    }
    s->slots = calloc((size_t)n * (size_t)n * s->c->nslots, SLOT_BYTES);
    if (s->slots == NULL) return -1;
    memset(s->ctrl, 0, sizeof(s->ctrl));
    for (int a = 0; a < n; a++)
        for (int k = 0; k < s->nout[a]; k++) {
            int b = s->out_peer[a][k], j = index_of(s->in_peer[b], s->nin[b], a);
            char *slots = (char *)s->slots + ((size_t)a * (size_t)n + (size_t)b) * s->c->nslots * SLOT_BYTES;
            s->send_fifo[a][k] = (dfccl_fifo_t){ &s->ctrl[a][b], slots, SLOT_BYTES, s->c->nslots, b, 0, NULL };
            s->recv_fifo[b][j] = (dfccl_fifo_t){ &s->ctrl[a][b], slots, SLOT_BYTES, s->c->nslots, a, 0, NULL };
        }
    return 0;
}

/* Each step's peers onto this rank's connection indices. */
static int map_peers(sim_t *s, int r)
{
    for (uint32_t i = 0; i < s->plan[r].nsteps; i++) {
        dfccl_step_t *st = &s->steps[r][i];
        const dfccl_step_peers_t *p = &s->peers[r][i];
        int k;
        if (st->recv) {
            if ((k = index_of(s->in_peer[r], s->nin[r], p->recv)) < 0) {
                say(s, "plan", r, "step %u receives from rank %d without a connection", i, p->recv);
                return -1;
            }
            st->recv_conn = (uint8_t)k;
        }
        for (int j = 0; j < st->send; j++) {
            int peer = j == 0 ? p->send : s->more_peers[r][st->more_at + j - 1];
            if ((k = index_of(s->out_peer[r], s->nout[r], peer)) < 0) {
                say(s, "plan", r, "step %u sends to rank %d without a connection", i, peer);
                return -1;
            }
            if (j == 0) st->send_conn = (uint8_t)k;
            else s->more_conns[r][st->more_at + j - 1] = (uint8_t)k;
        }
    }
    return 0;
}

static void fill_buffers(sim_t *s, int r)
{
    const sim_plan_case_t *c = s->c;
    size_t at = c->type == DFCCL_COLL_ALLGATHER ? (size_t)r * c->count : 0;

    memset(s->recv[r], 0xA5, s->out_elems * s->esize);   /* poison */
    if (c->type == DFCCL_COLL_ALLGATHER)
        sim_fill_input(s->send[r], c->count, c->dtype, c->op, r, at);
    else
        sim_fill_input(s->send[r], s->in_elems, c->dtype, c->op, r, 0);
    if (c->in_place) memcpy(s->recv[r] + at * s->esize, s->send[r], s->in_elems * s->esize);
}

static int init_exec(sim_t *s, int r)
{
    dfccl_exec_t *x = &s->exec[r];

    memset(x, 0, sizeof(*x));
    x->steps = s->steps[r];
    x->nsteps = s->plan[r].nsteps;
    x->sendbuf = s->c->in_place ? NULL : (char *)s->send[r];
    x->recvbuf = (char *)s->recv[r];
    x->esize = s->esize;
    x->slice_elems = SLOT_BYTES / s->esize;
    x->chunk_elems = dfccl_plan_chunk_elems(SLOT_BYTES, s->c->nslots, s->esize);
    x->dtype = s->c->dtype;
    x->op = s->c->op;
    x->recv_fifo = s->recv_fifo[r];
    x->send_fifo = s->send_fifo[r];
    x->more_conns = s->more_conns[r];
    x->deps = s->deps[r];
    s->graph_mem[r] = malloc(dfccl_exec_graph_bytes(x->steps, x->nsteps, (uint32_t)s->nin[r],
                                                    (uint32_t)s->nout[r]));
    if (s->graph_mem[r] == NULL) return -1;
    dfccl_exec_graph_init(x, &s->graph[r], s->graph_mem[r], (uint32_t)s->nin[r],
                          (uint32_t)s->nout[r]);
    return 0;
}

/* Random interleaving, one slice per turn; a deadlock is a sweep in which
 * no rank moves. */
static int run_ranks(sim_t *s)
{
    int n = s->c->n, stuck = 0;

    srand(s->c->seed);
    for (;;) {
        int done = 0, r = rand() % n, moved = 0;
        for (int q = 0; q < n; q++) done += dfccl_graph_done(&s->exec[q]);
        if (done == n) return 0;
        if (dfccl_graph_done(&s->exec[r])) continue;
        if (dfccl_exec_host_advance(&s->exec[r], 1) != DFCCL_EXEC_BLOCKED) {
            stuck = 0;
            continue;
        }
        if (++stuck < 4 * n) continue;
        for (int q = 0; q < n; q++)
            if (!dfccl_graph_done(&s->exec[q]) &&
                dfccl_exec_host_advance(&s->exec[q], 1) != DFCCL_EXEC_BLOCKED)
                moved = 1;
        if (moved) {
            stuck = 0;
            continue;
        }
        for (int q = 0; q < n; q++) {
            const dfccl_exec_t *x = &s->exec[q];
            if (!dfccl_graph_done(&s->exec[q]))
                say(s, "deadlock", q, "step %u round %llu waits to %s rank %d", x->step,
                    (unsigned long long)x->round,
                    x->waiting == DFCCL_WAIT_RECV ? "receive from" : "send to", x->wait_peer);
        }
        return -1;
    }
}

static void expected(const sim_t *s, size_t index, unsigned char *out)
{
    const sim_plan_case_t *c = s->c;

    if (c->type == DFCCL_COLL_ALLGATHER)
        sim_fill_input(out, 1, c->dtype, c->op, (int)(index / c->count), index);
    else
        sim_expected(out, c->dtype, c->op, c->n, index);
}

static int check_outputs(sim_t *s, unsigned long *checked)
{
    const sim_plan_case_t *c = s->c;
    unsigned char want[8];
    int wrong = 0;

    for (int r = 0; r < c->n; r++) {
        size_t lo = 0, len = s->out_elems;
        if (c->type == DFCCL_COLL_REDUCE_SCATTER) {
            lo = s->displ[r];
            len = s->counts[r];
        }
        for (size_t k = 0; k < len; k++) {
            expected(s, lo + k, want);
            ++*checked;
            if (memcmp(s->recv[r] + k * s->esize, want, s->esize) != 0) {
                say(s, "value", r, "element %zu of %zu is wrong", lo + k, s->out_elems);
                wrong = 1;
                break;
            }
        }
        /* MPI's in-place reduce-scatter leaves the rest as the caller wrote it */
        for (size_t k = len; c->type == DFCCL_COLL_REDUCE_SCATTER && c->in_place && k < s->displ[c->n]; k++) {
            ++*checked;
            if (memcmp(s->recv[r] + k * s->esize, s->send[r] + k * s->esize, s->esize) != 0) {
                say(s, "input kept", r, "element %zu was overwritten", k);
                wrong = 1;
                break;
            }
        }
    }
    return wrong;
}

static sim_plan_result_t run_sim(sim_t *s, unsigned long *checked)
{
    const sim_plan_case_t *c = s->c;
    dfccl_plan_call_t call = { c->type, c->in_place, c->count,
                               c->type == DFCCL_COLL_REDUCE_SCATTER ? s->counts : NULL };

    for (int r = 0; r < c->n; r++) {
        dfccl_status_t st;
        s->steps[r] = calloc(s->src->max_steps, sizeof(dfccl_step_t));
        s->peers[r] = calloc(s->src->max_steps, sizeof(dfccl_step_peers_t));
        s->send[r] = malloc(s->in_elems * s->esize + 1);
        s->recv[r] = malloc(s->out_elems * s->esize + 1);
        s->more_peers[r] = calloc(s->src->max_more + 1, sizeof(int32_t));
        s->more_conns[r] = calloc(s->src->max_more + 1, 1);
        s->deps[r] = calloc(s->src->max_deps + 1, sizeof(uint32_t));
        if (!s->steps[r] || !s->peers[r] || !s->send[r] || !s->recv[r] || !s->more_peers[r] ||
            !s->more_conns[r] || !s->deps[r])
            return SIM_PLAN_WRONG;
        s->plan[r] = (dfccl_plan_t){ .steps = s->steps[r], .peers = s->peers[r],
                                     .cap = s->src->max_steps, .more_peers = s->more_peers[r],
                                     .more_cap = s->src->max_more, .deps = s->deps[r],
                                     .deps_cap = s->src->max_deps };
        st = s->src->build(s->src->arg, &call, r, &s->plan[r]);
        if (st == DFCCL_ERR_UNSUPPORTED) return SIM_PLAN_UNSUPPORTED;
        if (st != DFCCL_OK) {
            say(s, "plan", r, "building the program fails: %s", dfccl_status_string(st));
            return SIM_PLAN_WRONG;
        }
    }
    if (connect_ranks(s) != 0) {
        say(s, "plan", 0, "no connections");
        return SIM_PLAN_WRONG;
    }
    for (int r = 0; r < c->n; r++) {
        if (map_peers(s, r) != 0) return SIM_PLAN_WRONG;
        fill_buffers(s, r);
        if (init_exec(s, r) != 0) return SIM_PLAN_WRONG;
    }
    if (run_ranks(s) != 0) return SIM_PLAN_WRONG;
    return check_outputs(s, checked) ? SIM_PLAN_WRONG : SIM_PLAN_RIGHT;
}

sim_plan_result_t sim_plan_run(const sim_plan_source_t *src, const sim_plan_case_t *c,
                               unsigned long *checked)
{
    sim_t *s = calloc(1, sizeof(*s));
    sim_plan_result_t result;

    if (s == NULL || c->n < 1 || c->n > MAX_RANKS) {
        free(s);
        return SIM_PLAN_WRONG;
    }
    s->src = src;
    s->c = c;
    s->esize = dfccl_dtype_size(c->dtype);
    for (int r = 0; r < c->n; r++) {
        s->counts[r] = c->type != DFCCL_COLL_REDUCE_SCATTER || c->counts == NULL ? c->count : c->counts[r];
        s->displ[r + 1] = s->displ[r] + s->counts[r];
    }
    s->in_elems = c->type == DFCCL_COLL_REDUCE_SCATTER ? s->displ[c->n] : c->count;
    s->out_elems = c->type == DFCCL_COLL_ALLREDUCE ? c->count
                 : c->type == DFCCL_COLL_ALLGATHER ? c->count * (size_t)c->n : s->displ[c->n];
    result = run_sim(s, checked);
    for (int r = 0; r < c->n; r++) {
        free(s->steps[r]);
        free(s->peers[r]);
        free(s->more_peers[r]);
        free(s->more_conns[r]);
        free(s->deps[r]);
        free(s->graph_mem[r]);
        free(s->send[r]);
        free(s->recv[r]);
    }
    free(s->slots);
    free(s);
    return result;
}
