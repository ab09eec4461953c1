/*
 * backend.c - the GPU backend of a context (backend.h): created on first
 * use with its configuration checked, its daemon kernel sized to the
 * device, its queues in pinned, mapped memory and its proxy thread
 * started; destroyed with the context.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "backends/gpu/backend.h"
#include "kernels/kernels.h"
#include "util/exit_park.h"
#include "util/log.h"
#include "backends/gpu/proxy.h"
#include "backends/gpu/stage.h"
#include "backends/gpu/trace.h"

int dfccl_gpu_available(char *why, size_t why_len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);

    if (e != cudaSuccess || n == 0) {
        if (why && why_len)
            snprintf(why, why_len, "no usable CUDA device: %s",
                     e != cudaSuccess ? gpu_err(e) : "none found");
        return 0;
    }
    return 1;
}

static void gpu_release_resources(dfccl_gpu_t *g)
{
    if (g->env.state) cudaFree(g->env.state);
    if (g->env.comms) cudaFree(g->env.comms);
    if (g->fixed.ctrl) cudaFreeHost(g->fixed.ctrl);
    if (g->fixed.descs) cudaFreeHost(g->fixed.descs);
    if (g->fixed.ll_heads) cudaFreeHost(g->fixed.ll_heads);
    if (g->fixed.cq) cudaFreeHost(g->fixed.cq);
    if (g->fixed.direct_req) cudaFreeHost(g->fixed.direct_req);
    if (g->fixed.direct_reply) cudaFreeHost(g->fixed.direct_reply);
    free(g->direct.to_close);
    if (g->fixed.exited) cudaEventDestroy(g->fixed.exited);
    if (g->fixed.stream) cudaStreamDestroy(g->fixed.stream);
    if (g->fixed.copy_stream) cudaStreamDestroy(g->fixed.copy_stream);
    gpu_stage_release(g);
}

/* With the locks go the long plans' buffers: no kernel runs any more. */
static void gpu_sync_fini(dfccl_gpu_t *g)
{
    gpu_plan_pool_fini(&g->plans);
    pthread_cond_destroy(&g->sq.wake);
    pthread_mutex_destroy(&g->dead.lock);
    pthread_mutex_destroy(&g->drain.lock);
    pthread_mutex_destroy(&g->sq.lock);
    pthread_mutex_destroy(&g->stage.lock);
}

/* Daemon blocks of `threads` threads the device holds at once (its *sms
 * SMs times the blocks per SM); 0 when CUDA cannot say. */
int gpu_block_capacity(int device, unsigned threads, int *sms)
{
    int per_sm = 0;

    *sms = 0;
    if (cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        dfccl_gpu_kernel_per_sm(threads, &per_sm) != 0 || *sms < 1 || per_sm < 1) {
        cudaGetLastError();
        return 0;
    }
    return *sms * per_sm;
}

/* Blocks of the daemon kernel under gpu_channels 0: as many as let the
 * kernels of all the job's ranks on this node be resident together on one
 * GPU (gpu_warn_crowded says why they must), at most DFCCL_GPU_MAX_CHANNELS;
 * unknown ranks count as 8. Which GPU another rank uses is not known before
 * its first communicator, and ranks that never choose one all share device
 * 0, so the count does not assume they are spread over the GPUs. More
 * blocks move large collectives faster while they fit: a large allreduce
 * at 4 ranks on one GPU was clearly faster with 32 blocks than with 16
 * (see docs/performance.md). The device is current on this thread. */
static unsigned gpu_auto_channels(const dfccl_config_t *cfg, int device, unsigned threads)
{
    int sms, capacity = gpu_block_capacity(device, threads, &sms);
    unsigned sharing = cfg->gpu_local_ranks > 0 ? cfg->gpu_local_ranks : 8, fit;

    if (capacity == 0) return 16;
    fit = (unsigned)capacity / sharing;
    return fit < 1 ? 1 : fit > DFCCL_GPU_MAX_CHANNELS ? DFCCL_GPU_MAX_CHANNELS : fit;
}

