/*
 * stream.c - collectives enqueued on a CUDA stream (dfccl_coll_post_stream):
 * the collective starts after the stream's earlier work, and the stream's
 * later work waits for it, while the caller's thread returns at once.
 *
 * The daemon kernel runs on a stream of its own for as long as there is
 * work, so neither side can be an ordinary stream dependency. Instead:
 *   - before: an event recorded on the stream; a thread of the engine
 *     (one per context, started with the first such call) posts the
 *     collective once the event has completed;
 *   - after: a stream memory operation (cuStreamWaitValue32) makes the
 *     stream wait until a word of mapped host memory (the op's gate)
 *     reaches the op's value; the collective's completion writes it, and
 *     the stream goes on without any host thread waiting on it.
 * That wait is an order CUDA cannot see, and CUDA shares a few hardware
 * queues among all streams: a daemon launch issued after the wait may be
 * queued behind it, and the wait is for a collective only that launch
 * would run. So a kernel is launched before the wait is issued and stays
 * until the collective has completed (the hold: ctrl->hold, read by the
 * kernel before it leaves when idle or stuck); while held, nothing asks it
 * to leave (new mappings: the ring; new communicators: enter at once).
 * Collectives of one communicator are posted in the order they were
 * enqueued (the order MPI and NCCL give calls on one communicator), those
 * of different communicators as their events complete: one stream's
 * collective never waits behind another communicator's.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <cuda_runtime_api.h>
#include "util/clock.h"
#include "engine/internal.h"
#include "util/exit_park.h"
#include "util/log.h"
#include "backends/gpu/state.h"

#define STREAM_GATES 4096u          /* enqueued and not yet completed, at most */
#define CU_STREAM_WAIT_VALUE_GEQ 0x0

typedef int (*stream_wait_value_fn_t)(cudaStream_t stream, unsigned long long addr,
                                      uint32_t value, unsigned flags);

typedef struct stream_op {
    struct stream_op *next;
    struct dfccl_streams *owner;
    dfccl_gpu_t      *gpu;          /* holds its kernel until the op completes */
    dfccl_comm_t     *comm;         /* a reference, until posted */
    dfccl_coll_args_t args;         /* the caller's; counts point at ours */
    size_t           *counts;
    cudaEvent_t       ready;        /* the stream's earlier work is done */
    uint32_t          gate, value;
} stream_op_t;

struct dfccl_streams {
    pthread_mutex_t   lock;
    pthread_cond_t    wake;
    pthread_t         thread;
    dfccl_exit_entry_t *exit_entry; /* util/exit_park.h */
    int               stop;
    int               device;
    stream_op_t      *head, *tail;  /* enqueued, not yet posted, in enqueue order */
    volatile uint32_t *gates;       /* pinned, mapped */
    unsigned long long gates_dev;
    uint8_t           busy[STREAM_GATES];   /* atomic: a gate's op has not completed */
    uint64_t          next_ticket;
    stream_wait_value_fn_t wait_value;
    dfccl_context_t  *ctx;
};

static void stream_unhold(dfccl_gpu_t *g)
{
    __atomic_sub_fetch(&g->fixed.ctrl->hold, 1, __ATOMIC_SEQ_CST);
}

/* A daemon kernel runs, issued before the caller's next stream operation,
 * and stays until stream_unhold. The hold is written before the kernel's
 * state is read; the kernel announces that it leaves before it reads the
 * hold: either it sees the hold, or we see it leaving and wait for the
 * next launch. The host asks the kernel to leave (ctrl->stop) only under
 * sq.lock and not while held; the hold is taken under that lock, so a
 * request made before it is seen here. Bounded by the context's timeout. */
static dfccl_status_t stream_hold(dfccl_gpu_t *g, double timeout_sec)
{
    uint64_t start = dfccl_now_ns();

    pthread_mutex_lock(&g->sq.lock);
    __atomic_add_fetch(&g->fixed.ctrl->hold, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&g->sq.lock);
    for (;;) {
        uint64_t id;
        int running, broken, asked;

        pthread_mutex_lock(&g->sq.lock);
        running = g->sq.kernel_running;
        broken = g->sq.broken;
        id = g->env.launch_id;
        asked = g->fixed.ctrl->stop >= id;
        pthread_mutex_unlock(&g->sq.lock);
        if (!broken && running && !asked &&
            __atomic_load_n(&g->proxy.issued, __ATOMIC_ACQUIRE) == id &&
            g->fixed.ctrl->quitting != id && g->fixed.ctrl->left != id)
            return DFCCL_OK;
        if (broken || dfccl_now_ns() - start > (uint64_t)(timeout_sec * 1e9)) {
            stream_unhold(g);
            dfccl_error("a stream-ordered collective cannot be enqueued: %s",
                        broken ? "GPU collectives have failed"
                               : "the daemon kernel was not launched within the timeout");
            return broken ? DFCCL_ERR_SYSTEM : DFCCL_ERR_TIMEOUT;
        }
        __atomic_store_n(&g->proxy.relaunch_now, 1, __ATOMIC_RELEASE);
        pthread_mutex_lock(&g->sq.lock);
        pthread_cond_signal(&g->sq.wake);
        pthread_mutex_unlock(&g->sq.lock);
        sched_yield();
    }
}

