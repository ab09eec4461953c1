/*
 * plan_pool.c - long plans in device memory (plan_pool.h).
 */
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "backends/gpu/plan_pool.h"
#include "backends/gpu/state.h"
#include "util/log.h"

/* Buffers hold a power of two of steps, at least this many: a pool serves
 * communicators of several sizes with few buffers. */
#define GPU_PLAN_MIN_CAP 256u

void gpu_plan_pool_init(gpu_plan_pool_t *pool)
{
    memset(pool, 0, sizeof(*pool));
    pthread_mutex_init(&pool->lock, NULL);
}

void gpu_plan_pool_fini(gpu_plan_pool_t *pool)
{
    gpu_plan_buf_t *b = pool->all;

    while (b != NULL) {
        gpu_plan_buf_t *next = b->next_all;
        cudaFree(b->dev);
        free(b);
        b = next;
    }
    pool->all = pool->free = NULL;
    pthread_mutex_destroy(&pool->lock);
}

/* The smallest free buffer of at least need steps, taken out of the free
 * list; NULL when there is none. Lock held. */
static gpu_plan_buf_t *gpu_plan_take(gpu_plan_pool_t *pool, uint32_t need)
{
    gpu_plan_buf_t **best = NULL;

    for (gpu_plan_buf_t **p = &pool->free; *p != NULL; p = &(*p)->next)
        if ((*p)->cap >= need && (best == NULL || (*p)->cap < (*best)->cap)) best = p;
    if (best == NULL) return NULL;
    gpu_plan_buf_t *b = *best;
    *best = b->next;
    b->next = NULL;
    return b;
}

/* A new buffer of at least need steps (device current). */
static dfccl_status_t gpu_plan_make(dfccl_gpu_t *g, uint32_t need, gpu_plan_buf_t **out)
{
    gpu_plan_pool_t *pool = &g->plans;
    gpu_plan_buf_t *b = calloc(1, sizeof(*b));
    uint32_t cap = GPU_PLAN_MIN_CAP;
    cudaError_t e;

    if (b == NULL) return DFCCL_ERR_NO_MEMORY;
    while (cap < need) cap *= 2;
    e = cudaMalloc((void **)&b->dev, (size_t)cap * sizeof(dfccl_step_t));
    if (e != cudaSuccess) {
        dfccl_error("device memory for a plan of %u steps: %s", need, gpu_err(e));
        free(b);
        return DFCCL_ERR_NO_MEMORY;
    }
    b->cap = cap;
    b->pool = pool;
    /* a launch touches only memory that existed when it began */
    pthread_mutex_lock(&g->sq.lock);
    b->first_launch = g->env.launch_id + 1;
    pthread_mutex_unlock(&g->sq.lock);
    pthread_mutex_lock(&pool->lock);
    b->next_all = pool->all;
    pool->all = b;
    pthread_mutex_unlock(&pool->lock);
    *out = b;
    return DFCCL_OK;
}

dfccl_status_t gpu_plan_upload(dfccl_gpu_t *g, gpu_job_t *job)
{
    gpu_plan_buf_t *b;
    dfccl_status_t status = DFCCL_OK;
    cudaError_t e;
    int previous;

    if (job->plan_steps == NULL) return DFCCL_OK;
    pthread_mutex_lock(&g->plans.lock);
    b = gpu_plan_take(&g->plans, job->plan_nsteps);
    pthread_mutex_unlock(&g->plans.lock);
    previous = gpu_device_enter(g);
    if (b == NULL) status = gpu_plan_make(g, job->plan_nsteps, &b);
    if (status == DFCCL_OK) {
        e = gpu_copy_now(g, b->dev, job->plan_steps, job->plan_nsteps * sizeof(dfccl_step_t),
                         cudaMemcpyHostToDevice);
        if (e != cudaSuccess) {
            dfccl_error("copying a plan of %u steps to the GPU: %s", job->plan_nsteps, gpu_err(e));
            status = DFCCL_ERR_SYSTEM;
        }
    }
    gpu_device_leave(g, previous);
    if (status != DFCCL_OK) {
        if (b != NULL) {
            pthread_mutex_lock(&g->plans.lock);
            b->next = g->plans.free;
            g->plans.free = b;
            pthread_mutex_unlock(&g->plans.lock);
        }
        return status;
    }
    job->plan_buf = b;
    job->min_launch = b->first_launch;
    job->desc.plan = b->dev;
    /* a plan file's image is longer than its steps, which describe set */
    if (!job->desc.plan_file) job->desc.plan_nsteps = job->plan_nsteps;
    job->desc.nsteps = 0;
    return DFCCL_OK;
}

void gpu_plan_release(gpu_job_t *job)
{
    gpu_plan_buf_t *b = job->plan_buf;

    if (b != NULL) {
        pthread_mutex_lock(&b->pool->lock);
        b->next = b->pool->free;
        b->pool->free = b;
        pthread_mutex_unlock(&b->pool->lock);
        job->plan_buf = NULL;
    }
    if (job->plan_owned) free(job->plan_steps);
    job->plan_steps = NULL;
    job->plan_owned = 0;
}
