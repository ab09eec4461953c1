/*
 * plan_file.c - reading a plan file: JSON to the in-memory model, each
 * value's type and range, and each step on its own (what it reads, writes,
 * receives and sends must make sense for the collective); then the checks
 * across steps and ranks (plan_file_check.c, plan_file_run.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "engine/plan_file_model.h"

/* The file's names for the collectives, as the format spells them. */
static const char *const coll_names[DFCCL_COLL_TYPE_COUNT] = { "allreduce", "allgather",
                                                              "reduce_scatter" };

dfccl_status_t pf_fail(pf_why_t *why, const char *fmt, ...)
{
    va_list ap;

    if (why != NULL && why->text != NULL && why->len > 0) {
        va_start(ap, fmt);
        vsnprintf(why->text, why->len, fmt, ap);
        va_end(ap);
    }
    return DFCCL_ERR_INVALID_PARAM;
}

uint32_t pf_block_chunks(const dfccl_plan_file_t *pf)
{
    return pf->type == DFCCL_COLL_ALLREDUCE ? pf->chunks : pf->chunks / (uint32_t)pf->ranks;
}

int pf_buffer_holds(const dfccl_plan_file_t *pf, int rank, dfccl_buf_t buf, uint32_t c)
{
    int own = c / pf_block_chunks(pf) == (uint32_t)rank;

    if (c >= pf->chunks) return 0;
    if (pf->type == DFCCL_COLL_ALLGATHER && buf == DFCCL_BUF_SEND) return own;
    if (pf->type == DFCCL_COLL_REDUCE_SCATTER && buf == DFCCL_BUF_RECV) return own;
    return buf == DFCCL_BUF_SEND || buf == DFCCL_BUF_RECV;
}

const char *pf_buffer_name(dfccl_buf_t buf)
{
    return buf == DFCCL_BUF_SEND ? "send" : buf == DFCCL_BUF_RECV ? "receive" : "no";
}

/* ---- JSON values ---------------------------------------------------------- */

/* Every key of obj is one of allowed (NULL-terminated); else names it. */
static const char *unknown_key(json_object *obj, const char *const *allowed)
{
    json_object_object_foreach(obj, key, val) {
        const char *const *a = allowed;
        (void)val;
        while (*a != NULL && strcmp(*a, key) != 0) a++;
        if (*a == NULL) return key;
    }
    return NULL;
}

/* An integer in [lo, hi]: 1; not an integer: 0; out of range: -1. */
static int int_in(json_object *v, int64_t lo, int64_t hi, int64_t *out)
{
    if (!json_object_is_type(v, json_type_int)) return 0;
    *out = json_object_get_int64(v);
    return *out >= lo && *out <= hi ? 1 : -1;
}

/* A buffer name or null: "send", "recv" or null (which are allowed). */
static int buffer_of(json_object *v, int send_ok, uint8_t *out)
{
    const char *s;

    if (v == NULL) {
        *out = DFCCL_BUF_NONE;
        return 1;
    }
    if (!json_object_is_type(v, json_type_string)) return 0;
    s = json_object_get_string(v);
    if (send_ok && strcmp(s, "send") == 0) *out = DFCCL_BUF_SEND;
    else if (strcmp(s, "recv") == 0) *out = DFCCL_BUF_RECV;
    else return 0;
    return 1;
}

/* ---- one step ------------------------------------------------------------- */

static const char *const step_keys[] = { "recv", "send", "reduce", "chunk", "nchunks", "src",
                                         "dst", "after", "comment", NULL };

/* A peer: in range and not the rank itself. */
static dfccl_status_t parse_peer(const dfccl_plan_file_t *pf, int rank, uint32_t i, json_object *v,
                                 const char *what, int32_t *peer, pf_why_t *why)
{
    int64_t p;
    int ok = int_in(v, 0, pf->ranks - 1, &p);

    if (ok == 0) return pf_fail(why, "rank %d step %u: \"%s\" must name ranks by number", rank, i, what);
    if (ok < 0)
        return pf_fail(why, "rank %d step %u: %s rank %lld, which is not in 0..%d", rank, i,
                       strcmp(what, "recv") == 0 ? "receives from" : "sends to", (long long)p,
                       pf->ranks - 1);
    if (p == rank)
        return pf_fail(why, "rank %d step %u: %s itself", rank, i,
                       strcmp(what, "recv") == 0 ? "receives from" : "sends to");
    *peer = (int32_t)p;
    return DFCCL_OK;
}

