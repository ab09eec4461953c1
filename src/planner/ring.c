/*
 * ring.c - the engine's built-in algorithms as schedules on the same model,
 * each chunk sent as soon as the links allow: the ring allgather (rank r
 * sends to rank r + 1 what it received in the step before) and the
 * hierarchical one. What the engine runs without a plan, so their modelled
 * finish is the yardstick a planned schedule is compared with.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include "planner/state.h"

/* The path of fewest epochs from node a to node b (Dijkstra): the links in
 * order into path, their number returned; -1 on failure. Neighbouring ranks
 * need not be linked directly (a ring over a switch goes through it). */
static int shortest_path(const pl_instance_t *in, int a, int b, int *path)
{
    const pl_topology_t *t = in->topo;
    int *dist = malloc(sizeof(int) * (size_t)t->nnodes);
    int *via = malloc(sizeof(int) * (size_t)t->nnodes);
    pl_heap_t h = { 0 };
    pl_heap_item_t top;
    int n = -1;

    if (dist == NULL || via == NULL) goto out;
    for (int i = 0; i < t->nnodes; i++) dist[i] = INT_MAX, via[i] = -1;
    dist[a] = 0;
    if (pl_heap_push(&h, 0, a) != 0) goto out;
    while (pl_heap_pop(&h, &top)) {
        int u = (int)top.val;
        if (top.key > dist[u]) continue;
        for (int i = t->out_start[u]; i < t->out_start[u + 1]; i++) {
            int l = t->out[i], v = t->links[l].dst, d = dist[u] + pl_hop(in, l);
            if (d < dist[v]) {
                dist[v] = d;
                via[v] = l;
                if (pl_heap_push(&h, d, v) != 0) goto out;
            }
        }
    }
    if (dist[b] == INT_MAX) goto out;
    n = 0;
    for (int v = b; v != a; v = t->links[via[v]].src) n++;
    for (int v = b, j = n; v != a; v = t->links[via[v]].src) path[--j] = via[v];
out:
    free(dist);
    free(via);
    pl_heap_free(&h);
    return n;
}

/* Sends chunk c along path (n links) from epoch `from` on, each hop as early
 * as the links allow; through a switch the next hop must leave in the epoch
 * the chunk gets there, so the first departure is delayed until that holds. */
static int send_along(pl_state_t *st, int c, const int *path, int n, int from)
{
    const pl_topology_t *t = st->in->topo;
    int *when = malloc(sizeof(int) * (size_t)n), rc = -1;

    if (when == NULL) return -1;
    for (int k0 = from;; k0++) {
        int ok = 1;
        when[0] = k0 = pl_state_link_next(st, path[0], k0);
        for (int j = 1; j < n && ok; j++) {
            int arr = when[j - 1] + pl_hop(st->in, path[j - 1]);
            if (t->nodes[t->links[path[j]].src].kind == PL_SWITCH) {
                when[j] = arr;
                ok = pl_state_link_free(st, path[j], arr) &&
                     pl_state_may_enter(st, c, t->links[path[j]].src, arr);
            } else {
                when[j] = pl_state_link_next(st, path[j], arr);
            }
        }
        if (ok) break;
    }
    rc = 0;
    for (int j = 0; j < n && rc == 0; j++) rc = pl_state_send(st, c, path[j], when[j]);
    free(when);
    return rc;
}

int pl_ring(const pl_instance_t *in, pl_schedule_t *s, char *why, size_t whylen)
{
    const pl_topology_t *t = in->topo;
    int n = t->ngpus, k = in->chunks_per_gpu, rc = 0;
    int *paths = malloc(sizeof(int) * (size_t)n * (size_t)t->nnodes);
    int *len = malloc(sizeof(int) * (size_t)n);
    pl_state_t st;

    if (paths == NULL || len == NULL || pl_state_init(&st, in, s) != 0) {
        free(paths);
        free(len);
        return pl_fail(why, whylen, "out of memory");
    }
    for (int r = 0; r < n && rc == 0; r++) {
        len[r] = shortest_path(in, t->gpu_node[r], t->gpu_node[(r + 1) % n],
                               &paths[(size_t)r * t->nnodes]);
        if (len[r] <= 0) rc = pl_fail(why, whylen, "ring: no path between neighbouring ranks");
    }
    /* Step by step as the ring algorithm goes: in step j rank r passes on
     * rank r - j's block, chunk by chunk. */
    for (int j = 0; j < n - 1 && rc == 0; j++)
        for (int i = 0; i < k && rc == 0; i++)
            for (int r = 0; r < n && rc == 0; r++) {
                int c = ((r - j + n) % n) * k + i;
                int from = pl_state_avail(&st, c, r);
                if (from == INT_MAX) {
                    rc = pl_fail(why, whylen, "ring: a chunk is forwarded before it is held "
                                 "(a bug)");
                    break;
                }
                if (send_along(&st, c, &paths[(size_t)r * t->nnodes], len[r], from) != 0)
                    rc = pl_fail(why, whylen, "out of memory");
            }
    if (rc == 0) {
        s->epochs = pl_state_finish(&st);
        snprintf(s->method, sizeof(s->method), "ring");
    }
    pl_state_fini(&st);
    free(paths);
    free(len);
    return rc;
}

