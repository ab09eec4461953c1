/*
 * jobs.h - a job's way through the daemon kernel's queues: the submission
 * ring in pinned memory, the backlog in front of it, and the completion
 * rings drained into the engine's completion queue.
 */
#ifndef DFCCL_GPU_JOBS_H
#define DFCCL_GPU_JOBS_H

#include "backends/gpu/state.h"

/* Moves completion entries to the engine's completion queue; returns how
 * many (0 while another thread drains). */
int  gpu_drain(dfccl_gpu_t *g);
/* Submits backlogged jobs while their slots are free and they may enter;
 * sq.lock held. */
void gpu_backlog_flush(dfccl_gpu_t *g);
/* Everything still queued or running fails with status; sq.lock held. */
void gpu_fail_all(dfccl_gpu_t *g, dfccl_status_t status);
/* Puts job into the submission queue (held: only if it enters at once);
 * 1 when it entered, 0 when it did not, -1 when the backend broke. */
int  gpu_job_enqueue(dfccl_gpu_t *g, gpu_job_t *job, int held, uint64_t *ticket);

#endif
