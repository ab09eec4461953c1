/*
 * schedule_json.c - schedule files (docs/planner.md): written one flow a line
 * so that they diff and grep well, read back with json-c and checked for
 * form (names of nodes, links and chunks) before the checker replays them.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "planner/planner.h"
#include "planner/util.h"

static const char *phase_name(int phase)
{
    return phase == PL_PHASE_REDUCE ? "reduce" : "gather";
}

int pl_schedule_write(const pl_schedule_t *s, const pl_topology_t *t, const char *path,
                      char *why, size_t whylen)
{
    FILE *f = fopen(path, "w");
    double epoch_us = s->epoch_s * 1e6, finish_us = s->epochs * epoch_us;

    if (f == NULL) return pl_fail(why, whylen, "%s: %s", path, strerror(errno));
    /* %.17g: numbers read back bit for bit, so the checker's epochs agree. */
    fprintf(f, "{\"collective\":\"%s\",\"output_bytes\":%llu,\"chunk_bytes\":%.17g,"
               "\"chunks_per_gpu\":%d,\"epoch_us\":%.17g,\"epochs\":%d,\"finish_us\":%.17g,"
               "\"algbw_GBps\":%.17g,\"solver_s\":%.6f,\"method\":\"%s\",\"start_epochs\":%d,"
               "\n\"flows\":[",
            pl_collective_name(s->collective), (unsigned long long)s->output_bytes,
            s->chunk_bytes, s->chunks_per_gpu, epoch_us, s->epochs, finish_us,
            finish_us > 0 ? (double)s->output_bytes / finish_us / 1e3 : 0.0, s->solver_s,
            s->method, s->start_epochs);
    for (size_t i = 0; i < s->nflows; i++) {
        const pl_flow_t *fl = &s->flows[i];
        const pl_link_t *k = &t->links[fl->link];
        fprintf(f, "%s\n{\"chunk\":[%d,%d],\"src\":%d,\"dst\":%d,\"epoch\":%d", i ? "," : "",
                t->nodes[t->gpu_node[fl->chunk / s->chunks_per_gpu]].id,
                fl->chunk % s->chunks_per_gpu, t->nodes[k->src].id, t->nodes[k->dst].id,
                fl->epoch);
        if (fl->phase != PL_PHASE_ONLY) fprintf(f, ",\"phase\":\"%s\"", phase_name(fl->phase));
        fputc('}', f);
    }
    fprintf(f, "]}\n");
    if (ferror(f) | (fclose(f) != 0)) return pl_fail(why, whylen, "%s: write failed", path);
    return 0;
}

static int get(json_object *o, const char *key, json_type type, json_object **v)
{
    if (!json_object_object_get_ex(o, key, v)) return -1;
    if (type == json_type_double)
        return json_object_is_type(*v, json_type_double) || json_object_is_type(*v, json_type_int)
                   ? 0 : -1;
    return json_object_is_type(*v, type) ? 0 : -1;
}

static int int_at(json_object *o, const char *key, int *out)
{
    json_object *v;

    if (get(o, key, json_type_int, &v) != 0) return -1;
    int64_t x = json_object_get_int64(v);
    if (x < INT32_MIN || x > INT32_MAX) return -1;
    *out = (int)x;
    return 0;
}

static int read_flow(json_object *o, size_t i, const pl_topology_t *t, pl_schedule_t *s,
                     char *why, size_t whylen)
{
    json_object *chunk, *v;
    int owner, index, src, dst, epoch, phase = PL_PHASE_ONLY, u, w, link;

    if (!json_object_is_type(o, json_type_object) ||
        get(o, "chunk", json_type_array, &chunk) != 0 ||
        json_object_array_length(chunk) != 2 ||
        !json_object_is_type(json_object_array_get_idx(chunk, 0), json_type_int) ||
        !json_object_is_type(json_object_array_get_idx(chunk, 1), json_type_int) ||
        int_at(o, "src", &src) != 0 || int_at(o, "dst", &dst) != 0 ||
        int_at(o, "epoch", &epoch) != 0)
        return pl_fail(why, whylen, "flow %zu: needs \"chunk\": [GPU, INDEX], \"src\", \"dst\" "
                       "and \"epoch\", all integers", i);
    owner = json_object_get_int(json_object_array_get_idx(chunk, 0));
    index = json_object_get_int(json_object_array_get_idx(chunk, 1));
    u = pl_topology_node(t, owner);
    if (u < 0 || t->nodes[u].kind != PL_GPU)
        return pl_fail(why, whylen, "flow %zu: chunk owner %d is not a GPU of the topology", i,
                       owner);
    if (index < 0 || index >= s->chunks_per_gpu)
        return pl_fail(why, whylen, "flow %zu: chunk index %d is not below %d chunks a GPU", i,
                       index, s->chunks_per_gpu);
    u = pl_topology_node(t, src);
    w = pl_topology_node(t, dst);
    link = u >= 0 && w >= 0 ? pl_topology_link(t, u, w) : -1;
    if (link < 0)
        return pl_fail(why, whylen, "flow %zu: no link %d->%d in the topology", i, src, dst);
    if (epoch < 0) return pl_fail(why, whylen, "flow %zu: epoch %d is negative", i, epoch);
    if (json_object_object_get_ex(o, "phase", &v)) {
        const char *p = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
        if (s->collective != PL_ALLREDUCE)
            return pl_fail(why, whylen, "flow %zu: only allreduce flows have a phase", i);
        if (strcmp(p, "reduce") == 0) phase = PL_PHASE_REDUCE;
        else if (strcmp(p, "gather") == 0) phase = PL_PHASE_GATHER;
        else return pl_fail(why, whylen, "flow %zu: phase must be \"reduce\" or \"gather\"", i);
    } else if (s->collective == PL_ALLREDUCE) {
        return pl_fail(why, whylen, "flow %zu: allreduce flows need a \"phase\"", i);
    }
    int rank = t->nodes[pl_topology_node(t, owner)].rank;
    return pl_schedule_add(s, rank * s->chunks_per_gpu + index, link, epoch, phase) == 0
               ? 0 : pl_fail(why, whylen, "out of memory");
}