static dfccl_status_t gpu_create(dfccl_context_t *ctx, dfccl_gpu_t **gpu_p)
{
    const dfccl_config_t *cfg = &ctx->config;
    dfccl_gpu_t *g = calloc(1, sizeof(*g));
    cudaError_t e;
    void *dev;
    int rc;

    if (g == NULL) return DFCCL_ERR_NO_MEMORY;
    g->fixed.ctx = ctx;
    e = cudaGetDevice(&g->fixed.device);
    if (e != cudaSuccess) goto err_cuda;
    g->fixed.threads = cfg->gpu_threads;
    g->fixed.blocks = cfg->gpu_channels ? cfg->gpu_channels
                                        : gpu_auto_channels(cfg, g->fixed.device, g->fixed.threads);
    if ((e = cudaStreamCreateWithFlags(&g->fixed.stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&g->fixed.copy_stream, cudaStreamNonBlocking)) !=
            cudaSuccess ||
        (e = cudaEventCreateWithFlags(&g->fixed.exited, cudaEventDisableTiming)) != cudaSuccess ||
        (e = cudaHostAlloc((void **)&g->fixed.ctrl, sizeof(*g->fixed.ctrl), cudaHostAllocMapped)) !=
            cudaSuccess ||
        (e = cudaHostAlloc((void **)&g->fixed.descs, sizeof(*g->fixed.descs) * DFCCL_GPU_SQ_DEPTH,
                           cudaHostAllocMapped)) != cudaSuccess ||
        (e = cudaHostAlloc((void **)&g->fixed.ll_heads,
                           sizeof(*g->fixed.ll_heads) * DFCCL_GPU_SQ_DEPTH,
                           cudaHostAllocMapped)) != cudaSuccess ||
        (e = cudaHostAlloc((void **)&g->fixed.cq,
                           sizeof(*g->fixed.cq) * DFCCL_GPU_SQ_DEPTH * g->fixed.blocks,
                           cudaHostAllocMapped)) != cudaSuccess ||
        (e = cudaHostAlloc((void **)&g->fixed.direct_req,
                           sizeof(*g->fixed.direct_req) * DFCCL_GPU_SQ_DEPTH,
                           cudaHostAllocMapped)) != cudaSuccess ||
        (e = cudaHostAlloc((void **)&g->fixed.direct_reply,
                           sizeof(*g->fixed.direct_reply) * DFCCL_GPU_SQ_DEPTH,
                           cudaHostAllocMapped)) != cudaSuccess ||
        (e = cudaMalloc((void **)&g->env.state, sizeof(dfccl_gpu_state_t))) != cudaSuccess ||
        (e = cudaMalloc((void **)&g->env.comms, sizeof(dfccl_gpu_comm_dev_t) * DFCCL_GPU_MAX_COMMS)) !=
            cudaSuccess)
        goto err_cuda;
    memset(g->fixed.ctrl, 0, sizeof(*g->fixed.ctrl));
    memset(g->fixed.descs, 0, sizeof(*g->fixed.descs) * DFCCL_GPU_SQ_DEPTH);
    for (int s = 0; s < DFCCL_GPU_SQ_DEPTH; s++) g->fixed.descs[s].ticket = UINT64_MAX;
    /* tags of ticket 0 in slot 0, but of no LL collective (kind 0) */
    memset((void *)g->fixed.ll_heads, 0, sizeof(*g->fixed.ll_heads) * DFCCL_GPU_SQ_DEPTH);
    memset(g->fixed.cq, 0, sizeof(*g->fixed.cq) * DFCCL_GPU_SQ_DEPTH * g->fixed.blocks);
    memset(g->fixed.direct_req, 0, sizeof(*g->fixed.direct_req) * DFCCL_GPU_SQ_DEPTH);
    memset(g->fixed.direct_reply, 0, sizeof(*g->fixed.direct_reply) * DFCCL_GPU_SQ_DEPTH);
    if ((e = cudaMemsetAsync(g->env.state, 0, sizeof(dfccl_gpu_state_t), g->fixed.copy_stream)) !=
            cudaSuccess ||
        (e = cudaStreamSynchronize(g->fixed.copy_stream)) != cudaSuccess)
        goto err_cuda;
    if ((e = cudaHostGetDevicePointer(&dev, g->fixed.ctrl, 0)) != cudaSuccess) goto err_cuda;
    g->env.ctrl = dev;
    if ((e = cudaHostGetDevicePointer(&dev, g->fixed.descs, 0)) != cudaSuccess) goto err_cuda;
    g->env.descs = dev;
    if ((e = cudaHostGetDevicePointer(&dev, g->fixed.ll_heads, 0)) != cudaSuccess) goto err_cuda;
    g->env.ll_heads = dev;
    if ((e = cudaHostGetDevicePointer(&dev, g->fixed.cq, 0)) != cudaSuccess) goto err_cuda;
    g->env.cq = dev;
    if ((e = cudaHostGetDevicePointer(&dev, g->fixed.direct_req, 0)) != cudaSuccess) goto err_cuda;
    g->env.direct_req = dev;
    if ((e = cudaHostGetDevicePointer(&dev, g->fixed.direct_reply, 0)) != cudaSuccess)
        goto err_cuda;
    g->env.direct_reply = dev;
    g->env.direct_chunk_bytes = cfg->gpu_direct_chunk_bytes;
    {
        enum cudaDriverEntryPointQueryResult found1 = cudaDriverEntryPointSymbolNotFound, found2 = found1;
        void *fn1 = NULL, *fn2 = NULL;
        cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn1, 12000, cudaEnableDefault,
                                         &found1);
        cudaGetDriverEntryPointByVersion("cuIpcGetMemHandle", &fn2, 12000, cudaEnableDefault,
                                         &found2);
        if (found1 == cudaDriverEntryPointSuccess && found2 == cudaDriverEntryPointSuccess) {
            g->fixed.get_range = (gpu_get_range_fn_t)fn1;
            g->fixed.get_handle = (gpu_get_handle_fn_t)fn2;
        } else {
            dfccl_info("cuMemGetAddressRange or cuIpcGetMemHandle not found: large GPU collectives"
                       " use the ring");
        }
        cudaGetLastError();
    }
    g->env.budget_head_ns = cfg->budget_head_ns;
    g->env.budget_ns = cfg->budget_ns;
    g->env.budget_min_ns = cfg->budget_min_ns;
    g->env.budget_max_ns = cfg->budget_max_ns;
    g->env.timeout_ns = (uint64_t)(cfg->timeout_sec * 1e9);
    g->env.idle_quit_ns = cfg->gpu_idle_quit_ns;
    g->env.stuck_quit_ns = cfg->gpu_stuck_quit_ns;
    g->env.poll_max_ns = cfg->gpu_poll_max_ns;