/* A step's lists go to its program's pools, whose room counted them. */
typedef struct pf_pools {
    int32_t  *peers;
    uint32_t *after;
    size_t    npeers, nafter;
} pf_pools_t;

static dfccl_status_t parse_links(const dfccl_plan_file_t *pf, int rank, uint32_t i,
                                  json_object *st, pf_step_t *s, pf_pools_t *pools, pf_why_t *why)
{
    json_object *v;
    size_t n;

    s->recv = -1;
    s->send = pools->peers + pools->npeers;
    if (json_object_object_get_ex(st, "recv", &v) && v != NULL &&
        parse_peer(pf, rank, i, v, "recv", &s->recv, why) != DFCCL_OK)
        return DFCCL_ERR_INVALID_PARAM;
    if (!json_object_object_get_ex(st, "send", &v) || v == NULL) return DFCCL_OK;
    if (!json_object_is_type(v, json_type_array))
        return pf_fail(why, "rank %d step %u: \"send\" must be a list of ranks", rank, i);
    n = json_object_array_length(v);
    if (n > (pf->version < 2 ? 2 : DFCCL_PLAN_MAX_CONNS))
        return pf_fail(why, "rank %d step %u: sends to %zu ranks; a step of a version %d plan "
                       "sends to at most %d", rank, i, n, pf->version,
                       pf->version < 2 ? 2 : DFCCL_PLAN_MAX_CONNS);
    for (size_t k = 0; k < n; k++) {
        if (parse_peer(pf, rank, i, json_object_array_get_idx(v, k), "send", &s->send[k], why))
            return DFCCL_ERR_INVALID_PARAM;
        for (size_t j = 0; j < k; j++)
            if (s->send[k] == s->send[j])
                return pf_fail(why, "rank %d step %u: sends to rank %d twice", rank, i, s->send[k]);
    }
    s->nsend = (uint16_t)n;
    pools->npeers += n;
    return DFCCL_OK;
}

static dfccl_status_t parse_after(int rank, uint32_t i, json_object *v, pf_step_t *s,
                                  pf_pools_t *pools, pf_why_t *why)
{
    int64_t a;

    s->after = pools->after + pools->nafter;
    if (v == NULL) return DFCCL_OK;
    if (!json_object_is_type(v, json_type_array))
        return pf_fail(why, "rank %d step %u: \"after\" must be a list of step numbers", rank, i);
    for (size_t k = 0; k < json_object_array_length(v); k++) {
        int ok = int_in(json_object_array_get_idx(v, k), 0, (int64_t)i - 1, &a);
        if (ok == 0)
            return pf_fail(why, "rank %d step %u: \"after\" must be a list of step numbers", rank, i);
        if (ok < 0)
            return pf_fail(why, "rank %d step %u: \"after\" names step %lld, which does not come "
                           "before it", rank, i, (long long)a);
        s->after[s->nafter++] = (uint32_t)a;
    }
    pools->nafter += s->nafter;
    return DFCCL_OK;
}