/* The collective completed (engine thread): release the stream and the
 * kernel, then hand the completion on as a posted call's would be. */
static void stream_op_done(void *user, dfccl_status_t status)
{
    stream_op_t *op = user;
    struct dfccl_streams *s = op->owner;

    __atomic_store_n(&s->gates[op->gate], op->value, __ATOMIC_RELEASE);
    __atomic_store_n(&s->busy[op->gate], 0, __ATOMIC_RELEASE);
    stream_unhold(op->gpu);
    if (op->args.callback != NULL) op->args.callback(op->args.user, status);
    else if (dfccl_cqueue_push(&s->ctx->complete, op->args.user, status) != DFCCL_OK)
        dfccl_error("completion of a stream-ordered %s lost: out of memory",
                    dfccl_coll_type_name(op->args.type));
    free(op->counts);
    free(op);
}

/* Posts an op whose event completed (the stream thread, no lock held). */
static void stream_op_post(stream_op_t *op)
{
    dfccl_coll_args_t a = op->args;
    dfccl_comm_t *comm = op->comm;
    dfccl_status_t status;

    cudaEventDestroy(op->ready);
    a.user = op;
    a.callback = stream_op_done;
    status = dfccl_gpu_post_ordered(comm, &a);
    dfccl_comm_release(comm);   /* the collective holds it now, if posted */
    if (status != DFCCL_OK) {
        dfccl_error("comm %#llx: a stream-ordered %s was not posted: %s",
                    (unsigned long long)comm->key, dfccl_coll_type_name(a.type),
                    dfccl_status_string(status));
        stream_op_done(op, status);   /* the stream must not wait for ever */
    }
}

/* At exit without the context's close (util/exit_park.h). */
static void stream_wake_at_exit(void *arg)
{
    struct dfccl_streams *s = arg;

    pthread_mutex_lock(&s->lock);
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->lock);
}

