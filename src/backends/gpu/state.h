/*
 * state.h - the GPU backend's host-side state, shared by the files of
 * src/backends/gpu: the backend (dfccl_gpu_t), its jobs, its communicators
 * and the peers' buffers it maps, with the helpers all of them use. The
 * functions each file offers the others are declared in its own header
 * (backend.h, jobs.h, proxy.h, direct.h, ...).
 */
#ifndef DFCCL_GPU_STATE_H
#define DFCCL_GPU_STATE_H

#include <pthread.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "engine/internal.h"
#include "transport/shm.h"
#include "core/exec_cpu.h"
#include "backends/gpu/gpu_shared.h"
#include "backends/gpu/conn_plan.h"
#include "backends/gpu/plan_pool.h"
#include "backends/gpu/plan_files.h"

/* The public knob table cannot see gpu_shared.h: its bounds must stay the
 * backend's. */
_Static_assert(DFCCL_CONFIG_GPU_CHANNELS_MAX == DFCCL_GPU_MAX_CHANNELS,
               "gpu_channels' bound is not the daemon kernel's most blocks");
_Static_assert(DFCCL_CONFIG_GPU_LL_BYTES_MAX == DFCCL_GPU_LL_MAX_BYTES,
               "gpu_ll_bytes' bound is not the LL path's most bytes");

/* Peers' buffers stay mapped for later calls (mapping costs far more than
 * a call's handshake), up to this many allocations per peer; the least
 * recently used mapping not in use goes first. */
#define GPU_IPC_MAPS_PER_PEER 16

/* cuMemGetAddressRange_v2, from the driver through the runtime (the engine
 * does not link libcuda): the allocation around a pointer. */
typedef int (*gpu_get_range_fn_t)(unsigned long long *base, size_t *size, unsigned long long ptr);
/* cuIpcGetMemHandle, the same way: unlike the runtime's, its failure does
 * not touch the application thread's last-error state. */
typedef int (*gpu_get_handle_fn_t)(dfccl_gpu_ipc_handle_t *handle, unsigned long long ptr);

/* One peer allocation mapped into this process. */
typedef struct gpu_ipc_map {
    dfccl_gpu_ipc_handle_t handle;
    uint64_t               alloc;      /* its address in the peer's process */
    char                  *base;       /* here; NULL: a free entry */
    uint64_t               last_use;
    int                    refs;       /* collectives in flight using it (atomic) */
} gpu_ipc_map_t;

typedef struct gpu_job {
    struct gpu_job   *next;
    dfccl_call_t     *coll;        /* the engine's record (comm reference, user, stats) */
    uint64_t          ticket;
    char             *in;          /* direct: our input (recvbuf's block when in place) */
    int               pinned;      /* direct: the proxy is answering for it (lock) */
    int               finished;    /* completed while pinned: the proxy frees it (lock) */
    int               nmaps;       /* direct: the peer mappings it uses */
    uint64_t          posted_ns;   /* trace: monotonic clock at the post, */
    uint64_t          published_ns; /* and when it entered the submission queue */
    gpu_ipc_map_t    *maps[2 * DFCCL_GPU_ALL_PEER_RANKS];
    /* A plan longer than the entry holds (plan_pool.h): its steps here,
     * owned by the job unless a prepared collective's, and in device memory
     * once uploaded; it may enter launches from min_launch on. */
    dfccl_step_t     *plan_steps;
    uint32_t          plan_nsteps;
    int               plan_owned;
    gpu_plan_buf_t   *plan_buf;
    uint64_t          min_launch;
    dfccl_gpu_desc_t  desc;        /* what goes into the submission queue */
} gpu_job_t;

typedef struct gpu_watch gpu_watch_t;