/* The chunk range: within the plan, and within one block where there are blocks. */
static dfccl_status_t parse_range(const dfccl_plan_file_t *pf, int rank, uint32_t i,
                                  json_object *st, pf_step_t *s, pf_why_t *why)
{
    json_object *v;
    int64_t c = 0, n = 1;
    uint32_t per = pf_block_chunks(pf);

    if (!json_object_object_get_ex(st, "chunk", &v) || int_in(v, 0, INT32_MAX, &c) <= 0)
        return pf_fail(why, "rank %d step %u: \"chunk\" must be a chunk number", rank, i);
    if (json_object_object_get_ex(st, "nchunks", &v) && int_in(v, 1, INT32_MAX, &n) <= 0)
        return pf_fail(why, "rank %d step %u: \"nchunks\" must be a positive integer", rank, i);
    if (c + n > pf->chunks)
        return pf_fail(why, "rank %d step %u: chunks %lld-%lld are not all among the plan's %u",
                       rank, i, (long long)c, (long long)(c + n - 1), pf->chunks);
    if ((uint64_t)c / per != (uint64_t)(c + n - 1) / per)
        return pf_fail(why, "rank %d step %u: chunks %lld-%lld span blocks %llu and %llu; a step "
                       "stays within one rank's block", rank, i, (long long)c,
                       (long long)(c + n - 1), (unsigned long long)((uint64_t)c / per),
                       (unsigned long long)((uint64_t)(c + n - 1) / per));
    s->chunk = (uint32_t)c;
    s->nchunks = (uint32_t)n;
    return DFCCL_OK;
}

/* What a step does must make sense on its own. */
static dfccl_status_t check_step(const dfccl_plan_file_t *pf, int rank, uint32_t i,
                                 const pf_step_t *s, pf_why_t *why)
{
    uint32_t last = s->chunk + s->nchunks - 1;

    if (s->recv < 0 && s->src == DFCCL_BUF_NONE)
        return pf_fail(why, "rank %d step %u: has nothing to move: it neither receives nor reads "
                       "a \"src\"", rank, i);
    if (s->reduce && (s->recv < 0 || s->src == DFCCL_BUF_NONE))
        return pf_fail(why, "rank %d step %u: reduces, which needs both \"recv\" and \"src\"",
                       rank, i);
    if (s->reduce && pf->type == DFCCL_COLL_ALLGATHER)
        return pf_fail(why, "rank %d step %u: reduces in an allgather", rank, i);
    if (s->recv >= 0 && !s->reduce && s->src != DFCCL_BUF_NONE)
        return pf_fail(why, "rank %d step %u: names a \"src\" it does not use (it receives "
                       "without reducing)", rank, i);
    if (s->dst == DFCCL_BUF_NONE && s->nsend == 0)
        return pf_fail(why, "rank %d step %u: neither writes (\"dst\") nor sends what it moves",
                       rank, i);
    if (s->recv < 0 && s->nsend == 0 && s->src == s->dst)
        return pf_fail(why, "rank %d step %u: copies chunks %u-%u onto themselves", rank, i,
                       s->chunk, last);
    if (s->src != DFCCL_BUF_NONE && !pf_buffer_holds(pf, rank, s->src, s->chunk))
        return pf_fail(why, "rank %d step %u: reads chunks %u-%u of the %s buffer, which holds "
                       "only rank %d's block in a%s %s", rank, i, s->chunk, last,
                       pf_buffer_name(s->src), rank,
                       pf->type == DFCCL_COLL_ALLREDUCE ? "n" : "", coll_names[pf->type]);
    if (s->dst != DFCCL_BUF_NONE && !pf_buffer_holds(pf, rank, s->dst, s->chunk))
        return pf_fail(why, "rank %d step %u: writes chunks %u-%u of the receive buffer, which "
                       "holds only rank %d's block in a %s", rank, i, s->chunk, last, rank,
                       coll_names[pf->type]);
    return DFCCL_OK;
}

