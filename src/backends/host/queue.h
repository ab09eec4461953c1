/*
 * queue.h - the host backend's submission queue.
 *
 * Submission: any application thread appends a collective; the thread that
 * runs the scheduler takes everything at once; the daemon sleeps on a
 * condition variable when idle.
 */
#ifndef DFCCL_QUEUE_H
#define DFCCL_QUEUE_H

#include <pthread.h>
#include <stdint.h>
#include "include/dfccl.h"

struct dfccl_coll;

typedef struct dfccl_queue {
    pthread_mutex_t    lock;
    pthread_cond_t     nonempty;
    struct dfccl_coll *head, *tail;
    int                pending;   /* read without the lock as a cheap hint */
    int                stop;
    int                sleeping;  /* the daemon sleeps in dfccl_queue_wait (under lock) */
} dfccl_queue_t;

void dfccl_queue_init(dfccl_queue_t *q);
void dfccl_queue_fini(dfccl_queue_t *q);
/* Appends coll; wakes the daemon only if it sleeps in dfccl_queue_wait: a
 * running daemon takes it at its next round, a caller that drives the
 * scheduler takes it itself (a wake-up would cost a thread switch), and a
 * daemon that naps while callers drive looks again within the linger. */
void dfccl_queue_push(dfccl_queue_t *q, struct dfccl_coll *coll);
/* Wakes the daemon if it sleeps in dfccl_queue_wait. */
void dfccl_queue_kick(dfccl_queue_t *q);
/* Takes every queued collective (in submission order) and returns the first. */
struct dfccl_coll *dfccl_queue_take_all(dfccl_queue_t *q);
/* Sleeps until the queue holds a collective, dfccl_queue_stop() is called
 * or timeout_ns passed (bounded, so that an idle daemon still answers the
 * dump signal: watch.c). */
void dfccl_queue_wait(dfccl_queue_t *q, uint64_t timeout_ns);
/* Sleeps until timeout_ns passed or dfccl_queue_stop() is called, whatever
 * the queue holds (pushes and kicks wake only a dfccl_queue_wait). */
void dfccl_queue_nap(dfccl_queue_t *q, uint64_t timeout_ns);
void dfccl_queue_stop(dfccl_queue_t *q);
/* The process exits (util/exit_park.h): a sleeper wakes and parks. */
void dfccl_queue_wake_at_exit(void *arg);

#endif
