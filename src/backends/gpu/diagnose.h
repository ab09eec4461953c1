/*
 * diagnose.h - the engine's log line for a GPU collective that failed on
 * the kernel, from the kernel's diagnosis in its completion entry.
 */
#ifndef DFCCL_GPU_DIAGNOSE_H
#define DFCCL_GPU_DIAGNOSE_H

#include "backends/gpu/state.h"

/* Says where coll (submitted as d) stood when the kernel gave up on it:
 * which peer it waited for and for what, or that an earlier collective on
 * its communicator had failed. */
void gpu_diagnose(const dfccl_call_t *coll, const dfccl_gpu_desc_t *d, const dfccl_gpu_diag_t *g);

#endif