static dfccl_status_t parse_step(const dfccl_plan_file_t *pf, int rank, uint32_t i,
                                 json_object *st, pf_step_t *s, pf_pools_t *pools, pf_why_t *why)
{
    json_object *v;
    const char *bad;

    if (!json_object_is_type(st, json_type_object))
        return pf_fail(why, "rank %d step %u: a step must be an object", rank, i);
    if ((bad = unknown_key(st, step_keys)) != NULL)
        return pf_fail(why, "rank %d step %u: unknown key \"%s\"", rank, i, bad);
    memset(s, 0, sizeof(*s));
    if (parse_links(pf, rank, i, st, s, pools, why) || parse_range(pf, rank, i, st, s, why))
        return DFCCL_ERR_INVALID_PARAM;
    if (json_object_object_get_ex(st, "reduce", &v) && v != NULL) {
        if (!json_object_is_type(v, json_type_boolean))
            return pf_fail(why, "rank %d step %u: \"reduce\" must be true or false", rank, i);
        s->reduce = (uint8_t)json_object_get_boolean(v);
    }
    if (!buffer_of(json_object_object_get_ex(st, "src", &v) ? v : NULL, 1, &s->src))
        return pf_fail(why, "rank %d step %u: \"src\" must be \"send\", \"recv\" or null", rank, i);
    if (!buffer_of(json_object_object_get_ex(st, "dst", &v) ? v : NULL, 0, &s->dst))
        return pf_fail(why, "rank %d step %u: \"dst\" must be \"recv\" or null (the send buffer "
                       "is the caller's input)", rank, i);
    if (parse_after(rank, i, json_object_object_get_ex(st, "after", &v) ? v : NULL, s, pools, why))
        return DFCCL_ERR_INVALID_PARAM;
    return check_step(pf, rank, i, s, why);
}

/* ---- programs and the whole plan ------------------------------------------ */

static const char *const program_keys[] = { "rank", "steps", "comment", NULL };
static const char *const plan_keys[] = { "format", "version", "name", "comment", "collective",
                                         "ranks", "chunks", "programs", "nodes", "min_bytes",
                                         "max_bytes", NULL };

static dfccl_status_t parse_program(dfccl_plan_file_t *pf, size_t index, json_object *prog,
                                    pf_why_t *why)
{
    json_object *v, *steps;
    const char *bad;
    int64_t rank;
    pf_program_t *p;
    pf_pools_t pools = { 0 };
    size_t n, npeers = 0, nafter = 0;

    if (!json_object_is_type(prog, json_type_object))
        return pf_fail(why, "programs[%zu]: a program must be an object", index);
    if ((bad = unknown_key(prog, program_keys)) != NULL)
        return pf_fail(why, "programs[%zu]: unknown key \"%s\"", index, bad);
    if (!json_object_object_get_ex(prog, "rank", &v) || int_in(v, 0, pf->ranks - 1, &rank) <= 0)
        return pf_fail(why, "programs[%zu]: \"rank\" must be a rank in 0..%d", index, pf->ranks - 1);
    p = &pf->programs[rank];
    if (p->steps != NULL)
        return pf_fail(why, "programs[%zu]: rank %lld has a program already", index, (long long)rank);
    if (!json_object_object_get_ex(prog, "steps", &steps) || !json_object_is_type(steps, json_type_array))
        return pf_fail(why, "rank %lld: \"steps\" must be a list of steps", (long long)rank);
    n = json_object_array_length(steps);
    if (n > PF_MAX_STEPS)
        return pf_fail(why, "rank %lld: %zu steps, more than %d", (long long)rank, n, PF_MAX_STEPS);
    p->steps = calloc(n ? n : 1, sizeof(pf_step_t));
    if (p->steps == NULL) return DFCCL_ERR_NO_MEMORY;
    p->nsteps = (uint32_t)n;
    if (p->nsteps > pf->max_steps) pf->max_steps = p->nsteps;
    /* room for the steps' lists: what the file names, at most */
    for (size_t i = 0; i < n; i++) {
        json_object *st = json_object_array_get_idx(steps, i);
        if (json_object_is_type(st, json_type_object)) {
            if (json_object_object_get_ex(st, "send", &v) && json_object_is_type(v, json_type_array))
                npeers += json_object_array_length(v);
            if (json_object_object_get_ex(st, "after", &v) && json_object_is_type(v, json_type_array))
                nafter += json_object_array_length(v);
        }
    }
    p->peers = malloc(sizeof(int32_t) * (npeers ? npeers : 1));
    p->links = malloc(sizeof(uint32_t) * (npeers ? npeers : 1));
    p->after = malloc(sizeof(uint32_t) * (nafter ? nafter : 1));
    if (p->peers == NULL || p->links == NULL || p->after == NULL) return DFCCL_ERR_NO_MEMORY;
    pools.peers = p->peers;
    pools.after = p->after;
    for (size_t i = 0; i < n; i++) {
        pf_step_t *s = &p->steps[i];
        if (parse_step(pf, (int)rank, (uint32_t)i, json_object_array_get_idx(steps, i), s,
                       &pools, why))
            return DFCCL_ERR_INVALID_PARAM;
        s->send_link = p->links + (s->send - p->peers);
        if (s->nsend > 1) p->nmore += s->nsend - 1u;
    }
    if (p->nmore > pf->max_more) pf->max_more = p->nmore;
    return DFCCL_OK;
}