typedef struct dfccl_gpu_comm {
    int                index;      /* in the device communicator table; -1 if none */
    int                ready;
    dfccl_status_t     failed;     /* set-up outcome when not ready */
    char              *region;     /* our inbox and incoming FIFOs */
    size_t             region_bytes;
    cudaIpcMemHandle_t handle;
    char             **peer_base;  /* mapped peers' regions, per rank (NULL: not mapped):
                                      every rank of the node where the all-peer paths
                                      run, else the ring's next rank on our node */
    gpu_ipc_map_t     *maps;       /* direct: GPU_IPC_MAPS_PER_PEER per peer (proxy thread) */
    unsigned           nchannels;  /* the fewest daemon blocks of its ranks: its parts at most */
    uint64_t           first_launch;   /* under the backend's sq.lock: the first launch that
                                          began after the peers' memory was mapped */
    struct dfccl_gpu_comm *next_dead;
    /* Its connections (conn_plan.h), alike on all ranks: the ring's
     * neighbours node by node (however ranks are numbered, the ring crosses
     * into each node once), whether the all-peer paths run, and the
     * neighbours on other nodes, whose FIFOs live in pinned, mapped host
     * memory that the proxy thread moves over the network (net_side.c). */
    gpu_conn_plan_t    conn;
    /* The plan files it runs (plan_files.h), alike on all ranks: none
     * unless all offer the same and their connections fit (nplans 0). */
    const dfccl_plan_file_t **plans;
    int                nplans;
    gpu_plan_peers_t   plan_peers;     /* theirs, which conn was made with */
    gpu_plan_peers_t   plan_senders;   /* every plan of its size: whose FIFOs each
                                          rank's region holds (set-up only) */
    int               *node;       /* each rank's node, from 0 (size entries), then
                                      topo's local, order and pos (size each) */
    dfccl_topo_t       topo;       /* where the ranks are (core/plan.h), for the plans */
    void              *setup_scratch;   /* begin to connect: room to group the nodes */
    int                one_device; /* every rank on our GPU (the table entry's) */
    struct gpu_net_side *net;      /* NULL: both ring neighbours on this node */
    int                watch_status;  /* the watch failed it: PEER_FAILED or MISMATCH, else
                                         0 (atomic) */
    int                in_flight;  /* its collectives posted and not completed (atomic):
                                      the watch looks at those that have some */
    dfccl_shm_t        board_seg;  /* our board (core/board.h): the identity of each
                                      collective we post, for the node's peers */
    dfccl_board_t     *board;
    dfccl_comm_t      *comm;       /* while watched (peer_watch.h): from ready to release */
    struct dfccl_gpu_comm *watch_next;   /* g->watch.live, under dead.lock */
    struct gpu_watch  *watch;      /* what the watch looks at on our node */
    dfccl_gpu_comm_dev_t *dev_pending;   /* spanning: the table entry until the links are
                                            open (set-up thread) */
} dfccl_gpu_comm_t;

/* A GPU communicator's part (comm->backend). */
static inline dfccl_gpu_comm_t *gpu_comm_of(const dfccl_comm_t *comm)
{
    return (dfccl_gpu_comm_t *)comm->backend;
}

/* The backend. Its parts are grouped by who may touch them: a field is
 * read or written only as its group's comment says. */
