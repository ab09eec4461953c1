/* queue.c - the host backend's submission queue. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include "backends/host/host.h"
#include "util/clock.h"
#include "util/exit_park.h"
#include "core/wait_policy.h"

void dfccl_queue_init(dfccl_queue_t *q)
{
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->nonempty, NULL);
    q->head = q->tail = NULL;
    q->pending = 0;
    q->stop = 0;
    q->sleeping = 0;
}

void dfccl_queue_fini(dfccl_queue_t *q)
{
    pthread_cond_destroy(&q->nonempty);
    pthread_mutex_destroy(&q->lock);
}

void dfccl_queue_push(dfccl_queue_t *q, dfccl_coll_t *coll)
{
    coll->next = NULL;
    pthread_mutex_lock(&q->lock);
    if (q->tail) q->tail->next = coll;
    else q->head = coll;
    q->tail = coll;
    __atomic_store_n(&q->pending, 1, __ATOMIC_RELEASE);
    if (q->sleeping) pthread_cond_signal(&q->nonempty);
    pthread_mutex_unlock(&q->lock);
}

void dfccl_queue_kick(dfccl_queue_t *q)
{
    pthread_mutex_lock(&q->lock);
    if (q->sleeping) pthread_cond_signal(&q->nonempty);
    pthread_mutex_unlock(&q->lock);
}

dfccl_coll_t *dfccl_queue_take_all(dfccl_queue_t *q)
{
    dfccl_coll_t *first;

    pthread_mutex_lock(&q->lock);
    first = q->head;
    q->head = q->tail = NULL;
    __atomic_store_n(&q->pending, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&q->lock);
    return first;
}

void dfccl_queue_wait(dfccl_queue_t *q, uint64_t timeout_ns)
{
    struct timespec deadline;

    dfccl_deadline_after(&deadline, CLOCK_REALTIME, timeout_ns);
    pthread_mutex_lock(&q->lock);
    q->sleeping = 1;
    while (q->head == NULL && !q->stop && !dfccl_exiting())
        if (pthread_cond_timedwait(&q->nonempty, &q->lock, &deadline) == ETIMEDOUT) break;
    q->sleeping = 0;
    pthread_mutex_unlock(&q->lock);
}

void dfccl_queue_nap(dfccl_queue_t *q, uint64_t timeout_ns)
{
    struct timespec deadline;

    dfccl_deadline_after(&deadline, CLOCK_REALTIME, timeout_ns);
    pthread_mutex_lock(&q->lock);
    if (!q->stop && !dfccl_exiting()) pthread_cond_timedwait(&q->nonempty, &q->lock, &deadline);
    pthread_mutex_unlock(&q->lock);
}

void dfccl_queue_wake_at_exit(void *arg)
{
    dfccl_queue_t *q = arg;

    pthread_mutex_lock(&q->lock);
    pthread_cond_broadcast(&q->nonempty);
    pthread_mutex_unlock(&q->lock);
}

void dfccl_queue_stop(dfccl_queue_t *q)
{
    pthread_mutex_lock(&q->lock);
    __atomic_store_n(&q->stop, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&q->nonempty);
    pthread_mutex_unlock(&q->lock);
}