static dfccl_status_t parse_header(dfccl_plan_file_t *pf, json_object *root, pf_why_t *why)
{
    json_object *v;
    const char *bad, *s;
    int64_t x;
    int t;

    if (!json_object_is_type(root, json_type_object)) return pf_fail(why, "a plan must be an object");
    if ((bad = unknown_key(root, plan_keys)) != NULL) return pf_fail(why, "unknown key \"%s\"", bad);
    if (!json_object_object_get_ex(root, "format", &v) || !json_object_is_type(v, json_type_string) ||
        strcmp(json_object_get_string(v), DFCCL_PLAN_FILE_FORMAT) != 0)
        return pf_fail(why, "\"format\" must be \"%s\"", DFCCL_PLAN_FILE_FORMAT);
    if (!json_object_object_get_ex(root, "version", &v) || int_in(v, 1, INT32_MAX, &x) <= 0)
        return pf_fail(why, "\"version\" must be a positive integer");
    if (x > DFCCL_PLAN_FILE_VERSION)
        return pf_fail(why, "version %lld is newer than the %d this engine reads", (long long)x,
                       DFCCL_PLAN_FILE_VERSION);
    pf->version = (int)x;
    s = "";
    if (json_object_object_get_ex(root, "name", &v) && v != NULL) {
        if (!json_object_is_type(v, json_type_string)) return pf_fail(why, "\"name\" must be a string");
        s = json_object_get_string(v);
    }
    if ((pf->name = strdup(s)) == NULL) return DFCCL_ERR_NO_MEMORY;
    if (!json_object_object_get_ex(root, "collective", &v) || !json_object_is_type(v, json_type_string))
        return pf_fail(why, "\"collective\" must be \"allreduce\", \"allgather\" or \"reduce_scatter\"");
    for (t = 0; t < DFCCL_COLL_TYPE_COUNT && strcmp(json_object_get_string(v), coll_names[t]); t++) {}
    if (t == DFCCL_COLL_TYPE_COUNT)
        return pf_fail(why, "\"collective\" must be \"allreduce\", \"allgather\" or \"reduce_scatter\"");
    pf->type = (dfccl_coll_type_t)t;
    if (!json_object_object_get_ex(root, "ranks", &v) || int_in(v, 1, PF_MAX_RANKS, &x) <= 0)
        return pf_fail(why, "\"ranks\" must be an integer in 1..%d", PF_MAX_RANKS);
    pf->ranks = (int)x;
    if (!json_object_object_get_ex(root, "chunks", &v) || int_in(v, 1, PF_MAX_CHUNKS, &x) <= 0)
        return pf_fail(why, "\"chunks\" must be an integer in 1..%d", PF_MAX_CHUNKS);
    pf->chunks = (uint32_t)x;
    if (pf->type != DFCCL_COLL_ALLREDUCE && pf->chunks % (uint32_t)pf->ranks != 0)
        return pf_fail(why, "%u chunks do not cut %d blocks alike: a%s %s needs a multiple of the "
                       "ranks", pf->chunks, pf->ranks, pf->type == DFCCL_COLL_ALLGATHER ? "n" : "",
                       coll_names[pf->type]);
    return DFCCL_OK;
}

/* Where the plan applies: "nodes" (each rank's node, numbered by first
 * rank, as the engine numbers a communicator's nodes) and the sizes. */