/* Sends chunk c from rank a to rank b on the path of fewest epochs, as soon
 * as a holds it; path: room for nnodes links. */
static int hier_send(pl_state_t *st, int c, int a, int b, int *path, char *why, size_t whylen)
{
    const pl_topology_t *t = st->in->topo;
    int n = shortest_path(st->in, t->gpu_node[a], t->gpu_node[b], path);
    int from = pl_state_avail(st, c, a);

    if (n <= 0) return pl_fail(why, whylen, "hier: no path from rank %d to rank %d", a, b);
    if (from == INT_MAX) return pl_fail(why, whylen, "hier: a chunk is sent before it is held (a bug)");
    return send_along(st, c, path, n, from) == 0 ? 0 : pl_fail(why, whylen, "out of memory");
}

int pl_hier(const pl_instance_t *in, pl_schedule_t *s, char *why, size_t whylen)
{
    const pl_topology_t *t = in->topo;
    int n = t->ngpus, k = in->chunks_per_gpu, nhosts = 0, per, rc = 0;
    int *host = malloc(sizeof(int) * (size_t)n), *local = malloc(sizeof(int) * (size_t)n);
    int *at = malloc(sizeof(int) * (size_t)n), *path = malloc(sizeof(int) * (size_t)t->nnodes);
    pl_state_t st;

    if (host == NULL || local == NULL || at == NULL || path == NULL || pl_state_init(&st, in, s) != 0) {
        free(host), free(local), free(at), free(path);
        return pl_fail(why, whylen, "out of memory");
    }
    if (pl_topology_hosts(t, host) != 0) {
        rc = pl_fail(why, whylen, "hier: every GPU must name its host");
        goto out;
    }
    for (int r = 0; r < n; r++) {
        local[r] = 0;
        for (int q = 0; q < r; q++) local[r] += host[q] == host[r];
        if (host[r] + 1 > nhosts) nhosts = host[r] + 1;
    }
    per = n / nhosts;
    for (int r = 0; r < n && rc == 0; r++)
        if (local[r] >= per || n % nhosts != 0)
            rc = pl_fail(why, whylen, "hier: the hosts must hold equal numbers of GPUs");
    for (int r = 0; r < n && rc == 0; r++) at[host[r] * per + local[r]] = r;
    /* across hosts: the GPUs of one local index pass their chunks round a
     * ring of the hosts; in step j host h sends host h - j's chunks on */
    for (int j = 0; j < nhosts - 1 && rc == 0; j++)
        for (int i = 0; i < k && rc == 0; i++)
            for (int h = 0; h < nhosts && rc == 0; h++)
                for (int l = 0; l < per && rc == 0; l++) {
                    int owner = at[((h - j + nhosts) % nhosts) * per + l];
                    rc = hier_send(&st, owner * k + i, at[h * per + l],
                                   at[((h + 1) % nhosts) * per + l], path, why, whylen);
                }
    /* inside each host: every GPU sends what it holds to the others */
    for (int r = 0; r < n && rc == 0; r++)
        for (int g = 0; g < n && rc == 0; g++) {
            if (local[g] != local[r]) continue;   /* r holds the chunks of its local index */
            for (int i = 0; i < k && rc == 0; i++)
                for (int l = 0; l < per && rc == 0; l++)
                    if (l != local[r])
                        rc = hier_send(&st, g * k + i, r, at[host[r] * per + l], path, why,
                                       whylen);
        }
    if (rc == 0) {
        s->epochs = pl_state_finish(&st);
        snprintf(s->method, sizeof(s->method), "hier");
    }
out:
    pl_state_fini(&st);
    free(host), free(local), free(at), free(path);
    return rc;
}