static void *stream_thread_main(void *arg)
{
    struct dfccl_streams *s = arg;
    struct timespec nap = { 0, (long)s->ctx->config.gpu_stream_poll_ns };
    uint64_t stop_ns = 0;   /* when the context began to go, with ops still waiting */

    /* naps as long as the knob says: Linux lets a thread's sleep overrun
     * by its timer slack, 50 us unless set, more than the default nap */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    cudaSetDevice(s->device);
    pthread_mutex_lock(&s->lock);
    while (!s->stop || s->head != NULL) {
        const dfccl_comm_t *blocked[64];
        int nblocked = 0, overflow = 0;
        stream_op_t **link = &s->head, *prev = NULL;

        if (dfccl_exiting()) {   /* the CUDA runtime goes next */
            pthread_mutex_unlock(&s->lock);
            dfccl_exit_park();
        }
        if (s->head == NULL) {
            pthread_cond_wait(&s->wake, &s->lock);
            continue;
        }
        while (*link != NULL) {
            stream_op_t *op = *link;
            int comm_blocked = overflow;
            cudaError_t e;
            for (int i = 0; i < nblocked && !comm_blocked; i++) comm_blocked = blocked[i] == op->comm;
            e = comm_blocked ? cudaErrorNotReady : cudaEventQuery(op->ready);
            if (e == cudaErrorNotReady) {   /* later ops of its communicator wait for it */
                if (!comm_blocked && nblocked < 64) blocked[nblocked++] = op->comm;
                else if (!comm_blocked) overflow = 1;
                prev = op;
                link = &op->next;
                continue;
            }
            *link = op->next;
            if (s->tail == op) s->tail = prev;
            pthread_mutex_unlock(&s->lock);
            if (e != cudaSuccess) {   /* the stream's earlier work faulted */
                dfccl_error("a stream-ordered %s fails: its stream's earlier work failed: %s",
                            dfccl_coll_type_name(op->args.type), gpu_err(e));
                cudaEventDestroy(op->ready);
                dfccl_comm_release(op->comm);
                stream_op_done(op, DFCCL_ERR_SYSTEM);
            } else {
                stream_op_post(op);
            }
            pthread_mutex_lock(&s->lock);
            link = &s->head;   /* the list may have changed meanwhile */
            prev = NULL;
            nblocked = overflow = 0;
        }
        if (s->head != NULL && s->stop && stop_ns == 0) stop_ns = dfccl_now_ns();
        if (s->head != NULL && stop_ns != 0 &&
            dfccl_now_ns() - stop_ns > (uint64_t)(s->ctx->config.timeout_sec * 1e9)) {
            /* shutting down, and a stream never reached its collective:
             * fail it (its gate released) rather than wait for ever */
            stream_op_t *op = s->head;
            s->head = op->next;
            if (s->tail == op) s->tail = NULL;
            pthread_mutex_unlock(&s->lock);
            cudaEventDestroy(op->ready);
            dfccl_comm_release(op->comm);
            stream_op_done(op, DFCCL_ERR_SHUTDOWN);
            pthread_mutex_lock(&s->lock);
            continue;
        }
        if (s->head != NULL) {
            pthread_mutex_unlock(&s->lock);
            if (nap.tv_nsec > 0) nanosleep(&nap, NULL);
            else sched_yield();
            pthread_mutex_lock(&s->lock);
        }
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* The context's stream side, made on first use (under gpu_lock). */
static dfccl_status_t streams_get(dfccl_context_t *ctx, struct dfccl_streams **s_p)
{
    struct dfccl_streams *s = __atomic_load_n(&gpu_ctx_of(ctx)->streams, __ATOMIC_ACQUIRE);
    enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    void *fn = NULL, *dev = NULL;
    cudaError_t e;

    if (s != NULL) {
        *s_p = s;
        return DFCCL_OK;
    }
    pthread_mutex_lock(&gpu_ctx_of(ctx)->lock);
    if ((s = gpu_ctx_of(ctx)->streams) != NULL) {
        pthread_mutex_unlock(&gpu_ctx_of(ctx)->lock);
        *s_p = s;
        return DFCCL_OK;
    }
    if ((s = calloc(1, sizeof(*s))) == NULL) {
        pthread_mutex_unlock(&gpu_ctx_of(ctx)->lock);
        return DFCCL_ERR_NO_MEMORY;
    }
    s->ctx = ctx;
    cudaGetDevice(&s->device);
    e = cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &fn, 12000, cudaEnableDefault,
                                         &found);
    if (e != cudaSuccess || found != cudaDriverEntryPointSuccess) {
        dfccl_error("stream-ordered collectives need cuStreamWaitValue32, which this CUDA driver"
                    " does not offer");
        cudaGetLastError();
        free(s);
        pthread_mutex_unlock(&gpu_ctx_of(ctx)->lock);
        return DFCCL_ERR_UNSUPPORTED;
    }
    s->wait_value = (stream_wait_value_fn_t)fn;
    if ((e = cudaHostAlloc((void **)&s->gates, STREAM_GATES * sizeof(uint32_t),
                           cudaHostAllocMapped | cudaHostAllocPortable)) != cudaSuccess ||
        (e = cudaHostGetDevicePointer(&dev, (void *)s->gates, 0)) != cudaSuccess) {
        dfccl_error("stream-ordered collectives: no mapped host memory: %s", gpu_err(e));
        if (s->gates != NULL) cudaFreeHost((void *)s->gates);
        free(s);
        pthread_mutex_unlock(&gpu_ctx_of(ctx)->lock);
        return DFCCL_ERR_SYSTEM;
    }
    memset((void *)s->gates, 0, STREAM_GATES * sizeof(uint32_t));
    s->gates_dev = (unsigned long long)(uintptr_t)dev;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    if (pthread_create(&s->thread, NULL, stream_thread_main, s) != 0) {
        cudaFreeHost((void *)s->gates);
        free(s);
        pthread_mutex_unlock(&gpu_ctx_of(ctx)->lock);
        return DFCCL_ERR_SYSTEM;
    }
    s->exit_entry = dfccl_exit_guard_add(stream_wake_at_exit, s);
    __atomic_store_n(&gpu_ctx_of(ctx)->streams, s, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&gpu_ctx_of(ctx)->lock);
    *s_p = s;
    return DFCCL_OK;
}

dfccl_status_t dfccl_coll_post_stream(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                      void *stream)
{
    struct dfccl_streams *s;
    stream_op_t *op;
    dfccl_status_t status;
    cudaError_t e;
    size_t total;
    uint64_t ticket;
    int r;

    if (comm == NULL || args == NULL) return DFCCL_ERR_INVALID_PARAM;
    if ((status = dfccl_comm_usable(comm)) != DFCCL_OK) return status;
    if (gpu_comm_of(comm) == NULL) return DFCCL_ERR_UNSUPPORTED;   /* GPU communicators only */
    /* never staged: a copy out would have to be stream-ordered too */
    if (args->buffers != DFCCL_BUFFERS_NATIVE && args->buffers != DFCCL_BUFFERS_DEVICE)
        return DFCCL_ERR_UNSUPPORTED;
    if ((status = dfccl_coll_check_args(comm, args, &total)) != DFCCL_OK) return status;
    if ((status = streams_get(comm->context, &s)) != DFCCL_OK) return status;
    if ((op = calloc(1, sizeof(*op))) == NULL) return DFCCL_ERR_NO_MEMORY;
    op->owner = s;
    op->gpu = gpu_ctx_of(comm->context)->gpu;
    op->args = *args;
    if (args->type == DFCCL_COLL_REDUCE_SCATTER) {
        if ((op->counts = malloc(sizeof(size_t) * (size_t)comm->size)) == NULL) {
            free(op);
            return DFCCL_ERR_NO_MEMORY;
        }
        memcpy(op->counts, args->counts, sizeof(size_t) * (size_t)comm->size);
        op->args.counts = op->counts;
    }
    if ((status = stream_hold(op->gpu, comm->context->config.timeout_sec)) != DFCCL_OK) {
        free(op->counts);
        free(op);
        return status;
    }
    pthread_mutex_lock(&s->lock);
    ticket = s->next_ticket;
    op->gate = (uint32_t)(ticket % STREAM_GATES);
    op->value = (uint32_t)(ticket / STREAM_GATES) + 1;
    if (__atomic_load_n(&s->busy[op->gate], __ATOMIC_ACQUIRE)) {
        pthread_mutex_unlock(&s->lock);
        dfccl_error("more than %u stream-ordered collectives enqueued and not complete",
                    STREAM_GATES);
        stream_unhold(op->gpu);
        free(op->counts);
        free(op);
        return DFCCL_ERR_NO_MEMORY;
    }
    if ((e = cudaEventCreateWithFlags(&op->ready, cudaEventDisableTiming)) != cudaSuccess ||
        (e = cudaEventRecord(op->ready, (cudaStream_t)stream)) != cudaSuccess ||
        (r = s->wait_value((cudaStream_t)stream, s->gates_dev + op->gate * sizeof(uint32_t),
                           op->value, CU_STREAM_WAIT_VALUE_GEQ)) != 0) {
        pthread_mutex_unlock(&s->lock);
        dfccl_error("comm %#llx: cannot order a %s on the stream: %s",
                    (unsigned long long)comm->key, dfccl_coll_type_name(args->type),
                    e != cudaSuccess ? gpu_err(e) : "cuStreamWaitValue32 failed");
        if (op->ready != NULL) cudaEventDestroy(op->ready);
        stream_unhold(op->gpu);
        free(op->counts);
        free(op);
        return DFCCL_ERR_SYSTEM;
    }
    s->next_ticket++;
    __atomic_store_n(&s->busy[op->gate], 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&comm->refs, 1, __ATOMIC_ACQ_REL);
    op->comm = comm;
    if (s->tail != NULL) s->tail->next = op;
    else s->head = op;
    s->tail = op;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    return DFCCL_OK;
}

/* At context destruction, before the GPU side goes: what was enqueued is
 * posted (or fails) first. */
void dfccl_streams_stop(dfccl_context_t *ctx)
{
    struct dfccl_streams *s = gpu_ctx_of(ctx)->streams;

    if (s == NULL) return;
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    dfccl_exit_guard_remove(s->exit_entry);
    s->exit_entry = NULL;
}

/* ... and after it went (its last completions have released their gates).
 * The gates stay mapped: a stream may not have read its gate yet; they go
 * with the process. */
void dfccl_streams_free(dfccl_context_t *ctx)
{
    struct dfccl_streams *s = gpu_ctx_of(ctx)->streams;

    if (s == NULL) return;
    gpu_ctx_of(ctx)->streams = NULL;
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->wake);
    free(s);
}
