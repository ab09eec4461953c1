/*
 * host_sched.h - the host backend's scheduler and who runs it.
 *
 * One scheduler per context: the list of active collectives in the global
 * order, their budgets and the watchdog (sched.c). Whoever holds its lock
 * runs it: the daemon thread, or a caller that waits for a host collective
 * anyway (dfccl_context_drive). A caller that drives needs no hand-off to
 * another thread on its fast path: it posts, runs the plan's steps itself
 * and finds its completion without a thread wake-up. The daemon thread
 * stands back while callers drive and takes over once none has over a nap
 * of DFCCL_WAIT_DRIVER_LINGER_NS, so that a rank that stops calling MPI still
 * lets its peers finish. Only one thread at a time runs the scheduler, so
 * no collective is ever run by two.
 */
#ifndef DFCCL_HOST_SCHED_H
#define DFCCL_HOST_SCHED_H

#include <pthread.h>
#include <stdint.h>
#include "core/sched_policy.h"

struct dfccl_context;
struct dfccl_coll;

typedef struct dfccl_sched {
    pthread_mutex_t       lock;          /* held by the thread that runs it */
    struct dfccl_coll    *active;        /* sorted (preempt) or in arrival order (serial) */
    uint64_t              timeout_ns;    /* the watchdog */
    dfccl_sched_budgets_t budgets;
    uint64_t              stalled_since; /* when passes began to move nothing; 0: they move */
    uint64_t              deadline_ns;   /* a driving caller's turn ends here; 0: the daemon */
    int                   drivers;       /* callers driving or about to (atomic) */
    uint64_t              driven;        /* turns callers drove (atomic): the daemon looks
                                            whether it changed over its last nap */
} dfccl_sched_t;

void dfccl_sched_init(dfccl_sched_t *s, const struct dfccl_context *ctx);
void dfccl_sched_fini(dfccl_sched_t *s);

/* One round, by the holder of s->lock: admits what was submitted, keeps
 * sends to other nodes moving, answers a dump request and runs one pass
 * over the runnable collectives. Returns 1 when anything moved. A driving
 * caller's round (s->deadline_ns set) ends after the first completion. */
int dfccl_sched_round(struct dfccl_context *ctx);

/* Takes one collective into the active list, in the global order, as if
 * it came through the submission queue. Holder of s->lock only. */
void dfccl_sched_admit(struct dfccl_context *ctx, struct dfccl_coll *coll);

/* 1 when the scheduler has nothing to run and nothing to send: the daemon
 * may sleep on the submission queue. Holder of s->lock only. */
int dfccl_sched_idle(struct dfccl_context *ctx);

/* Shutting down: everything queued or active completes with
 * DFCCL_ERR_SHUTDOWN. Holder of s->lock only. */
void dfccl_sched_drain(struct dfccl_context *ctx);

/* The backoff after a round that moved nothing (wait_policy.h), counted
 * from s->stalled_since; rounds that move reset it. */
void dfccl_sched_backoff(dfccl_sched_t *s, int moved);

#endif
