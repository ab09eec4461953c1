/*
 * plan_pool.h - plans too long for a submission entry (more ranks than
 * the all-peer paths serve: the ring's 2n - 1 steps), in device memory.
 * A job that needs one takes a buffer from the backend's pool, copies its
 * steps there before it enters the queue, and gives the buffer back when
 * it is freed (the collective completed on every channel that read it).
 * Buffers are made as needed and kept for later jobs: freeing device
 * memory would wait for the daemon kernel, so they go with the backend.
 */
#ifndef DFCCL_GPU_PLAN_POOL_H
#define DFCCL_GPU_PLAN_POOL_H

#include <pthread.h>
#include <stdint.h>
#include "include/dfccl.h"
#include "core/plan.h"

struct dfccl_gpu;
struct gpu_job;

typedef struct gpu_plan_buf {
    struct gpu_plan_buf *next;          /* in the pool's free list, or its list of all */
    struct gpu_plan_buf *next_all;
    struct gpu_plan_pool *pool;
    dfccl_step_t        *dev;           /* device memory for cap steps */
    uint32_t             cap;
    uint64_t             first_launch;  /* the first launch that began after it was made */
} gpu_plan_buf_t;

typedef struct gpu_plan_pool {
    pthread_mutex_t  lock;
    gpu_plan_buf_t  *free;    /* free buffers, any size */
    gpu_plan_buf_t  *all;     /* every buffer, for gpu_plan_pool_fini */
} gpu_plan_pool_t;

void gpu_plan_pool_init(gpu_plan_pool_t *pool);
/* Frees every buffer; the kernel is gone. */
void gpu_plan_pool_fini(gpu_plan_pool_t *pool);

/*
 * Puts job's long plan (job->plan_steps, job->plan_nsteps) into device
 * memory and points its submission entry there; sets job->min_launch to
 * the first launch that may read the buffer. Nothing to do for a job
 * without one. On failure the job is unchanged.
 */
dfccl_status_t gpu_plan_upload(struct dfccl_gpu *g, struct gpu_job *job);

/* What a job holds of its long plan goes: the buffer back to the pool, the
 * host copy freed where the job owns it. */
void gpu_plan_release(struct gpu_job *job);

#endif
