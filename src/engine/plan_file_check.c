/*
 * plan_file_check.c - the checks across a plan's steps that need no
 * simulation: which connections it uses, that every send meets a receive
 * of the same chunks, and that steps which share a place in a buffer run in
 * an order the executor's rounds keep.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/plan_file_model.h"

/* ---- connections -------------------------------------------------------- */

static int cmp_link(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int64_t link_key(int from, int to)
{
    return (int64_t)from << 32 | (uint32_t)to;
}

static uint32_t link_find(const dfccl_plan_file_t *pf, const int64_t *keys, int from, int to)
{
    int64_t k = link_key(from, to);
    uint32_t lo = 0, hi = pf->nlinks;

    while (lo < hi) {   /* every pair looked up is among the keys */
        uint32_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < k) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Numbers the (sender, receiver) pairs that any step names, either end. */
static dfccl_status_t number_links(dfccl_plan_file_t *pf, int64_t **keys_p)
{
    size_t n = 0, k = 0;
    int64_t *keys;

    for (int r = 0; r < pf->ranks; r++)
        for (uint32_t i = 0; i < pf->programs[r].nsteps; i++) {
            const pf_step_t *s = &pf->programs[r].steps[i];
            n += (s->recv >= 0) + s->nsend;
        }
    keys = malloc(sizeof(int64_t) * (n ? n : 1));
    if (keys == NULL) return DFCCL_ERR_NO_MEMORY;
    for (int r = 0; r < pf->ranks; r++)
        for (uint32_t i = 0; i < pf->programs[r].nsteps; i++) {
            const pf_step_t *s = &pf->programs[r].steps[i];
            if (s->recv >= 0) keys[k++] = link_key(s->recv, r);
            for (int j = 0; j < s->nsend; j++) keys[k++] = link_key(r, s->send[j]);
        }
    qsort(keys, n, sizeof(int64_t), cmp_link);
    k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || keys[k - 1] != keys[i]) keys[k++] = keys[i];
    pf->nlinks = (uint32_t)k;
    pf->link_from = malloc(sizeof(int32_t) * (k ? k : 1));
    pf->link_to = malloc(sizeof(int32_t) * (k ? k : 1));
    if (pf->link_from == NULL || pf->link_to == NULL) {
        free(keys);
        return DFCCL_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < k; i++) {
        pf->link_from[i] = (int32_t)(keys[i] >> 32);
        pf->link_to[i] = (int32_t)(uint32_t)keys[i];
    }
    *keys_p = keys;
    return DFCCL_OK;
}

/* A rank's connections each way fit the executor's connection indices. */
static dfccl_status_t check_conn_counts(const dfccl_plan_file_t *pf, pf_why_t *why)
{
    int *out = calloc((size_t)pf->ranks, sizeof(int)), *in = calloc((size_t)pf->ranks, sizeof(int));
    dfccl_status_t status = DFCCL_OK;

    if (out == NULL || in == NULL) {
        status = DFCCL_ERR_NO_MEMORY;
    } else {
        for (uint32_t l = 0; l < pf->nlinks; l++) {
            out[pf->link_from[l]]++;
            in[pf->link_to[l]]++;
        }
        for (int r = 0; r < pf->ranks && status == DFCCL_OK; r++)
            if (out[r] > DFCCL_PLAN_MAX_CONNS || in[r] > DFCCL_PLAN_MAX_CONNS)
                status = pf_fail(why, "rank %d: sends to %d and receives from %d ranks; a rank "
                                 "has at most %d connections each way", r, out[r], in[r],
                                 DFCCL_PLAN_MAX_CONNS);
    }
    free(out);
    free(in);
    return status;
}

/* The steps on each link, in program order: sends[sfirst[l] .. sfirst[l+1]). */
typedef struct link_steps {
    uint32_t *first, *step, *fill;
} link_steps_t;

static dfccl_status_t list_link_steps(const dfccl_plan_file_t *pf, int sending, link_steps_t *ls)
{
    size_t total = 0;

    ls->first = calloc((size_t)pf->nlinks + 1, sizeof(uint32_t));
    ls->fill = calloc((size_t)pf->nlinks + 1, sizeof(uint32_t));
    for (int pass = 0; pass < 2; pass++) {
        if (ls->first == NULL || ls->fill == NULL) return DFCCL_ERR_NO_MEMORY;
        for (int r = 0; r < pf->ranks; r++)
            for (uint32_t i = 0; i < pf->programs[r].nsteps; i++) {
                const pf_step_t *s = &pf->programs[r].steps[i];
                const uint32_t *links = sending ? s->send_link : &s->recv_link;
                int n = sending ? s->nsend : s->recv >= 0;
                for (int j = 0; j < n; j++) {
                    if (pass == 0) ls->first[links[j] + 1]++;
                    else ls->step[ls->first[links[j]] + ls->fill[links[j]]++] = i;
                }
            }
        if (pass == 0) {
            for (uint32_t l = 0; l < pf->nlinks; l++) ls->first[l + 1] += ls->first[l];
            total = ls->first[pf->nlinks];
            ls->step = malloc(sizeof(uint32_t) * (total ? total : 1));
            if (ls->step == NULL) return DFCCL_ERR_NO_MEMORY;
        }
    }
    return DFCCL_OK;
}

static void free_link_steps(link_steps_t *ls)
{
    free(ls->first);
    free(ls->step);
    free(ls->fill);
}

/* "2nd", "13th": which send or receive on a connection. */
static const char *ordinal(uint32_t n, char *out, size_t len)
{
    const char *suffix = n % 100 / 10 == 1 ? "th" : n % 10 == 1 ? "st" : n % 10 == 2 ? "nd"
                       : n % 10 == 3 ? "rd" : "th";
    snprintf(out, len, "%u%s", n, suffix);
    return out;
}

static const char *times(uint32_t n, char *out, size_t len)
{
    if (n == 1) snprintf(out, len, "once");
    else if (n == 2) snprintf(out, len, "twice");
    else snprintf(out, len, "%u times", n);
    return out;
}

/* The k-th send of a to b meets the k-th receive of b from a, same chunks. */
static dfccl_status_t match_link(const dfccl_plan_file_t *pf, uint32_t l, const link_steps_t *snd,
                                 const link_steps_t *rcv, pf_why_t *why)
{
    int a = pf->link_from[l], b = pf->link_to[l];
    uint32_t ns = snd->first[l + 1] - snd->first[l], nr = rcv->first[l + 1] - rcv->first[l];
    char ord[16], cnt[24];

    for (uint32_t k = 0; k < ns && k < nr; k++) {
        uint32_t si = snd->step[snd->first[l] + k], ri = rcv->step[rcv->first[l] + k];
        const pf_step_t *s = &pf->programs[a].steps[si], *r = &pf->programs[b].steps[ri];
        if (s->chunk != r->chunk || s->nchunks != r->nchunks)
            return pf_fail(why, "rank %d step %u: sends chunks %u-%u to rank %d, whose matching "
                           "step %u receives chunks %u-%u", a, si, s->chunk,
                           s->chunk + s->nchunks - 1, b, ri, r->chunk, r->chunk + r->nchunks - 1);
    }
    if (ns > nr && nr == 0)
        return pf_fail(why, "rank %d step %u: sends to rank %d, which never receives from rank %d",
                       a, snd->step[snd->first[l]], b, a);
    if (ns > nr)
        return pf_fail(why, "rank %d step %u: sends to rank %d a %s time, but rank %d receives "
                       "from rank %d only %s", a, snd->step[snd->first[l] + nr], b,
                       ordinal(nr + 1, ord, sizeof(ord)), b, a, times(nr, cnt, sizeof(cnt)));
    if (ns == 0)
        return pf_fail(why, "rank %d step %u: receives from rank %d, which never sends to rank %d",
                       b, rcv->step[rcv->first[l]], a, b);
    if (nr > ns)
        return pf_fail(why, "rank %d step %u: receives from rank %d a %s time, but rank %d sends "
                       "to rank %d only %s", b, rcv->step[rcv->first[l] + ns], a,
                       ordinal(ns + 1, ord, sizeof(ord)), a, b, times(ns, cnt, sizeof(cnt)));
    return DFCCL_OK;
}

dfccl_status_t pf_check_links(dfccl_plan_file_t *pf, pf_why_t *why)
{
    int64_t *keys = NULL;
    link_steps_t snd = { 0 }, rcv = { 0 };
    dfccl_status_t status = number_links(pf, &keys);

    if (status != DFCCL_OK) return status;
    for (int r = 0; r < pf->ranks; r++)
        for (uint32_t i = 0; i < pf->programs[r].nsteps; i++) {
            pf_step_t *s = &pf->programs[r].steps[i];
            if (s->recv >= 0) s->recv_link = link_find(pf, keys, s->recv, r);
            for (int j = 0; j < s->nsend; j++) s->send_link[j] = link_find(pf, keys, r, s->send[j]);
        }
    free(keys);
    status = check_conn_counts(pf, why);
    if (status == DFCCL_OK) status = list_link_steps(pf, 1, &snd);
    if (status == DFCCL_OK) status = list_link_steps(pf, 0, &rcv);
    for (uint32_t l = 0; l < pf->nlinks && status == DFCCL_OK; l++)
        status = match_link(pf, l, &snd, &rcv, why);
    free_link_steps(&snd);
    free_link_steps(&rcv);
    return status;
}

/* ---- order of accesses to a rank's buffers ------------------------------- */

/*
 * Round t of the executor moves elements [t * chunk, (t + 1) * chunk) of
 * every step's range, all steps in program order, then round t + 1. An
 * element at distance d from the start of step A's range and d' from step
 * B's moves in round d / chunk in A and d' / chunk in B. For B (later) to see
 * A's write, or to write after A read, in every round size, A's range must
 * not start before B's: then d <= d' everywhere. Chunk starts grow with the
 * chunk number for every count, so comparing first chunks decides it.
 */
typedef struct first_access {
    uint32_t chunk;   /* the lowest first chunk of the earlier steps ... */
    uint32_t step;    /* ... and one step that has it */
} first_access_t;

static dfccl_status_t order_rank(const dfccl_plan_file_t *pf, int rank, int in_place,
                                 first_access_t *wr, first_access_t *rd, pf_why_t *why)
{
    const pf_program_t *p = &pf->programs[rank];
    const char *where = in_place ? " (in place)" : "";
    uint32_t C = pf->chunks;

    for (size_t k = 0; k < 2 * (size_t)C; k++) wr[k] = rd[k] = (first_access_t){ UINT32_MAX, 0 };
    for (uint32_t i = 0; i < p->nsteps; i++) {
        const pf_step_t *s = &p->steps[i];
        int src = s->src == DFCCL_BUF_NONE ? -1 : in_place ? 1 : s->src - 1;
        int dst = s->dst == DFCCL_BUF_NONE ? -1 : 1;
        for (uint32_t c = s->chunk; c < s->chunk + s->nchunks; c++) {
            const first_access_t *w, *r;
            if (src >= 0 && (w = &wr[(size_t)src * C + c])->chunk < s->chunk)
                return pf_fail(why, "rank %d step %u: reads chunk %u of the %s buffer%s that step "
                               "%u writes, but starts at chunk %u, after step %u's chunk %u: rounds "
                               "would read it before it is written", rank, i, c,
                               pf_buffer_name((dfccl_buf_t)(src + 1)), where, w->step, s->chunk,
                               w->step, w->chunk);
            if (dst < 0) continue;
            w = &wr[(size_t)C + c];
            r = &rd[(size_t)C + c];
            if (w->chunk < s->chunk)
                return pf_fail(why, "rank %d step %u: writes chunk %u of the receive buffer%s "
                               "that step %u writes, but starts at chunk %u, after step %u's chunk "
                               "%u: rounds would let step %u write it last", rank, i, c, where,
                               w->step, s->chunk, w->step, w->chunk, w->step);
            if (r->chunk < s->chunk)
                return pf_fail(why, "rank %d step %u: writes chunk %u of the receive buffer%s "
                               "that step %u reads, but starts at chunk %u, after step %u's chunk "
                               "%u: rounds would overwrite it before it is read", rank, i, c,
                               where, r->step, s->chunk, r->step, r->chunk);
        }
        for (uint32_t c = s->chunk; c < s->chunk + s->nchunks; c++) {
            if (src >= 0 && rd[(size_t)src * C + c].chunk > s->chunk)
                rd[(size_t)src * C + c] = (first_access_t){ s->chunk, i };
            if (dst >= 0 && wr[(size_t)C + c].chunk > s->chunk)
                wr[(size_t)C + c] = (first_access_t){ s->chunk, i };
        }
    }
    return DFCCL_OK;
}

dfccl_status_t pf_check_rounds(const dfccl_plan_file_t *pf, int in_place, pf_why_t *why)
{
    first_access_t *wr = malloc(sizeof(first_access_t) * 2 * pf->chunks);
    first_access_t *rd = malloc(sizeof(first_access_t) * 2 * pf->chunks);
    dfccl_status_t status = wr && rd ? DFCCL_OK : DFCCL_ERR_NO_MEMORY;

    for (int r = 0; r < pf->ranks && status == DFCCL_OK; r++)
        status = order_rank(pf, r, in_place, wr, rd, why);
    free(wr);
    free(rd);
    return status;
}

/* ---- dependencies (version 2) -------------------------------------------- */

/* The steps that touched one place since it was last written. */
typedef struct place_use {
    int32_t   writer;    /* the last step that wrote it, or -1 */
    uint32_t *readers;   /* steps that read it since */
    uint32_t  nreaders, cap;
} place_use_t;

typedef struct dep_list {
    uint32_t *v;
    size_t    n, cap;
} dep_list_t;

static int dep_add(dep_list_t *d, size_t from, uint32_t step)
{
    for (size_t k = from; k < d->n; k++)
        if (d->v[k] == step) return 0;
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 64;
        uint32_t *v = realloc(d->v, sizeof(uint32_t) * cap);
        if (v == NULL) return -1;
        d->v = v;
        d->cap = cap;
    }
    d->v[d->n++] = step;
    return 0;
}

