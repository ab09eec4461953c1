/*
 * plan_cache.c - a host communicator's recent plans. Applications repeat
 * the same calls (a training step's gradients, a solver's residual), and
 * building a plan (algorithm, steps, connections) is a good part of a small
 * call's cost: a call like one of the last `plan_cache` (knob) on the same
 * communicator - same collective, element type, op, counts and in-place
 * setting - starts from a copy of that call's planned record, which never
 * ran; only the buffers, the cookie and the priority are its own. The plan
 * depends on nothing else (the topology, the plan files and the knobs are
 * fixed for the communicator's life), so the copy is what building would
 * have given.
 */
#include <stdlib.h>
#include <string.h>
#include "backends/host/host.h"

struct dfccl_plan_cache {
    pthread_mutex_t lock;      /* posts on one communicator may come from several threads */
    unsigned        n;         /* entries */
    uint64_t        clock;     /* for least recently used */
    struct dfccl_plan_cache_entry {
        dfccl_coll_t *tmpl;    /* NULL: empty */
        size_t        bytes;
        size_t       *counts;  /* reduce-scatter's, size entries */
        int           in_place;
        size_t        count;
        uint64_t      used;
    } e[];
};

static int cache_matches(const struct dfccl_plan_cache_entry *e, const dfccl_coll_args_t *a,
                         int size)
{
    const dfccl_coll_t *t = e->tmpl;

    if (t == NULL || t->type != a->type || t->exec.dtype != a->dtype ||
        e->in_place != (a->sendbuf == DFCCL_IN_PLACE) || e->count != a->count)
        return 0;
    if (a->type != DFCCL_COLL_ALLGATHER && t->exec.op != a->op) return 0;
    if (a->type == DFCCL_COLL_REDUCE_SCATTER)
        return memcmp(e->counts, a->counts, sizeof(size_t) * (size_t)size) == 0;
    return 1;
}

/* The copy's own buffers and callback (dfccl_coll_from_template did the rest). */
static void cache_personalise(dfccl_coll_t *coll, const dfccl_coll_args_t *a)
{
    coll->exec.sendbuf = a->sendbuf == DFCCL_IN_PLACE ? NULL : (char *)a->sendbuf;
    coll->exec.recvbuf = (char *)a->recvbuf;
    coll->callback     = a->callback;
}

dfccl_status_t dfccl_plan_cache_take(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                     size_t total, dfccl_coll_t **coll_p)
{
    struct dfccl_plan_cache *c = dfccl_comm_host(comm)->plan_cache;
    struct dfccl_plan_cache_entry *victim = NULL;
    dfccl_coll_t *coll, *tmpl;
    dfccl_status_t status;
    size_t bytes;

    if (c != NULL) {
        pthread_mutex_lock(&c->lock);
        for (unsigned i = 0; i < c->n; i++) {
            struct dfccl_plan_cache_entry *e = &c->e[i];
            if (!cache_matches(e, args, comm->size)) continue;
            coll = dfccl_coll_from_template(e->tmpl, e->bytes, args);
            if (coll != NULL) e->used = ++c->clock;
            pthread_mutex_unlock(&c->lock);
            if (coll == NULL) return DFCCL_ERR_NO_MEMORY;
            cache_personalise(coll, args);
            *coll_p = coll;
            return DFCCL_OK;
        }
        pthread_mutex_unlock(&c->lock);
    }
    status = dfccl_coll_new(comm, args, total, coll_p);
    if (status != DFCCL_OK || c == NULL) return status;
    /* keep a copy that never runs (the new record goes to the scheduler) */
    bytes = (*coll_p)->bytes;
    if ((tmpl = malloc(bytes)) == NULL) return DFCCL_OK;   /* just not cached */
    memcpy(tmpl, *coll_p, bytes);
    size_t *counts = NULL;
    if (args->type == DFCCL_COLL_REDUCE_SCATTER &&
        (counts = malloc(sizeof(size_t) * (size_t)comm->size)) == NULL) {
        free(tmpl);
        return DFCCL_OK;
    }
    if (counts != NULL) memcpy(counts, args->counts, sizeof(size_t) * (size_t)comm->size);
    pthread_mutex_lock(&c->lock);
    for (unsigned i = 0; i < c->n; i++)
        if (victim == NULL || c->e[i].tmpl == NULL ||
            (victim->tmpl != NULL && c->e[i].used < victim->used))
            victim = &c->e[i];
    free(victim->tmpl);
    free(victim->counts);
    victim->tmpl = tmpl;
    victim->bytes = bytes;
    victim->counts = counts;
    victim->in_place = args->sendbuf == DFCCL_IN_PLACE;
    victim->count = args->count;
    victim->used = ++c->clock;
    pthread_mutex_unlock(&c->lock);
    return DFCCL_OK;
}

dfccl_status_t dfccl_plan_cache_create(dfccl_host_t *h, unsigned entries)
{
    struct dfccl_plan_cache *c;

    h->plan_cache = NULL;
    if (entries == 0) return DFCCL_OK;
    c = calloc(1, sizeof(*c) + entries * sizeof(c->e[0]));
    if (c == NULL) return DFCCL_ERR_NO_MEMORY;
    pthread_mutex_init(&c->lock, NULL);
    c->n = entries;
    h->plan_cache = c;
    return DFCCL_OK;
}

void dfccl_plan_cache_free(dfccl_host_t *h)
{
    struct dfccl_plan_cache *c = h->plan_cache;

    if (c == NULL) return;
    for (unsigned i = 0; i < c->n; i++) {
        free(c->e[i].tmpl);
        free(c->e[i].counts);
    }
    pthread_mutex_destroy(&c->lock);
    free(c);
    h->plan_cache = NULL;
}