#ifdef DFCCL_GPU_TRACE
    g->env.trace = cfg->gpu_trace != 0;
#else
    /* the kernel has no stamps to give (configure --enable-gpu-trace) */
    if (cfg->gpu_trace)
        dfccl_error("gpu_trace=1 ignored: the GPU latency trace was not compiled in (configure"
                    " --enable-gpu-trace); running without it");
    g->env.trace = 0;
#endif
    g->env.ll_wait_ns = cfg->gpu_ll_wait_ns;
    if (g->env.trace) gpu_trace_start(g);
    pthread_mutex_init(&g->sq.lock, NULL);
    pthread_mutex_init(&g->drain.lock, NULL);
    pthread_mutex_init(&g->dead.lock, NULL);
    pthread_mutex_init(&g->stage.lock, NULL);
    gpu_plan_pool_init(&g->plans);
    pthread_cond_init(&g->sq.wake, NULL);
    rc = pthread_create(&g->fixed.proxy_thread, NULL, gpu_proxy_main, g);
    if (rc == 0) g->fixed.proxy_exit = dfccl_exit_guard_add(gpu_proxy_wake_at_exit, g);
    if (rc != 0) {
        dfccl_error("cannot start the GPU proxy thread: %s", strerror(rc));
        gpu_trace_stop(g);
        gpu_sync_fini(g);
        gpu_release_resources(g);
        free(g);
        return DFCCL_ERR_SYSTEM;
    }
    dfccl_info("GPU backend started on device %d: %u channels%s x %u threads, FIFOs %u x %zu bytes",
               g->fixed.device, g->fixed.blocks, cfg->gpu_channels ? "" : " (as many as fit)",
               g->fixed.threads, cfg->gpu_fifo_slots, cfg->gpu_slot_bytes);
    *gpu_p = g;
    return DFCCL_OK;

err_cuda:
    dfccl_error("GPU backend not started: %s", gpu_err(e));
    gpu_release_resources(g);
    free(g);
    return DFCCL_ERR_SYSTEM;
}

