/*
 * plan_files.c - plan files on the GPU side (plan_files.h).
 */
#include <stdlib.h>
#include <string.h>
#include "backends/gpu/plan_files.h"
#include "core/exec_cpu.h"   /* gpu_shared.h's executor, as host code sees it */
#include "backends/gpu/gpu_shared.h"

static int cmp_pair(const void *a, const void *b)
{
    const int *x = a, *y = b;
    return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* pairs (owner, peer), sorted and unique, into a list per owner. */
static dfccl_status_t peers_rows(int *pairs, size_t n, int size, int **at_p, int **list_p)
{
    int *at = calloc((size_t)size + 1, sizeof(int)), *list = malloc(sizeof(int) * (n ? n : 1));
    size_t m = 0;

    if (at == NULL || list == NULL) {
        free(at);
        free(list);
        return DFCCL_ERR_NO_MEMORY;
    }
    qsort(pairs, n, 2 * sizeof(int), cmp_pair);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && pairs[2 * i] == pairs[2 * i - 2] && pairs[2 * i + 1] == pairs[2 * i - 1])
            continue;
        list[m++] = pairs[2 * i + 1];
        at[pairs[2 * i] + 1]++;
    }
    for (int r = 0; r < size; r++) at[r + 1] += at[r];
    *at_p = at;
    *list_p = list;
    return DFCCL_OK;
}

dfccl_status_t gpu_plan_peers_make(const dfccl_plan_file_t *const *plans, int n, int size,
                                   gpu_plan_peers_t *pp)
{
    size_t npairs = 0, cap = 64;
    int *sends = malloc(2 * sizeof(int) * cap), *recvs = NULL, *row = malloc(sizeof(int) * (size_t)size);
    dfccl_status_t status = DFCCL_ERR_NO_MEMORY;

    memset(pp, 0, sizeof(*pp));
    if (sends == NULL || row == NULL) goto out;
    for (int i = 0; i < n; i++)
        for (int r = 0; r < size; r++) {
            int k = dfccl_plan_file_send_peers(plans[i], r, row, size);
            for (int j = 0; j < k; j++) {
                if (npairs == cap) {
                    int *more = realloc(sends, 4 * sizeof(int) * cap);
                    if (more == NULL) goto out;
                    sends = more;
                    cap *= 2;
                }
                sends[2 * npairs] = r;
                sends[2 * npairs + 1] = row[j];
                npairs++;
            }
        }
    recvs = malloc(2 * sizeof(int) * (npairs ? npairs : 1));
    if (recvs == NULL) goto out;
    for (size_t i = 0; i < npairs; i++) {
        recvs[2 * i] = sends[2 * i + 1];
        recvs[2 * i + 1] = sends[2 * i];
    }
    pp->size = size;
    status = peers_rows(sends, npairs, size, &pp->send_at, &pp->send);
    if (status == DFCCL_OK) status = peers_rows(recvs, npairs, size, &pp->recv_at, &pp->recv);
    if (status != DFCCL_OK) gpu_plan_peers_free(pp);
out:
    free(sends);
    free(recvs);
    free(row);
    return status;
}

void gpu_plan_peers_free(gpu_plan_peers_t *pp)
{
    free(pp->send_at);
    free(pp->send);
    free(pp->recv_at);
    free(pp->recv);
    memset(pp, 0, sizeof(*pp));
}

int gpu_plan_peers_recv_index(const gpu_plan_peers_t *pp, int rank, int peer)
{
    if (pp->recv_at == NULL || rank < 0 || rank >= pp->size) return -1;
    for (int i = pp->recv_at[rank]; i < pp->recv_at[rank + 1]; i++)
        if (pp->recv[i] == peer) return i - pp->recv_at[rank];
    return -1;
}

static size_t round8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* The program's peers onto conn's connections, in the image's steps and
 * further sends. */