static int read_header(json_object *root, const pl_topology_t *t, pl_schedule_t *s, char *why,
                       size_t whylen)
{
    json_object *v;
    double bytes, epoch_us;

    if (get(root, "collective", json_type_string, &v) != 0 ||
        pl_collective_parse(json_object_get_string(v), &s->collective) != 0)
        return pl_fail(why, whylen, "needs \"collective\": allgather, reducescatter or allreduce");
    if (get(root, "output_bytes", json_type_int, &v) != 0 || json_object_get_int64(v) < 1)
        return pl_fail(why, whylen, "needs \"output_bytes\", an integer above 0");
    s->output_bytes = (uint64_t)json_object_get_int64(v);
    if (get(root, "chunk_bytes", json_type_double, &v) != 0 ||
        !((s->chunk_bytes = json_object_get_double(v)) > 0))
        return pl_fail(why, whylen, "needs \"chunk_bytes\" above 0");
    if (get(root, "epoch_us", json_type_double, &v) != 0 ||
        !((epoch_us = json_object_get_double(v)) > 0))
        return pl_fail(why, whylen, "needs \"epoch_us\" above 0");
    s->epoch_s = epoch_us * 1e-6;
    if (json_object_object_get_ex(root, "chunks_per_gpu", &v)) {
        if (int_at(root, "chunks_per_gpu", &s->chunks_per_gpu) != 0 || s->chunks_per_gpu < 1)
            return pl_fail(why, whylen, "\"chunks_per_gpu\" must be an integer above 0");
    } else {
        /* Written by hand: the chunk size says how many there are. */
        bytes = (double)s->output_bytes / t->ngpus / s->chunk_bytes;
        s->chunks_per_gpu = bytes < 1 ? 1 : (int)ceil(bytes - 1e-9);
    }
    s->epochs = -1;
    if (json_object_object_get_ex(root, "epochs", &v) && int_at(root, "epochs", &s->epochs) != 0)
        return pl_fail(why, whylen, "\"epochs\" must be an integer");
    if (json_object_object_get_ex(root, "method", &v) && json_object_is_type(v, json_type_string))
        snprintf(s->method, sizeof(s->method), "%s", json_object_get_string(v));
    if (json_object_object_get_ex(root, "solver_s", &v)) s->solver_s = json_object_get_double(v);
    if (json_object_object_get_ex(root, "start_epochs", &v) &&
        int_at(root, "start_epochs", &s->start_epochs) != 0)
        s->start_epochs = 0; /* for people: not checked */
    return 0;
}

int pl_schedule_read(const char *path, const pl_topology_t *t, pl_schedule_t *s, char *why,
                     size_t whylen)
{
    json_object *root = json_object_from_file(path), *flows;
    int rc;

    pl_schedule_init(s);
    if (root == NULL)
        return pl_fail(why, whylen, "%s: cannot read it as JSON (%s)", path,
                       json_util_get_last_err() ? json_util_get_last_err() : "?");
    rc = read_header(root, t, s, why, whylen);
    if (rc == 0 && get(root, "flows", json_type_array, &flows) != 0)
        rc = pl_fail(why, whylen, "needs a \"flows\" list");
    for (size_t i = 0; rc == 0 && i < json_object_array_length(flows); i++)
        rc = read_flow(json_object_array_get_idx(flows, i), i, t, s, why, whylen);
    json_object_put(root);
    if (rc != 0) pl_schedule_fini(s);
    return rc;
}
