/* exec_host.h - host instantiation of the executor core (exec.h). */
#ifndef DFCCL_EXEC_HOST_H
#define DFCCL_EXEC_HOST_H

#include "core/exec_cpu.h"

typedef enum {
    DFCCL_EXEC_DONE,      /* every step finished */
    DFCCL_EXEC_PROGRESS,  /* moved at least one slice, more to do */
    DFCCL_EXEC_BLOCKED    /* moved nothing: waiting for a peer (see x->waiting) */
} dfccl_exec_result_t;

/* Moves up to max_slices slices; stops early when a peer is not ready. */
dfccl_exec_result_t dfccl_exec_host_advance(dfccl_exec_t *x, unsigned max_slices);

#endif
