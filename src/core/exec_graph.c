/* exec_graph.c - lays out and fills the dependency-driven executor's state
 * (exec_graph.h) on the host. */
#include <string.h>
#include "core/exec_cpu.h"
#include "core/exec_graph.h"

static uint32_t count_users(const dfccl_step_t *steps, uint32_t nsteps, uint32_t *nloose)
{
    uint32_t n = 0, loose = 0;

    for (uint32_t i = 0; i < nsteps; i++) {
        n += steps[i].recv + steps[i].send;
        loose += !steps[i].recv && !steps[i].send;
    }
    if (nloose != NULL) *nloose = loose;
    return n;
}

size_t dfccl_exec_graph_bytes(const dfccl_step_t *steps, uint32_t nsteps, uint32_t nrecv,
                              uint32_t nsend)
{
    dfccl_exec_graph_t g = { 0 };

    g.nlines = nrecv + nsend;
    g.nusers = count_users(steps, nsteps, &g.nloose);
    return dfccl_exec_graph_layout(&g, NULL, nsteps);
}

void dfccl_exec_graph_rebase(dfccl_exec_graph_t *g, void *mem, uint32_t nsteps)
{
    dfccl_exec_graph_layout(g, mem, nsteps);
}

void dfccl_exec_graph_init(dfccl_exec_t *x, dfccl_exec_graph_t *g, void *mem, uint32_t nrecv,
                           uint32_t nsend)
{
    const dfccl_step_t *steps = x->steps;
    uint32_t n = x->nsteps, at = 0;

    memset(g, 0, sizeof(*g));
    g->nrecv = nrecv;
    g->nlines = nrecv + nsend;
    g->nusers = count_users(steps, n, &g->nloose);
    memset(mem, 0, dfccl_exec_graph_layout(g, mem, n));
    x->graph = g;
    x->nrounds = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t off, len = dfccl_exec_part(x, &steps[i], &off);
        g->rounds[i] = (len + x->chunk_elems - 1) / x->chunk_elems;
        if (g->rounds[i] > x->nrounds) x->nrounds = g->rounds[i];
        g->left += g->rounds[i] > 0;
    }
    /* lines: count each connection's steps, then list them in program order */
    for (uint32_t i = 0; i < n; i++) {
        if (steps[i].recv) g->lines[steps[i].recv_conn].n++;
        for (uint32_t k = 0; k < steps[i].send; k++)
            g->lines[nrecv + dfccl_exec_send_conn(x, &steps[i], k)].n++;
    }
    for (uint32_t l = 0; l < g->nlines; l++) {
        g->lines[l].first = at;
        at += g->lines[l].n;
        g->lines[l].n = 0;
    }
    at = 0;
    for (uint32_t i = 0; i < n; i++) {
        dfccl_exec_line_t *L;
        if (steps[i].recv) {
            L = &g->lines[steps[i].recv_conn];
            g->users[L->first + L->n++] = i;
        }
        for (uint32_t k = 0; k < steps[i].send; k++) {
            L = &g->lines[nrecv + dfccl_exec_send_conn(x, &steps[i], k)];
            g->users[L->first + L->n++] = i;
            if (L->rounds < g->rounds[i]) L->rounds = g->rounds[i];
        }
        if (steps[i].recv && g->lines[steps[i].recv_conn].rounds < g->rounds[i])
            g->lines[steps[i].recv_conn].rounds = g->rounds[i];
        if (!steps[i].recv && !steps[i].send) g->loose[at++] = i;
    }
    for (uint32_t l = 0; l < g->nlines; l++) dfccl_graph_line_settle(g, &g->lines[l]);
    x->step = 0;
    x->round = 0;
    x->offset = 0;
}
