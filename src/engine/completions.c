/* completions.c - the context's completion queue (completions.h). */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include "engine/completions.h"
#include "util/clock.h"

void dfccl_cqueue_init(dfccl_cqueue_t *cq)
{
    pthread_mutex_init(&cq->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&cq->nonempty, &attr);
    pthread_condattr_destroy(&attr);
    cq->ring = NULL;
    cq->capacity = cq->first = cq->used = 0;
}

void dfccl_cqueue_fini(dfccl_cqueue_t *cq)
{
    free(cq->ring);
    pthread_cond_destroy(&cq->nonempty);
    pthread_mutex_destroy(&cq->lock);
}

static int cqueue_grow(dfccl_cqueue_t *cq)
{
    size_t capacity = cq->capacity ? 2 * cq->capacity : 64;
    dfccl_cqueue_entry_t *ring = malloc(capacity * sizeof(*ring));

    if (ring == NULL) return -1;
    for (size_t i = 0; i < cq->used; i++)
        ring[i] = cq->ring[(cq->first + i) % cq->capacity];
    free(cq->ring);
    cq->ring = ring;
    cq->capacity = capacity;
    cq->first = 0;
    return 0;
}

static dfccl_status_t cqueue_push(dfccl_cqueue_t *cq, void *user, struct dfccl_stage *stage,
                                  dfccl_status_t status)
{
    pthread_mutex_lock(&cq->lock);
    if (cq->used == cq->capacity && cqueue_grow(cq) != 0) {
        pthread_mutex_unlock(&cq->lock);
        return DFCCL_ERR_NO_MEMORY;
    }
    dfccl_cqueue_entry_t *c = &cq->ring[(cq->first + cq->used) % cq->capacity];
    __atomic_store_n(&cq->used, cq->used + 1, __ATOMIC_RELEASE);  /* read unlocked by poll */
    c->done.user = user;
    c->done.status = status;
    c->stage = stage;
    pthread_cond_broadcast(&cq->nonempty);
    pthread_mutex_unlock(&cq->lock);
    return DFCCL_OK;
}

dfccl_status_t dfccl_cqueue_push(dfccl_cqueue_t *cq, void *user, dfccl_status_t status)
{
    return cqueue_push(cq, user, NULL, status);
}

dfccl_status_t dfccl_cqueue_push_stage(dfccl_cqueue_t *cq, struct dfccl_stage *stage,
                                       dfccl_status_t status)
{
    return cqueue_push(cq, NULL, stage, status);
}

int dfccl_cqueue_poll(dfccl_cqueue_t *cq, dfccl_cqueue_entry_t *out, int max)
{
    int n = 0;

    if (__atomic_load_n(&cq->used, __ATOMIC_ACQUIRE) == 0) return 0;  /* cheap miss */
    pthread_mutex_lock(&cq->lock);
    while (n < max && cq->used > 0) {
        out[n++] = cq->ring[cq->first];
        cq->first = (cq->first + 1) % cq->capacity;
        __atomic_store_n(&cq->used, cq->used - 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&cq->lock);
    return n;
}

int dfccl_cqueue_wait(dfccl_cqueue_t *cq, uint64_t timeout_ns)
{
    struct timespec deadline;
    int nonempty;

    dfccl_deadline_after(&deadline, CLOCK_MONOTONIC, timeout_ns);
    pthread_mutex_lock(&cq->lock);
    while (cq->used == 0) {
        if (pthread_cond_timedwait(&cq->nonempty, &cq->lock, &deadline) == ETIMEDOUT) break;
    }
    nonempty = cq->used > 0;
    pthread_mutex_unlock(&cq->lock);
    return nonempty;
}
