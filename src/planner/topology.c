/*
 * topology.c - reading a topology file (docs/planner.md): GPUs and switches,
 * directed links with bandwidth and latency; checked so that every planner
 * can rely on it (ids unique, links between known nodes, every GPU able to
 * reach every other).
 */
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "planner/planner.h"
#include "planner/util.h"

void pl_topology_free(pl_topology_t *t)
{
    if (t == NULL) return;
    free(t->nodes);
    free(t->links);
    free(t->gpu_node);
    free(t->out_start);
    free(t->out);
    free(t->in_start);
    free(t->in);
    free(t);
}

int pl_topology_node(const pl_topology_t *t, int id)
{
    /* Linear: topologies hold tens to a few thousand nodes, and lookups
     * happen only while reading files. */
    for (int n = 0; n < t->nnodes; n++)
        if (t->nodes[n].id == id) return n;
    return -1;
}

int pl_topology_link(const pl_topology_t *t, int src, int dst)
{
    for (int i = t->out_start[src]; i < t->out_start[src + 1]; i++)
        if (t->links[t->out[i]].dst == dst) return t->out[i];
    return -1;
}

static int by_id(const void *a, const void *b)
{
    const pl_node_t *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* Adjacency in both directions and GPU ranks, from nodes and links. Nodes
 * are kept sorted by id so that ranks, and every planner's tie-breaks,
 * follow the ids the file gives. */
static int index_topology(pl_topology_t *t)
{
    int n = t->nnodes, *fill;

    t->gpu_node = malloc(sizeof(int) * (size_t)(t->ngpus > 0 ? t->ngpus : 1));
    t->out_start = calloc((size_t)n + 1, sizeof(int));
    t->in_start = calloc((size_t)n + 1, sizeof(int));
    t->out = malloc(sizeof(int) * (size_t)(t->nlinks > 0 ? t->nlinks : 1));
    t->in = malloc(sizeof(int) * (size_t)(t->nlinks > 0 ? t->nlinks : 1));
    fill = calloc((size_t)n, sizeof(int));
    if (!t->gpu_node || !t->out_start || !t->in_start || !t->out || !t->in || !fill) {
        free(fill);
        return -1;
    }
    for (int i = 0, r = 0; i < n; i++) {
        t->nodes[i].rank = t->nodes[i].kind == PL_GPU ? r : -1;
        if (t->nodes[i].kind == PL_GPU) t->gpu_node[r++] = i;
    }
    for (int l = 0; l < t->nlinks; l++) {
        t->out_start[t->links[l].src + 1]++;
        t->in_start[t->links[l].dst + 1]++;
    }
    for (int i = 0; i < n; i++) {
        t->out_start[i + 1] += t->out_start[i];
        t->in_start[i + 1] += t->in_start[i];
    }
    for (int l = 0; l < t->nlinks; l++) {
        int s = t->links[l].src;
        t->out[t->out_start[s] + fill[s]++] = l;
    }
    memset(fill, 0, sizeof(int) * (size_t)n);
    for (int l = 0; l < t->nlinks; l++) {
        int d = t->links[l].dst;
        t->in[t->in_start[d] + fill[d]++] = l;
    }
    free(fill);
    return 0;
}

/* Every GPU reaches every other: otherwise no schedule exists, and the
 * planners' searches assume one does. Names a pair that fails. */
static int check_reachable(const pl_topology_t *t, char *why, size_t whylen)
{
    int *seen = malloc(sizeof(int) * (size_t)t->nnodes);
    int *queue = malloc(sizeof(int) * (size_t)t->nnodes);
    int rc = 0;

    if (seen == NULL || queue == NULL) {
        rc = pl_fail(why, whylen, "out of memory");
        goto out;
    }
    for (int r = 0; r < t->ngpus && rc == 0; r++) {
        int head = 0, tail = 0;
        memset(seen, 0, sizeof(int) * (size_t)t->nnodes);
        queue[tail++] = t->gpu_node[r];
        seen[t->gpu_node[r]] = 1;
        while (head < tail) {
            int u = queue[head++];
            for (int i = t->out_start[u]; i < t->out_start[u + 1]; i++) {
                int v = t->links[t->out[i]].dst;
                if (!seen[v]) {
                    seen[v] = 1;
                    queue[tail++] = v;
                }
            }
        }
        for (int q = 0; q < t->ngpus; q++)
            if (!seen[t->gpu_node[q]]) {
                rc = pl_fail(why, whylen, "GPU %d cannot reach GPU %d over the links",
                             t->nodes[t->gpu_node[r]].id, t->nodes[t->gpu_node[q]].id);
                break;
            }
    }
out:
    free(seen);
    free(queue);
    return rc;
}

static int get_int(json_object *o, const char *key, int *out)
{
    json_object *v;

    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
        return -1;
    int64_t x = json_object_get_int64(v);
    if (x < INT32_MIN || x > INT32_MAX) return -1;
    *out = (int)x;
    return 0;
}

/* A number (integer or not) under key; absent gives dflt when dflt >= 0. */
static int get_number(json_object *o, const char *key, double dflt, double *out)
{
    json_object *v;

    if (!json_object_object_get_ex(o, key, &v)) {
        *out = dflt;
        return dflt >= 0 ? 0 : -1;
    }
    if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
        return -1;
    *out = json_object_get_double(v);
    return 0;
}

int pl_topology_hosts(const pl_topology_t *t, int *host)
{
    for (int r = 0; r < t->ngpus; r++)
        if (t->nodes[t->gpu_node[r]].host[0] == '\0') return -1;
    for (int r = 0, n = 0; r < t->ngpus; r++) {
        host[r] = -1;
        for (int q = 0; q < r && host[r] < 0; q++)
            if (strcmp(t->nodes[t->gpu_node[q]].host, t->nodes[t->gpu_node[r]].host) == 0)
                host[r] = host[q];
        if (host[r] < 0) host[r] = n++;
    }
    return 0;
}

static int read_nodes(json_object *arr, pl_topology_t *t, char *why, size_t whylen)
{
    t->nnodes = (int)json_object_array_length(arr);
    t->nodes = calloc((size_t)(t->nnodes > 0 ? t->nnodes : 1), sizeof(*t->nodes));
    if (t->nodes == NULL) return pl_fail(why, whylen, "out of memory");
    for (int i = 0; i < t->nnodes; i++) {
        json_object *o = json_object_array_get_idx(arr, (size_t)i), *k;
        const char *kind;
        if (!json_object_is_type(o, json_type_object) || get_int(o, "id", &t->nodes[i].id) != 0)
            return pl_fail(why, whylen, "node %d: needs an integer \"id\"", i);
        if (!json_object_object_get_ex(o, "kind", &k) || !json_object_is_type(k, json_type_string))
            return pl_fail(why, whylen, "node %d: needs \"kind\": \"gpu\" or \"switch\"",
                           t->nodes[i].id);
        kind = json_object_get_string(k);
        if (strcmp(kind, "gpu") == 0) t->nodes[i].kind = PL_GPU;
        else if (strcmp(kind, "switch") == 0) t->nodes[i].kind = PL_SWITCH;
        else return pl_fail(why, whylen, "node %d: kind \"%s\" is neither gpu nor switch",
                            t->nodes[i].id, kind);
        if (t->nodes[i].kind == PL_GPU) t->ngpus++;
        t->nodes[i].copies = 1;
        if (json_object_object_get_ex(o, "copies", &k)) {
            if (!json_object_is_type(k, json_type_boolean) || t->nodes[i].kind != PL_SWITCH)
                return pl_fail(why, whylen, "node %d: \"copies\" must be true or false, on a"
                               " switch", t->nodes[i].id);
            t->nodes[i].copies = json_object_get_boolean(k);
        }
        if (json_object_object_get_ex(o, "host", &k)) {
            if (!json_object_is_type(k, json_type_string) || json_object_get_string_len(k) == 0 ||
                json_object_get_string_len(k) >= (int)sizeof(t->nodes[i].host))
                return pl_fail(why, whylen, "node %d: \"host\" must be a name of 1 to %zu"
                               " characters", t->nodes[i].id, sizeof(t->nodes[i].host) - 1);
            strcpy(t->nodes[i].host, json_object_get_string(k));
        }
    }
    qsort(t->nodes, (size_t)t->nnodes, sizeof(*t->nodes), by_id);
    for (int i = 1; i < t->nnodes; i++)
        if (t->nodes[i].id == t->nodes[i - 1].id)
            return pl_fail(why, whylen, "node id %d appears twice", t->nodes[i].id);
    if (t->ngpus < 2) return pl_fail(why, whylen, "a topology needs at least 2 GPUs");
    return 0;
}

static int read_links(json_object *arr, pl_topology_t *t, char *why, size_t whylen)
{
    t->nlinks = (int)json_object_array_length(arr);
    t->links = calloc((size_t)(t->nlinks > 0 ? t->nlinks : 1), sizeof(*t->links));
    if (t->links == NULL) return pl_fail(why, whylen, "out of memory");
    for (int i = 0; i < t->nlinks; i++) {
        json_object *o = json_object_array_get_idx(arr, (size_t)i);
        int s, d;
        double gbps, us;
        if (!json_object_is_type(o, json_type_object) || get_int(o, "src", &s) != 0 ||
            get_int(o, "dst", &d) != 0)
            return pl_fail(why, whylen, "link %d: needs integer \"src\" and \"dst\"", i);
        if (get_number(o, "bandwidth_GBps", -1, &gbps) != 0 || !(gbps > 0) || gbps > 1e9)
            return pl_fail(why, whylen, "link %d->%d: needs \"bandwidth_GBps\" above 0", s, d);
        if (get_number(o, "latency_us", 0, &us) != 0 || !(us >= 0) || us > 1e9)
            return pl_fail(why, whylen, "link %d->%d: \"latency_us\" must be 0 or more", s, d);
        t->links[i].src = pl_topology_node(t, s);
        t->links[i].dst = pl_topology_node(t, d);
        if (t->links[i].src < 0 || t->links[i].dst < 0)
            return pl_fail(why, whylen, "link %d->%d: names a node that is not listed", s, d);
        if (s == d) return pl_fail(why, whylen, "link %d->%d: a node linked to itself", s, d);
        t->links[i].bandwidth = gbps * 1e9;
        t->links[i].latency = us * 1e-6;
    }
    return 0;
}

/* Two links the same way between one pair would be one link to the model,
 * and flows name links by their ends: a file must merge them itself. */
static int check_parallel(const pl_topology_t *t, char *why, size_t whylen)
{
    for (int n = 0; n < t->nnodes; n++)
        for (int i = t->out_start[n]; i < t->out_start[n + 1]; i++)
            for (int j = i + 1; j < t->out_start[n + 1]; j++)
                if (t->links[t->out[i]].dst == t->links[t->out[j]].dst)
                    return pl_fail(why, whylen,
                                   "two links %d->%d: give one with their summed bandwidth",
                                   t->nodes[n].id, t->nodes[t->links[t->out[i]].dst].id);
    return 0;
}

int pl_topology_load(const char *path, pl_topology_t **out, char *why, size_t whylen)
{
    json_object *root = json_object_from_file(path), *nodes, *links;
    pl_topology_t *t;
    int rc = -1;

    *out = NULL;
    if (root == NULL)
        return pl_fail(why, whylen, "%s: cannot read it as JSON (%s)", path,
                       json_util_get_last_err() ? json_util_get_last_err() : "?");
    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        json_object_put(root);
        return pl_fail(why, whylen, "out of memory");
    }
    if (!json_object_object_get_ex(root, "nodes", &nodes) ||
        !json_object_is_type(nodes, json_type_array) ||
        !json_object_object_get_ex(root, "links", &links) ||
        !json_object_is_type(links, json_type_array)) {
        pl_fail(why, whylen, "needs a \"nodes\" list and a \"links\" list");
    } else if (read_nodes(nodes, t, why, whylen) == 0 && read_links(links, t, why, whylen) == 0) {
        if (index_topology(t) != 0) pl_fail(why, whylen, "out of memory");
        else if (check_parallel(t, why, whylen) == 0 && check_reachable(t, why, whylen) == 0)
            rc = 0;
    }
    json_object_put(root);
    if (rc != 0) {
        pl_topology_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

pl_topology_t *pl_topology_transpose(const pl_topology_t *t)
{
    pl_topology_t *r = calloc(1, sizeof(*r));

    if (r == NULL) return NULL;
    r->nnodes = t->nnodes;
    r->nlinks = t->nlinks;
    r->ngpus = t->ngpus;
    r->nodes = malloc(sizeof(*r->nodes) * (size_t)t->nnodes);
    r->links = malloc(sizeof(*r->links) * (size_t)(t->nlinks > 0 ? t->nlinks : 1));
    if (r->nodes == NULL || r->links == NULL) goto fail;
    memcpy(r->nodes, t->nodes, sizeof(*r->nodes) * (size_t)t->nnodes);
    /* Link l of the transpose is link l turned round, so that a flow on it
     * maps back to the same index. */
    for (int l = 0; l < t->nlinks; l++) {
        r->links[l] = t->links[l];
        r->links[l].src = t->links[l].dst;
        r->links[l].dst = t->links[l].src;
    }
    if (index_topology(r) != 0) goto fail;
    return r;
fail:
    pl_topology_free(r);
    return NULL;
}