dfccl_status_t gpu_get(dfccl_context_t *ctx, dfccl_gpu_t **gpu_p)
{
    dfccl_status_t status = DFCCL_OK;

    pthread_mutex_lock(&gpu_ctx_of(ctx)->lock);
    if (gpu_ctx_of(ctx)->gpu == NULL) {
        const dfccl_config_t *cfg = &ctx->config;
        if (cfg->gpu_channels > DFCCL_GPU_MAX_CHANNELS ||
            cfg->gpu_threads < 64 || cfg->gpu_threads > 512 || cfg->gpu_threads % 32 != 0 ||
            cfg->gpu_slot_bytes < 1024 || cfg->gpu_slot_bytes % 16 != 0 || cfg->gpu_fifo_slots < 2 ||
            cfg->gpu_direct_chunk_bytes < 4096 || cfg->gpu_ll_bytes > DFCCL_GPU_LL_MAX_BYTES) {
            dfccl_error("invalid GPU configuration: channels %u (0..%d), threads %u (64..512, a"
                        " multiple of 32), slot bytes %zu (>= 1024, a multiple of 16), slots %u"
                        " (>= 2), direct chunk bytes %zu (>= 4096), LL bytes %zu (<= %d)",
                        cfg->gpu_channels, DFCCL_GPU_MAX_CHANNELS, cfg->gpu_threads,
                        cfg->gpu_slot_bytes, cfg->gpu_fifo_slots, cfg->gpu_direct_chunk_bytes,
                        cfg->gpu_ll_bytes, DFCCL_GPU_LL_MAX_BYTES);
            status = DFCCL_ERR_INVALID_PARAM;
        } else {
            status = gpu_create(ctx, &gpu_ctx_of(ctx)->gpu);
        }
    }
    *gpu_p = gpu_ctx_of(ctx)->gpu;
    pthread_mutex_unlock(&gpu_ctx_of(ctx)->lock);
    return status;
}

void dfccl_gpu_destroy(dfccl_context_t *ctx)
{
    dfccl_gpu_t *g = gpu_ctx_of(ctx)->gpu;

    if (g == NULL) return;
    __atomic_store_n(&g->fixed.ctrl->stop, UINT64_MAX, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&g->sq.lock);
    g->sq.stop = 1;
    pthread_cond_signal(&g->sq.wake);
    pthread_mutex_unlock(&g->sq.lock);
    pthread_join(g->fixed.proxy_thread, NULL);
    dfccl_exit_guard_remove(g->fixed.proxy_exit);
    __atomic_store_n(&gpu_ctx_of(ctx)->gpu, NULL, __ATOMIC_RELEASE);   /* pollers stop looking first */
    pthread_mutex_lock(&g->drain.lock);   /* a poller that looked before is done */
    gpu_trace_stop(g);
    pthread_mutex_unlock(&g->drain.lock);
    gpu_sync_fini(g);
    gpu_release_resources(g);
    free(g);
}

/* Lends a staging block (stage.c), creating the backend first where it
 * does not exist yet. */
dfccl_status_t dfccl_gpu_stage_alloc(dfccl_context_t *ctx, size_t bytes, void **buf_p)
{
    dfccl_gpu_t *g;
    dfccl_status_t status;

    *buf_p = NULL;
    status = gpu_get(ctx, &g);
    if (status != DFCCL_OK) return status;
    return gpu_stage_take(g, bytes, buf_p);
}

dfccl_status_t dfccl_gpu_context_open(dfccl_context_t *ctx, void **state)
{
    dfccl_gpu_ctx_t *gx = calloc(1, sizeof(*gx));

    (void)ctx;
    if (gx == NULL) return DFCCL_ERR_NO_MEMORY;
    pthread_mutex_init(&gx->lock, NULL);
    *state = gx;
    return DFCCL_OK;
}

/* The stream side first (what was enqueued is posted or fails), then the
 * GPU side, then the stream side's memory. */
void dfccl_gpu_context_close(dfccl_context_t *ctx, void *state)
{
    dfccl_gpu_ctx_t *gx = state;

    dfccl_streams_stop(ctx);
    dfccl_gpu_destroy(ctx);
    dfccl_streams_free(ctx);
    pthread_mutex_destroy(&gx->lock);
    free(gx);
}