typedef struct dfccl_gpu {
    /* Set by gpu_create before the proxy thread starts; read by any thread
     * without a lock. The pointers are fixed, not what they point to: the
     * submission entries and LL summaries are written under sq.lock, the
     * completion rings read under drain.lock, the direct path's requests
     * and replies used by the proxy thread. */
    struct {
        dfccl_context_t      *ctx;
        int                   device;
        unsigned              blocks, threads;
        cudaStream_t          stream;       /* the daemon kernel */
        cudaStream_t          copy_stream;  /* set-up copies, never behind the kernel */
        cudaEvent_t           exited;
        dfccl_gpu_ctrl_t     *ctrl;         /* pinned, mapped */
        dfccl_gpu_desc_t     *descs;
        dfccl_gpu_ll_head_t  *ll_heads;
        dfccl_gpu_cqe_t      *cq;           /* blocks rings of DFCCL_GPU_SQ_DEPTH entries */
        dfccl_gpu_direct_req_t   *direct_req;     /* pinned, mapped */
        dfccl_gpu_direct_reply_t *direct_reply;
        gpu_get_range_fn_t    get_range;    /* NULL: direct collectives fall back to the ring */
        gpu_get_handle_fn_t   get_handle;
        pthread_t             proxy_thread; /* joined by dfccl_gpu_destroy */
        struct dfccl_exit_entry *proxy_exit;  /* its entry in util/exit_park.h */
    } fixed;
    /* The kernel's parameter, device views: set by gpu_create like `fixed`,
     * but launch_id changes under sq.lock (the proxy thread, at a launch). */
    dfccl_gpu_env_t           env;
    /* Under sq.lock: the submission queue, the backlog in front of it, and
     * the kernel's run state. */
    struct {
        pthread_mutex_t       lock;
        pthread_cond_t        wake;         /* the proxy thread's idle wait */
        int                   stop;
        uint64_t              next_ticket;
        gpu_job_t            *slot_job[DFCCL_GPU_SQ_DEPTH];
        gpu_job_t            *backlog, *backlog_tail;
        uint64_t              in_flight;    /* submitted or backlogged, not completed */
        unsigned char         comm_used[DFCCL_GPU_MAX_COMMS];
        int                   kernel_running;   /* launched, not yet seen to exit */
        int                   broken;       /* the kernel faulted, or a held collective's wait
                                               failed: the backend is unusable. Set under the
                                               lock (atomic), read unlocked as a hint; no job
                                               enters and no kernel is launched once it is set */
    } sq;
    /* Under drain.lock, taken by the proxy or a polling caller: the
     * completion rings' heads and the latency trace's records. */
    struct {
        pthread_mutex_t       lock;
        uint64_t              cq_head[DFCCL_GPU_MAX_CHANNELS];   /* per block's completion ring */
        struct gpu_trace_rec *trace_recs;   /* trace.c (env.trace) */
        size_t                trace_n;
    } drain;
    /* Under dead.lock, not sq.lock: released communicators may arrive from
     * inside a completion, under sq.lock. The proxy thread frees them; it
     * looks whether there are any with an atomic load, without the lock. */
    struct {
        pthread_mutex_t       lock;
        dfccl_gpu_comm_t     *list;         /* released communicators to free */
    } dead;
    /* The proxy thread's alone, but for what a field says. */
    struct {
        int                   launched;
        uint64_t              launch_ticket;   /* written under sq.lock */
        uint64_t              exit_ns, backoff_ns;
        uint64_t              exit_checked_ns;   /* gpu_exit_check_due */
        int                   relaunch_now; /* launch without the backoff (atomic: submitters
                                               releasing a held collective set it too) */
        uint64_t              issued;       /* atomic: the launch whose cudaLaunchKernel
                                               returned (stream.c waits for it) */
    } proxy;
    /* The direct path's bookkeeping (direct.c): the proxy thread's alone. */
    struct {
        uint64_t              served[DFCCL_GPU_SQ_DEPTH];   /* request tags answered */
        uint64_t              held[DFCCL_GPU_SQ_DEPTH];     /* answers waiting for the
                                                               kernel to leave */
        int                   nheld;
        uint64_t              map_clock;
        char                **to_close;     /* unmapped while the kernel is out */
        size_t                nclose, close_cap;
    } direct;
    /* Staging memory (stage.c): under stage.lock. */
    struct {
        pthread_mutex_t       lock;
        struct gpu_stage_block *blocks;     /* lent or free */
        size_t                idle_bytes;
        int                   trim;         /* idle memory over the limit: the proxy frees
                                               some while the kernel is out (atomic: the proxy
                                               reads it without the lock) */
    } stage;
    /* The communicators' network sides (net_side.c). sides: those not yet
     * freed, open or closed (atomic; the proxy pumps the net while there
     * are any); retired: closed ones whose links may still use their
     * memory, under dead.lock (the proxy frees them once released);
     * guarded: the net's progress guard is ours (slots in device memory). */
    struct {
        int                   sides;
        struct gpu_net_side  *retired;
        int                   guarded;
    } net;
    /* The communicators the proxy watches (peer_watch.h): under dead.lock. */
    struct {
        struct dfccl_gpu_comm *live;
        uint64_t              watched_ns;   /* the proxy thread's: the watch's last look */
    } watch;
    /* Plans too long for a submission entry (plan_pool.h). */
    gpu_plan_pool_t           plans;
    /* Written by dfccl_gpu_comm_connect without a lock: the residency
     * warning, once per process. */
    int                       crowd_warned;
} dfccl_gpu_t;

/* The calling thread's current device may be another (the application's,
 * or none on the progress hook's thread): the engine's device is made
 * current around driver and runtime calls that act on it. */