static dfccl_status_t image_connect(const gpu_conn_plan_t *conn, const dfccl_plan_t *plan,
                                    dfccl_step_t *steps, uint8_t *more)
{
    for (uint32_t i = 0; i < plan->nsteps; i++) {
        dfccl_step_t *s = &steps[i];
        if (s->recv) {
            int c = gpu_conn_plan_recv_index(conn, plan->peers[i].recv);
            if (c < 0) return DFCCL_ERR_INVALID_PARAM;
            s->recv_conn = (uint8_t)c;
        }
        for (uint32_t k = 0; k < s->send; k++) {
            int peer = k == 0 ? plan->peers[i].send : plan->more_peers[s->more_at + k - 1];
            int c = gpu_conn_plan_send_index(conn, peer);
            if (c < 0) return DFCCL_ERR_INVALID_PARAM;
            if (k == 0) s->send_conn = (uint8_t)c;
            else more[s->more_at + k - 1] = (uint8_t)c;
        }
    }
    return DFCCL_OK;
}

dfccl_status_t gpu_plan_image_make(const dfccl_plan_file_t *pf, const gpu_conn_plan_t *conn,
                                   const dfccl_plan_call_t *call, int rank, size_t esize,
                                   uint64_t chunk_elems, gpu_plan_image_t *img)
{
    uint32_t cap = dfccl_plan_file_max_steps(pf);
    dfccl_plan_t plan = { .cap = cap, .more_cap = dfccl_plan_file_max_more(pf),
                          .deps_cap = dfccl_plan_file_max_deps(pf) };
    gpu_plan_image_t m = { 0 };
    dfccl_exec_t x;
    dfccl_exec_graph_t *g;
    dfccl_status_t status = DFCCL_ERR_NO_MEMORY;

    plan.steps = malloc(sizeof(dfccl_step_t) * (cap ? cap : 1));
    plan.peers = malloc(sizeof(dfccl_step_peers_t) * (cap ? cap : 1));
    plan.more_peers = malloc(sizeof(int32_t) * (plan.more_cap ? plan.more_cap : 1));
    plan.deps = malloc(sizeof(uint32_t) * (plan.deps_cap ? plan.deps_cap : 1));
    if (plan.steps == NULL || plan.peers == NULL || plan.more_peers == NULL || plan.deps == NULL)
        goto out;
    if ((status = dfccl_plan_file_build(pf, call, rank, &plan)) != DFCCL_OK) goto out;
    m.nsteps = plan.nsteps;
    m.more_at = (uint32_t)round8(sizeof(dfccl_step_t) * plan.nsteps);
    m.deps_at = m.more_at + (uint32_t)round8(plan.nmore);
    m.graph_at = m.deps_at + (uint32_t)round8(sizeof(uint32_t) * plan.ndeps);
    m.bytes = m.graph_at + DFCCL_GPU_GRAPH_HEAD +
              dfccl_exec_graph_bytes(plan.steps, plan.nsteps, (uint32_t)conn->nrecv,
                                     (uint32_t)conn->nsend);
    /* whole steps: the upload moves the image as steps (plan_pool.h) */
    m.bytes = (m.bytes + sizeof(dfccl_step_t) - 1) / sizeof(dfccl_step_t) * sizeof(dfccl_step_t);
    status = DFCCL_ERR_NO_MEMORY;
    if ((m.mem = calloc(1, m.bytes)) == NULL) goto out;
    memcpy(m.mem, plan.steps, sizeof(dfccl_step_t) * plan.nsteps);
    memcpy((char *)m.mem + m.deps_at, plan.deps, sizeof(uint32_t) * plan.ndeps);
    status = image_connect(conn, &plan, m.mem, (uint8_t *)m.mem + m.more_at);
    if (status != DFCCL_OK) {
        free(m.mem);
        goto out;
    }
    /* the executor's state of channel 0, which alone runs it */
    memset(&x, 0, sizeof(x));
    x.nsteps = m.nsteps;
    x.esize = esize;
    x.part = 0;
    x.nparts = 1;
    x.chunk_elems = chunk_elems;
    gpu_plan_image_point(&x, m.mem, m.more_at, m.deps_at, m.graph_at);
    g = x.graph;
    dfccl_exec_graph_init(&x, g, (char *)g + DFCCL_GPU_GRAPH_HEAD, (uint32_t)conn->nrecv,
                          (uint32_t)conn->nsend);
    *img = m;
out:
    free(plan.steps);
    free(plan.peers);
    free(plan.more_peers);
    free(plan.deps);
    return status;
}

void gpu_plan_image_free(gpu_plan_image_t *img)
{
    free(img->mem);
    img->mem = NULL;
}
