/*
 * state.h - the GPU backend's host-side state, shared by the files of
 * src/engine/gpu: the backend (dfccl_gpu_t), its jobs, its communicators
 * and the peers' buffers it maps, with the helpers all of them use. The
 * functions each file offers the others are declared in its own header
 * (backend.h, jobs.h, proxy.h, direct.h, ...).
 */
#ifndef DFCCL_GPU_STATE_H
#define DFCCL_GPU_STATE_H

#include <pthread.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "internal.h"     /* first: the host's instance of the executor core */
#include "gpu_shared.h"

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
    dfccl_coll_t     *coll;        /* the engine's record (comm reference, user, stats) */
    uint64_t          ticket;
    char             *in;          /* direct: our input (recvbuf's block when in place) */
    int               pinned;      /* direct: the proxy is answering for it (lock) */
    int               finished;    /* completed while pinned: the proxy frees it (lock) */
    int               nmaps;       /* direct: the peer mappings it uses */
    uint64_t          posted_ns;   /* trace: monotonic clock at the post, */
    uint64_t          published_ns; /* and when it entered the submission queue */
    gpu_ipc_map_t    *maps[2 * DFCCL_GPU_MAX_RANKS];
    dfccl_gpu_desc_t  desc;        /* what goes into the submission queue */
} gpu_job_t;

typedef struct dfccl_gpu_comm {
    int                index;      /* in the device communicator table; -1 if none */
    int                ready;
    dfccl_status_t     failed;     /* set-up outcome when not ready */
    char              *region;     /* our inbox and incoming FIFOs */
    size_t             region_bytes;
    cudaIpcMemHandle_t handle;
    char              *peer_base[DFCCL_GPU_MAX_RANKS];   /* mapped peers' regions */
    gpu_ipc_map_t     *maps;       /* direct: GPU_IPC_MAPS_PER_PEER per peer (proxy thread) */
    unsigned           nchannels;  /* the fewest daemon blocks of its ranks: its parts at most */
    uint64_t           first_launch;   /* under the backend's lock: the first launch that began
                                          after the peers' memory was mapped */
    struct dfccl_gpu_comm *next_dead;
} dfccl_gpu_comm_t;

typedef struct dfccl_gpu {
    dfccl_context_t      *ctx;
    int                   device;
    unsigned              blocks, threads;
    int                   crowd_warned;   /* the residency warning, once per process */
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
    dfccl_gpu_env_t       env;          /* device views */
    pthread_t             proxy;
    pthread_mutex_t       lock;
    pthread_cond_t        wake;
    int                   stop;
    /* under lock */
    uint64_t              next_ticket;
    gpu_job_t            *slot_job[DFCCL_GPU_SQ_DEPTH];
    gpu_job_t            *backlog, *backlog_tail;
    uint64_t              in_flight;    /* submitted or backlogged, not completed */
    unsigned char         comm_used[DFCCL_GPU_MAX_COMMS];
    pthread_mutex_t       dead_lock;    /* the dead list alone: released communicators may
                                           arrive from inside a completion, under lock */
    dfccl_gpu_comm_t     *dead;         /* released communicators to free */
    int                   kernel_running;   /* under lock: launched, not yet seen to exit;
                                               env.launch_id changes under lock too */
    int                   broken;       /* the kernel faulted, or a held collective's wait
                                           failed: the backend is unusable. Set under lock
                                           (atomic), read unlocked as a hint; no job enters
                                           and no kernel is launched once it is set */
    pthread_mutex_t       drain_lock;   /* cq_head: the proxy or a polling caller */
    uint64_t              cq_head[DFCCL_GPU_MAX_CHANNELS];   /* per block's completion ring */
    /* proxy thread only */
    int                   launched;
    uint64_t              launch_ticket, exit_ns, backoff_ns;
    uint64_t              exit_checked_ns;   /* gpu_exit_check_due */
    struct gpu_trace_rec *trace_recs;   /* trace.c (env.trace); under drain_lock */
    size_t                trace_n;
    uint64_t              direct_served[DFCCL_GPU_SQ_DEPTH];   /* request tags answered */
    uint64_t              direct_held[DFCCL_GPU_SQ_DEPTH];     /* answers waiting for the
                                                                  kernel to leave */
    int                   nheld;
    int                   relaunch_now; /* launch without the backoff (atomic: submitters
                                           releasing a held collective set it too) */
    uint64_t              map_clock;
    char                **to_close;     /* unmapped while the kernel is out */
    size_t                nclose, close_cap;
    pthread_mutex_t       stage_lock;
    struct gpu_stage_block *stage_blocks;   /* staging memory, lent or free (stage.c) */
    size_t                stage_idle_bytes;  /* under stage_lock */
    int                   stage_trim;   /* idle staging memory over the limit: the proxy frees
                                           some while the kernel is out */
} dfccl_gpu_t;

/* The calling thread's current device may be another (the application's,
 * or none on the progress hook's thread): the engine's device is made
 * current around driver and runtime calls that act on it. */
static inline int gpu_device_enter(const dfccl_gpu_t *g)
{
    int current = -1;
    cudaGetDevice(&current);
    if (current != g->device) cudaSetDevice(g->device);
    return current;
}

static inline void gpu_device_leave(const dfccl_gpu_t *g, int previous)
{
    if (previous >= 0 && previous != g->device) cudaSetDevice(previous);
}

/* Asks the running kernel to leave (the proxy launches it again at once).
 * On the proxy thread or under lock, where launch_id cannot change. */
static inline void gpu_kernel_yield(dfccl_gpu_t *g)
{
    uint64_t id = g->env.launch_id, cur = __atomic_load_n(&g->ctrl->stop, __ATOMIC_ACQUIRE);
    while (cur < id && !__atomic_compare_exchange_n(&g->ctrl->stop, &cur, id, 0, __ATOMIC_SEQ_CST,
                                                    __ATOMIC_ACQUIRE))
        ;
}

static inline const char *gpu_err(cudaError_t e)
{
    return cudaGetErrorString(e);
}

#endif
