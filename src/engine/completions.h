/*
 * completions.h - the context's completion queue: every backend appends
 * {user, status} of a collective that ended without a callback; application
 * threads drain it (dfccl_context_poll) or sleep on it (dfccl_context_wait).
 */
#ifndef DFCCL_COMPLETIONS_H
#define DFCCL_COMPLETIONS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "include/dfccl.h"

struct dfccl_stage;   /* stage.h */

/* An entry: the caller's completion, or one of a staged call, whose
 * result the polling thread still copies out (stage.h). */
typedef struct dfccl_cqueue_entry {
    dfccl_completion_t  done;
    struct dfccl_stage *stage;   /* NULL: done is the caller's */
} dfccl_cqueue_entry_t;

typedef struct dfccl_cqueue {
    pthread_mutex_t       lock;
    pthread_cond_t        nonempty;
    dfccl_cqueue_entry_t *ring;
    size_t              capacity, first, used;  /* grows; never drops an entry */
} dfccl_cqueue_t;

void dfccl_cqueue_init(dfccl_cqueue_t *cq);
void dfccl_cqueue_fini(dfccl_cqueue_t *cq);
dfccl_status_t dfccl_cqueue_push(dfccl_cqueue_t *cq, void *user, dfccl_status_t status);
dfccl_status_t dfccl_cqueue_push_stage(dfccl_cqueue_t *cq, struct dfccl_stage *stage,
                                       dfccl_status_t status);
int dfccl_cqueue_poll(dfccl_cqueue_t *cq, dfccl_cqueue_entry_t *out, int max);
int dfccl_cqueue_wait(dfccl_cqueue_t *cq, uint64_t timeout_ns);

#endif
