/* exec_host.h - host instantiation of the executor core (exec.h). */
#ifndef DFCCL_EXEC_HOST_H
#define DFCCL_EXEC_HOST_H

#include "core/exec_cpu.h"
#include "core/exec_graph.h"

typedef enum {
    DFCCL_EXEC_DONE,      /* every step finished */
    DFCCL_EXEC_PROGRESS,  /* moved at least one slice, more to do */
    DFCCL_EXEC_BLOCKED    /* moved nothing: waiting for a peer (see x->waiting) */
} dfccl_exec_result_t;

/* Moves up to max_slices slices, of whichever steps may move (x->graph);
 * stops early when every step waits for a peer. */
dfccl_exec_result_t dfccl_exec_host_advance(dfccl_exec_t *x, unsigned max_slices);

#endif
