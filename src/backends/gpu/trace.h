/*
 * trace.h - the GPU backend's latency trace (config gpu_trace).
 */
#ifndef DFCCL_GPU_TRACE_H
#define DFCCL_GPU_TRACE_H

#include "backends/gpu/state.h"

/* Started at the backend's creation, stopped (flushed) at its end; make
 * room, record and flush under drain.lock. */
void gpu_trace_start(dfccl_gpu_t *g);
void gpu_trace_make_room(dfccl_gpu_t *g);
void gpu_trace_record(dfccl_gpu_t *g, const gpu_job_t *job, const dfccl_gpu_cqe_t *e);
void gpu_trace_flush(dfccl_gpu_t *g);
void gpu_trace_stop(dfccl_gpu_t *g);

#endif