static dfccl_status_t parse_scope(dfccl_plan_file_t *pf, json_object *root, pf_why_t *why)
{
    json_object *v;
    int64_t x;
    int32_t next = 0;

    pf->min_bytes = 0;
    pf->max_bytes = UINT64_MAX;
    if (json_object_object_get_ex(root, "min_bytes", &v)) {
        if (int_in(v, 0, INT64_MAX, &x) <= 0)
            return pf_fail(why, "\"min_bytes\" must be a non-negative integer");
        pf->min_bytes = (uint64_t)x;
    }
    if (json_object_object_get_ex(root, "max_bytes", &v)) {
        if (int_in(v, 0, INT64_MAX, &x) <= 0)
            return pf_fail(why, "\"max_bytes\" must be a non-negative integer");
        pf->max_bytes = (uint64_t)x;
    }
    if (pf->min_bytes > pf->max_bytes)
        return pf_fail(why, "\"min_bytes\" %llu is above \"max_bytes\" %llu",
                       (unsigned long long)pf->min_bytes, (unsigned long long)pf->max_bytes);
    if (!json_object_object_get_ex(root, "nodes", &v) || v == NULL) return DFCCL_OK;
    if (!json_object_is_type(v, json_type_array) ||
        json_object_array_length(v) != (size_t)pf->ranks)
        return pf_fail(why, "\"nodes\" must list the node of each of the %d ranks", pf->ranks);
    if ((pf->nodes = malloc(sizeof(int32_t) * (size_t)pf->ranks)) == NULL) return DFCCL_ERR_NO_MEMORY;
    for (int r = 0; r < pf->ranks; r++) {
        if (int_in(json_object_array_get_idx(v, (size_t)r), 0, next, &x) <= 0)
            return pf_fail(why, "\"nodes\"[%d] must be a node already named or %d: nodes are"
                           " numbered in order of their first rank", r, next);
        pf->nodes[r] = (int32_t)x;
        if (x == next) next++;
    }
    return DFCCL_OK;
}

static dfccl_status_t parse_plan(dfccl_plan_file_t *pf, json_object *root, pf_why_t *why)
{
    json_object *progs;
    size_t n;
    dfccl_status_t status = parse_header(pf, root, why);

    if (status == DFCCL_OK) status = parse_scope(pf, root, why);
    if (status != DFCCL_OK) return status;
    if (!json_object_object_get_ex(root, "programs", &progs) || !json_object_is_type(progs, json_type_array))
        return pf_fail(why, "\"programs\" must be a list of the ranks' programs");
    pf->programs = calloc((size_t)pf->ranks, sizeof(pf_program_t));
    if (pf->programs == NULL) return DFCCL_ERR_NO_MEMORY;
    n = json_object_array_length(progs);
    for (size_t i = 0; i < n; i++)
        if ((status = parse_program(pf, i, json_object_array_get_idx(progs, i), why)) != DFCCL_OK)
            return status;
    for (int r = 0; r < pf->ranks; r++)
        if (pf->programs[r].steps == NULL) return pf_fail(why, "rank %d has no program", r);
    return DFCCL_OK;
}

/* The checks across steps and ranks, then whether in-place calls work too. */
static dfccl_status_t check_plan(dfccl_plan_file_t *pf, pf_why_t *why)
{
    pf_why_t ip = { pf->in_place_why, sizeof(pf->in_place_why) };
    dfccl_status_t status;

    if ((status = pf_check_links(pf, why)) != DFCCL_OK) return status;
    if ((status = pf_derive_deps(pf)) != DFCCL_OK) return status;
    if ((status = pf_check_rounds(pf, 0, why)) != DFCCL_OK) return status;
    if ((status = pf_check_run(pf, 0, why)) != DFCCL_OK) return status;
    if (pf->type == DFCCL_COLL_REDUCE_SCATTER) {
        /* its result would go to the front of the buffer, over input that
         * other steps may still read; the built-in ring handles that */
        pf_fail(&ip, "in-place reduce-scatter is left to the built-in ring");
        return DFCCL_OK;
    }
    status = pf_check_rounds(pf, 1, &ip);
    if (status == DFCCL_OK) status = pf_check_run(pf, 1, &ip);
    pf->in_place = status == DFCCL_OK;
    return status == DFCCL_ERR_NO_MEMORY ? status : DFCCL_OK;
}