static inline int gpu_device_enter(const dfccl_gpu_t *g)
{
    int current = -1;
    cudaGetDevice(&current);
    if (current != g->fixed.device) cudaSetDevice(g->fixed.device);
    return current;
}

static inline void gpu_device_leave(const dfccl_gpu_t *g, int previous)
{
    if (previous >= 0 && previous != g->fixed.device) cudaSetDevice(previous);
}

/* Copies n bytes (kind: cudaMemcpyDefault where either side may be either)
 * on the set-up stream, which never waits behind the daemon kernel, and
 * waits for it; the engine's device current. */
static inline cudaError_t gpu_copy_now(const struct dfccl_gpu *g, void *to, const void *from,
                                       size_t n, enum cudaMemcpyKind kind)
{
    cudaError_t e = cudaMemcpyAsync(to, from, n, kind, g->fixed.copy_stream);
    return e == cudaSuccess ? cudaStreamSynchronize(g->fixed.copy_stream) : e;
}

/* Asks the running kernel to leave (the proxy launches it again at once).
 * On the proxy thread or under lock, where launch_id cannot change. */
static inline void gpu_kernel_yield(dfccl_gpu_t *g)
{
    uint64_t id = g->env.launch_id, cur = __atomic_load_n(&g->fixed.ctrl->stop, __ATOMIC_ACQUIRE);
    while (cur < id && !__atomic_compare_exchange_n(&g->fixed.ctrl->stop, &cur, id, 0,
                                                    __ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE))
        ;
}

/* Stream-ordered collectives hold the kernel (stream.c): an application
 * stream waits for one, and the kernel must not be asked to leave. */
static inline int gpu_kernel_held(dfccl_gpu_t *g)
{
    return __atomic_load_n(&g->fixed.ctrl->hold, __ATOMIC_ACQUIRE) != 0;
}

static inline const char *gpu_err(cudaError_t e)
{
    return cudaGetErrorString(e);
}

/* The backend's part of a context (its context_open makes it): the GPU
 * side, made on the first GPU communicator, and the stream side, on the
 * first stream-ordered collective, both under lock. */
typedef struct dfccl_gpu_ctx {
    pthread_mutex_t       lock;
    struct dfccl_gpu     *gpu;       /* NULL until the first GPU communicator (atomic) */
    struct dfccl_streams *streams;   /* NULL until the first stream-ordered collective */
} dfccl_gpu_ctx_t;

static inline dfccl_gpu_ctx_t *gpu_ctx_of(const dfccl_context_t *ctx)
{
    return (dfccl_gpu_ctx_t *)ctx->backend_state[DFCCL_BACKEND_GPU];
}

/* The backend's entry points, across its files */
dfccl_status_t dfccl_gpu_submit(dfccl_call_t *coll, const dfccl_coll_args_t *args,
                                int sync_legacy);
dfccl_status_t dfccl_gpu_post(dfccl_comm_t *comm, const dfccl_coll_args_t *args);
/* ... a collective its stream already ordered (stream.c) */
dfccl_status_t dfccl_gpu_post_ordered(dfccl_comm_t *comm, const dfccl_coll_args_t *args);
/* Persistent collectives (backend_ops.h): the algorithm, channels and ring
 * plan chosen once; each start copies them into a job and submits it. */
dfccl_status_t dfccl_gpu_prepare(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                 struct dfccl_coll **tmpl_p, size_t *bytes_p);
dfccl_status_t dfccl_gpu_start(dfccl_comm_t *comm, const struct dfccl_coll *tmpl, size_t bytes,
                               const dfccl_coll_args_t *args);
/* stream.c: the thread that posts stream-ordered collectives, stopped
 * (what was enqueued posted or failed) before the GPU side goes */
void dfccl_streams_stop(dfccl_context_t *context);
void dfccl_streams_free(dfccl_context_t *context);   /* after the GPU side went */
void dfccl_gpu_comm_release(dfccl_comm_t *comm);
void dfccl_gpu_destroy(dfccl_context_t *context);
void dfccl_gpu_poll(dfccl_context_t *context);   /* completions, without the proxy */

dfccl_status_t dfccl_gpu_context_open(dfccl_context_t *ctx, void **state);
void dfccl_gpu_context_close(dfccl_context_t *ctx, void *state);

#endif