static int place_read(place_use_t *u, uint32_t step)
{
    if (u->nreaders == u->cap) {
        uint32_t cap = u->cap ? 2 * u->cap : 4, *v = realloc(u->readers, sizeof(uint32_t) * cap);
        if (v == NULL) return -1;
        u->readers = v;
        u->cap = cap;
    }
    u->readers[u->nreaders++] = step;
    return 0;
}

/* One program's dependency lists: "after", then for each place it reads the
 * step that last wrote it, for each place it writes that step and the
 * readers since. Both buffers count as one (chunk c of the send buffer is
 * chunk c of the receive buffer in place), which is never too few. */
static dfccl_status_t derive_program(const dfccl_plan_file_t *pf, pf_program_t *p,
                                     place_use_t *use)
{
    dep_list_t d = { 0 };
    size_t *at = malloc(sizeof(size_t) * (p->nsteps ? p->nsteps : 1));
    int bad = at == NULL;

    for (uint32_t c = 0; c < pf->chunks; c++) {
        use[c].writer = -1;
        use[c].nreaders = 0;
    }
    for (uint32_t i = 0; i < p->nsteps && !bad; i++) {
        pf_step_t *s = &p->steps[i];
        at[i] = d.n;
        for (uint32_t k = 0; k < s->nafter && !bad; k++) bad = dep_add(&d, at[i], s->after[k]);
        for (uint32_t c = s->chunk; c < s->chunk + s->nchunks && !bad; c++) {
            place_use_t *u = &use[c];
            if (s->src != DFCCL_BUF_NONE && u->writer >= 0)
                bad = dep_add(&d, at[i], (uint32_t)u->writer);
            if (s->dst == DFCCL_BUF_NONE) continue;
            if (u->writer >= 0 && !bad) bad = dep_add(&d, at[i], (uint32_t)u->writer);
            for (uint32_t k = 0; k < u->nreaders && !bad; k++)
                if (u->readers[k] != i) bad = dep_add(&d, at[i], u->readers[k]);
        }
        for (uint32_t c = s->chunk; c < s->chunk + s->nchunks && !bad; c++) {
            if (s->dst != DFCCL_BUF_NONE) {
                use[c].writer = (int32_t)i;
                use[c].nreaders = 0;
            } else if (s->src != DFCCL_BUF_NONE) {
                bad = place_read(&use[c], i);
            }
        }
    }
    if (!bad) {
        p->deps = d.v != NULL ? d.v : malloc(sizeof(uint32_t));
        p->ndeps = (uint32_t)d.n;
        bad = p->deps == NULL;
        for (uint32_t i = 0; i < p->nsteps && !bad; i++) {
            p->steps[i].deps = p->deps + at[i];
            p->steps[i].ndeps = (uint32_t)((i + 1 < p->nsteps ? at[i + 1] : d.n) - at[i]);
        }
    } else {
        free(d.v);
    }
    free(at);
    return bad ? DFCCL_ERR_NO_MEMORY : DFCCL_OK;
}

dfccl_status_t pf_derive_deps(dfccl_plan_file_t *pf)
{
    place_use_t *use;
    dfccl_status_t status = DFCCL_OK;

    if (pf->version < 2) return DFCCL_OK;   /* program order */
    if ((use = calloc(pf->chunks, sizeof(place_use_t))) == NULL) return DFCCL_ERR_NO_MEMORY;
    for (int r = 0; r < pf->ranks && status == DFCCL_OK; r++) {
        status = derive_program(pf, &pf->programs[r], use);
        if (status == DFCCL_OK && pf->programs[r].ndeps > pf->max_deps)
            pf->max_deps = pf->programs[r].ndeps;
    }
    for (uint32_t c = 0; c < pf->chunks; c++) free(use[c].readers);
    free(use);
    return status;
}