void dfccl_plan_file_free(dfccl_plan_file_t *pf)
{
    if (pf == NULL) return;
    if (pf->programs != NULL)
        for (int r = 0; r < pf->ranks; r++) {
            free(pf->programs[r].steps);
            free(pf->programs[r].peers);
            free(pf->programs[r].links);
            free(pf->programs[r].after);
            free(pf->programs[r].deps);
        }
    free(pf->programs);
    free(pf->link_from);
    free(pf->link_to);
    free(pf->name);
    free(pf->nodes);
    free(pf);
}

dfccl_status_t dfccl_plan_file_parse(const char *text, size_t len, dfccl_plan_file_t **pf_p,
                                     char *why_text, size_t whylen)
{
    pf_why_t why = { why_text, whylen };
    json_tokener *tok = json_tokener_new();
    json_object *root = NULL;
    dfccl_plan_file_t *pf = calloc(1, sizeof(*pf));
    dfccl_status_t status = DFCCL_ERR_NO_MEMORY;
    size_t end;

    if (why_text != NULL && whylen > 0) why_text[0] = '\0';
    if (tok == NULL || pf == NULL) goto out;
    if (len > INT32_MAX) {
        status = pf_fail(&why, "a plan of %zu bytes is too large", len);
        goto out;
    }
    root = json_tokener_parse_ex(tok, text, (int)len);
    end = json_tokener_get_parse_end(tok);
    if (root == NULL) {
        enum json_tokener_error e = json_tokener_get_error(tok);
        status = pf_fail(&why, "not JSON: %s at byte %zu",
                         e == json_tokener_continue ? "the text ends early"
                                                    : json_tokener_error_desc(e), end);
        goto out;
    }
    while (end < len && strchr(" \t\r\n", text[end]) != NULL) end++;
    if (end < len) {
        status = pf_fail(&why, "not JSON: text after the plan at byte %zu", end);
        goto out;
    }
    status = parse_plan(pf, root, &why);
    if (status == DFCCL_OK) status = check_plan(pf, &why);
    pf->digest = 14695981039346656037ull;   /* FNV-1a: ranks compare plans by it */
    for (size_t i = 0; i < len; i++) pf->digest = (pf->digest ^ (unsigned char)text[i]) * 1099511628211ull;
out:
    if (root != NULL) json_object_put(root);
    if (tok != NULL) json_tokener_free(tok);
    if (status != DFCCL_OK) {
        if (status == DFCCL_ERR_NO_MEMORY) pf_fail(&why, "out of memory");
        dfccl_plan_file_free(pf);
        return status;
    }
    *pf_p = pf;
    return DFCCL_OK;
}

dfccl_status_t dfccl_plan_file_load(const char *path, dfccl_plan_file_t **pf, char *why_text,
                                    size_t whylen)
{
    pf_why_t why = { why_text, whylen };
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    size_t len = 0, cap = 0, got;
    dfccl_status_t status;

    if (f == NULL) {
        pf_fail(&why, "%s: %s", path, strerror(errno));
        return DFCCL_ERR_SYSTEM;
    }
    do {
        if (len == cap) {
            char *more = realloc(text, cap = cap ? 2 * cap : 65536);
            if (more == NULL) {
                free(text);
                fclose(f);
                pf_fail(&why, "%s: out of memory", path);
                return DFCCL_ERR_NO_MEMORY;
            }
            text = more;
        }
        got = fread(text + len, 1, cap - len, f);
        len += got;
    } while (got > 0);
    if (ferror(f)) {
        pf_fail(&why, "%s: %s", path, strerror(errno));
        free(text);
        fclose(f);
        return DFCCL_ERR_SYSTEM;
    }
    fclose(f);
    status = dfccl_plan_file_parse(text, len, pf, why_text, whylen);
    free(text);
    return status;
}
