/*
 * dfccl.h - public C API of the dfccl engine.
 *
 * The engine knows nothing of MPI: a caller (the Open MPI component, or a
 * test that simulates ranks) supplies a non-blocking bootstrap allgather,
 * posts collective descriptors to a per-process context and reads
 * completions back.
 *
 *   dfccl_context_create()      one per process: daemon, submission and
 *                               completion queues
 *   dfccl_comm_create_start()   collective over the ranks of a communicator,
 *   dfccl_comm_create_test()    on the host or the GPU backend: the engine
 *                               runs the set-up over the bootstrap callbacks
 *   dfccl_coll_post()           submit; returns at once
 *   dfccl_coll_run()            submit, or run at once for a caller that waits
 *   dfccl_coll_prepare()        check and plan once; dfccl_coll_start() runs
 *   dfccl_context_poll()        drain completions {user cookie, status}
 */
#ifndef DFCCL_H
#define DFCCL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DFCCL_VERSION_MAJOR 0
#define DFCCL_VERSION_MINOR 2

typedef enum {
    DFCCL_OK                = 0,
    DFCCL_INPROGRESS        = 1,   /* not yet done: dfccl_comm_create_test */
    DFCCL_ERR_INVALID_PARAM = -1,
    DFCCL_ERR_NO_MEMORY     = -2,
    DFCCL_ERR_SYSTEM        = -3,  /* an OS call failed (shm, threads) */
    DFCCL_ERR_BOOTSTRAP     = -4,  /* the caller's bootstrap callback failed */
    DFCCL_ERR_TIMEOUT       = -5,  /* a collective made no progress for too long */
    DFCCL_ERR_UNSUPPORTED   = -6,
    DFCCL_ERR_SHUTDOWN      = -7,  /* the context is being destroyed */
    DFCCL_ERR_MISMATCH      = -8,  /* the ranks' calls do not match (kind, count, type, op) */
    DFCCL_ERR_PEER_FAILED   = -9,  /* a peer's process is gone, or its call failed */
    DFCCL_ERR_BROKEN        = -10  /* an earlier collective on this communicator failed */
} dfccl_status_t;

const char *dfccl_status_string(dfccl_status_t status);

/* Element types; MPI's many names map onto these by size and kind. */
typedef enum {
    DFCCL_INT8, DFCCL_UINT8, DFCCL_INT16, DFCCL_UINT16,
    DFCCL_INT32, DFCCL_UINT32, DFCCL_INT64, DFCCL_UINT64,
    DFCCL_FLOAT, DFCCL_DOUBLE,
    DFCCL_BOOL,     /* C _Bool: one byte holding 0 or 1 */
    DFCCL_BYTE,     /* opaque bytes: copies and bitwise ops only */
    DFCCL_FLOAT16,  /* IEEE binary16 (CUDA's __half): sum, prod, min, max */
    DFCCL_BFLOAT16, /* bfloat16 (CUDA's __nv_bfloat16): sum, prod, min, max */
    DFCCL_DTYPE_COUNT
} dfccl_dtype_t;

typedef enum {
    DFCCL_OP_SUM, DFCCL_OP_PROD, DFCCL_OP_MIN, DFCCL_OP_MAX,
    DFCCL_OP_LAND, DFCCL_OP_LOR, DFCCL_OP_LXOR,
    DFCCL_OP_BAND, DFCCL_OP_BOR, DFCCL_OP_BXOR,
    DFCCL_OP_COUNT,
    DFCCL_OP_NONE = DFCCL_OP_COUNT  /* collectives that do not reduce */
} dfccl_op_t;

size_t dfccl_dtype_size(dfccl_dtype_t dtype);
const char *dfccl_dtype_name(dfccl_dtype_t dtype);
const char *dfccl_op_name(dfccl_op_t op);
/* 1 when the engine implements op on dtype, else 0. */
int dfccl_op_supported(dfccl_op_t op, dfccl_dtype_t dtype);

typedef enum {
    DFCCL_COLL_ALLREDUCE,
    DFCCL_COLL_ALLGATHER,
    DFCCL_COLL_REDUCE_SCATTER,
    DFCCL_COLL_TYPE_COUNT
} dfccl_coll_type_t;

const char *dfccl_coll_type_name(dfccl_coll_type_t type);

/*
 * Engine tunables: one field per row of dfccl_knobs.def, which says for each
 * what it does, its default and bounds, and why the default is what it is.
 */
#define DFCCL_KNOB_TYPE_SIZE     size_t
#define DFCCL_KNOB_TYPE_UNSIGNED unsigned
#define DFCCL_KNOB_TYPE_U32      uint32_t
#define DFCCL_KNOB_TYPE_U64      uint64_t
#define DFCCL_KNOB_TYPE_DOUBLE   double
#define DFCCL_KNOB_TYPE_INT      int
#define DFCCL_KNOB_TYPE_BOOL     int
#define DFCCL_KNOB_TYPE_STRING   const char *
/* the GPU side's limits, which bound two knobs */
#define DFCCL_CONFIG_GPU_CHANNELS_MAX 32      /* blocks of the daemon kernel */
#define DFCCL_CONFIG_GPU_LL_BYTES_MAX 16384   /* contribution an LL line set carries */

/* Versioned as NCCL's ncclConfig_t and UCX's parameter structs are:
 * dfccl_config_init sets size (the caller's sizeof) and version; the
 * library reads only the knobs that fit in the caller's size and gives the
 * others their defaults, so a program built against an older header keeps
 * working when knobs are appended. */
#define DFCCL_CONFIG_VERSION 1
typedef struct dfccl_config {
    size_t   size;      /* sizeof(dfccl_config_t) of the caller's header */
    unsigned version;   /* DFCCL_CONFIG_VERSION of the caller's header */
#define DFCCL_KNOB(field, mca, kind, ...) DFCCL_KNOB_TYPE_##kind field;
#define DFCCL_KNOB_FROM_CALLER(field, kind, ...) DFCCL_KNOB_TYPE_##kind field;
#include "dfccl_knobs.def"
} dfccl_config_t;

/* Fills every knob with its default, and size and version. */
void dfccl_config_init(dfccl_config_t *config);

/* Which knobs dfccl_config_check() looks at (the table's group column). */
#define DFCCL_CONFIG_ENGINE 1u   /* used from the context's creation on */
#define DFCCL_CONFIG_GPU    2u   /* used by the GPU side, which starts on first use */

/* DFCCL_OK when every knob of the groups is within its bounds; otherwise
 * DFCCL_ERR_INVALID_PARAM, after one error line per knob out of bounds
 * naming it, its value and what it must be. */
dfccl_status_t dfccl_config_check(const dfccl_config_t *config, unsigned groups);

typedef struct dfccl_context dfccl_context_t;
typedef struct dfccl_comm    dfccl_comm_t;

dfccl_status_t dfccl_context_create(const dfccl_config_t *config,
                                    dfccl_context_t **context_p);
/* config: NULL for the defaults, else one that dfccl_config_init filled
 * first (DFCCL_ERR_INVALID_PARAM when its size or version is not one the
 * library knows). */
/* Stops the daemon; collectives still in flight complete with
 * DFCCL_ERR_SHUTDOWN. Communicators must be destroyed first. */
void dfccl_context_destroy(dfccl_context_t *context);

/*
 * Bootstrap: an allgather over the communicator's ranks, supplied by the
 * caller, which only moves bytes; the engine runs its set-up protocols over
 * it. Non-blocking, so that a program whose ranks create (or first use)
 * several communicators in different orders never waits inside one set-up
 * for a rank that is busy with another:
 *
 *   allgather_start   every rank contributes `bytes` bytes from sendbuf and
 *                     receives size * bytes in recvbuf, rank-ordered; 0 on
 *                     success, *request_p then names the exchange
 *   allgather_test    1 once done, 0 while under way, negative when it
 *                     failed; the request ends with 1 or a failure
 *   allgather_cancel  the engine gives the exchange up (its deadline passed,
 *                     or the communicator is destroyed during set-up); may
 *                     say which peers are missing
 *
 * The engine's buffers are valid only until the exchange ends or is
 * cancelled: a transport that may still touch them after a cancel must
 * work on copies of its own.
 */
typedef struct dfccl_bootstrap {
    int  (*allgather_start)(void *arg, const void *sendbuf, void *recvbuf, size_t bytes,
                            void **request_p);
    int  (*allgather_test)(void *arg, void *request);
    void (*allgather_cancel)(void *arg, void *request);
    void  *arg;
} dfccl_bootstrap_t;

/* Which backend carries a communicator's collectives. */
typedef enum {
    DFCCL_BACKEND_HOST,   /* host buffers, the daemon thread, shared-memory FIFOs */
    DFCCL_BACKEND_GPU,    /* device buffers, the daemon kernel on the calling thread's
                             current CUDA device (created on first use) */
    DFCCL_BACKEND_COUNT
} dfccl_backend_t;

typedef struct dfccl_comm_params {
    int               rank;
    int               size;
    uint64_t          key;        /* identical on every rank; names the comm in
                                     diagnostics and orders collectives */
    dfccl_backend_t   backend;
    dfccl_bootstrap_t bootstrap;
    uint64_t          node;       /* equal on the ranks that share a node
                                     and different elsewhere (the caller's view of
                                     locality, e.g. Open MPI's); 0: the engine tells
                                     nodes apart by host name and boot id */
} dfccl_comm_params_t;

/*
 * Communicator creation, collective over params->size ranks:
 * dfccl_comm_create_start() returns the communicator at once (unless the
 * arguments are wrong or memory ran out), and dfccl_comm_create_test()
 * advances its set-up: DFCCL_INPROGRESS while it runs, DFCCL_OK once it is
 * usable, or the status every rank agreed on when it failed (then destroy
 * it). Two exchanges: each rank's connection details, then each rank's
 * outcome, so that all ranks succeed or all fail. An exchange that does not
 * end within the configured timeout fails the set-up.
 * dfccl_comm_create() does both, waiting.
 */
dfccl_status_t dfccl_comm_create_start(dfccl_context_t *context,
                                       const dfccl_comm_params_t *params,
                                       dfccl_comm_t **comm_p);
dfccl_status_t dfccl_comm_create_test(dfccl_comm_t *comm);
dfccl_status_t dfccl_comm_create(dfccl_context_t *context,
                                 const dfccl_comm_params_t *params,
                                 dfccl_comm_t **comm_p);
/*
 * Communicators without MPI (as NCCL's unique id): one process makes an id
 * (dfccl_unique_id_create) and serves its rendezvous from a thread until
 * the communicator's set-up is over, so it must live that long; the
 * application passes the id's bytes to every rank by any means; each rank
 * then calls dfccl_comm_create_by_id with the same size and its own rank
 * (collective, blocking until the set-up ends, bounded by the timeout).
 * The rendezvous runs over UCX (DFCCL_ERR_UNSUPPORTED in a build without
 * it): a listener on DFCCL_BOOTSTRAP_ADDR when set, else on the first
 * device of UCX_NET_DEVICES with an address, else on the first interface
 * that is up and not loopback (docs/api.md). UCX does not survive fork():
 * make the id in a process that forks no ranks afterwards. An id serves
 * one communicator.
 */
#define DFCCL_UNIQUE_ID_BYTES 128
typedef struct { char internal[DFCCL_UNIQUE_ID_BYTES]; } dfccl_unique_id_t;
dfccl_status_t dfccl_unique_id_create(dfccl_unique_id_t *id);
dfccl_status_t dfccl_comm_create_by_id(dfccl_context_t *context, const dfccl_unique_id_t *id,
                                       int size, int rank, dfccl_backend_t backend,
                                       dfccl_comm_t **comm_p);

/* Local; the communicator's memory goes once its last collective has ended.
 * A set-up still under way is abandoned. */
void dfccl_comm_destroy(dfccl_comm_t *comm);
int  dfccl_comm_rank(const dfccl_comm_t *comm);
int  dfccl_comm_size(const dfccl_comm_t *comm);

/* 1 when the engine was built with the GPU backend and a CUDA device is
 * usable from this process; else 0 and why in `why`. */
int dfccl_gpu_available(char *why, size_t why_len);
/* 1 when the engine was built with its network transport (UCX), which host
 * communicators whose ranks span nodes need; else 0 and why in `why`. */
int dfccl_net_available(char *why, size_t why_len);

/* 1 when the engine was built with the GPU backend (CUDA), whether or not a
 * device is usable: device buffers can be staged through host memory. */
int dfccl_gpu_built(void);

/* Where a call's buffers are (dfccl_coll_args_t.buffers). */
typedef enum {
    DFCCL_BUFFERS_NATIVE = 0,  /* of the kind the communicator's backend carries */
    DFCCL_BUFFERS_HOST,        /* both in host memory */
    DFCCL_BUFFERS_DEVICE,      /* both in device memory */
    DFCCL_BUFFERS_MIXED        /* one in host memory, the other in device memory */
} dfccl_buffers_t;

/* sendbuf == DFCCL_IN_PLACE: the input is already in recvbuf where MPI's
 * MPI_IN_PLACE rules put it. */
#define DFCCL_IN_PLACE ((const void *)1)

typedef struct dfccl_coll_args {
    dfccl_coll_type_t type;
    const void       *sendbuf;
    void             *recvbuf;
    /* ALLREDUCE: elements in each buffer. ALLGATHER: elements each rank
     * contributes. REDUCE_SCATTER: unused, see counts. */
    size_t            count;
    /* REDUCE_SCATTER: size entries, elements each rank receives. Copied. */
    const size_t     *counts;
    dfccl_dtype_t     dtype;
    dfccl_op_t        op;        /* DFCCL_OP_NONE for ALLGATHER */
    int               priority;  /* higher runs first when collectives compete */
    void             *user;      /* returned in the completion */
    /* NULL: the completion is queued for dfccl_context_poll. Else called
     * instead, once, on the engine thread that completes the collective
     * (the daemon, a caller in dfccl_context_drive or dfccl_context_poll,
     * or the GPU side's poller): it must return quickly and must not call
     * dfccl functions. Leave it zero (designated initializers) otherwise. */
    void            (*callback)(void *user, dfccl_status_t status);
    /* Where the buffers are. Buffers of another kind than the ones the
     * communicator's backend carries (host memory for host communicators,
     * device memory for GPU ones) are staged: the engine copies the input
     * into memory of that kind, runs the collective there and copies the
     * result back out before the call completes, which it then does
     * through dfccl_context_poll (a callback too is called from there).
     * Copies to or from device memory need the GPU backend
     * (DFCCL_ERR_UNSUPPORTED without it); stream-ordered calls are never
     * staged. Zero (designated initializers) means DFCCL_BUFFERS_NATIVE. */
    dfccl_buffers_t   buffers;
} dfccl_coll_args_t;

/* Submits a collective. Collectives on one communicator must be posted in
 * the same order on every rank (as MPI requires); across communicators any
 * order is allowed. Returns at once. A post on a communicator whose set-up
 * still runs (dfccl_comm_create_start) is queued and runs, in order, once
 * the set-up ends; if the set-up fails, it completes with that failure
 * (a callback is then called by the thread whose dfccl_comm_create_test,
 * or dfccl_comm_destroy, ended the set-up). */
dfccl_status_t dfccl_coll_post(dfccl_comm_t *comm, const dfccl_coll_args_t *args);

/* For a caller that would wait for the collective at once (a blocking
 * call): posts it as dfccl_coll_post does, or, where the engine can, runs
 * it to its end on the calling thread first. DFCCL_OK: done, with its
 * result in the buffers; no completion is queued and no callback called.
 * DFCCL_INPROGRESS: posted; it completes as a posted call does. Another
 * status: the call failed (its place in the communicator's order is
 * taken, as for a failed post). Host communicators within one node run
 * small calls (the one-shot, knob oneshot_max_bytes) this way when no
 * other collective of the process is pending and caller_drives is on. */
dfccl_status_t dfccl_coll_run(dfccl_comm_t *comm, const dfccl_coll_args_t *args);

/*
 * Prepared collectives: prepare once, start many times (MPI's persistent
 * collectives; frameworks that run the same collective every step).
 * dfccl_coll_prepare checks args (as dfccl_coll_post would), copies them
 * (and counts) and, on host communicators, builds the plan; it is local,
 * moves nothing and takes no place in the communicator's order.
 * dfccl_coll_start submits one run, which completes like a posted call
 * with `user` as its cookie; a start takes its place in the order exactly
 * as a post does, so prepared and posted calls mix in any order the ranks
 * agree on. The buffers are the prepared ones (the caller refills them
 * before a start). A run must complete before the next start, and before
 * dfccl_coll_prepared_free, which gives back what prepare built; the
 * communicator's memory stays until then.
 */
typedef struct dfccl_prepared dfccl_prepared_t;
dfccl_status_t dfccl_coll_prepare(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                  dfccl_prepared_t **prepared_p);
dfccl_status_t dfccl_coll_start(dfccl_prepared_t *prepared, void *user);
void dfccl_coll_prepared_free(dfccl_prepared_t *prepared);

/*
 * Stream-ordered collectives (GPU communicators; stream is a cudaStream_t):
 * the collective starts once the work queued on `stream` before this call
 * is done, and work queued on `stream` after it waits until it completed;
 * the call returns at once, without waiting for the stream. Its completion
 * is also delivered as a posted call's (queue or callback). The engine posts
 * it from a thread of its own when the stream reaches it: collectives of
 * one communicator in the order they were enqueued, those of others
 * independently. Needs stream memory operations (cuStreamWaitValue32);
 * DFCCL_ERR_UNSUPPORTED without them, on host communicators, and in builds
 * without CUDA. At most 4096 enqueued and not yet complete.
 */
dfccl_status_t dfccl_coll_post_stream(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                      void *stream);

/*
 * A call that the caller carries outside the engine (its fallback) on a
 * communicator whose other calls the engine carries: it takes its place in
 * the communicator's order, and returns DFCCL_OK once every rank has
 * declared the same call (type, bytes) carried outside too, so the caller
 * may go ahead. When some rank carries it in the engine, or declares
 * another call, it returns DFCCL_ERR_MISMATCH (and that rank fails too)
 * instead of letting the two routes wait for each other forever; a peer
 * that failed or is gone gives DFCCL_ERR_PEER_FAILED, and no answer within
 * the timeout DFCCL_ERR_TIMEOUT. Blocks the caller meanwhile. GPU
 * communicators: DFCCL_OK at once.
 */
dfccl_status_t dfccl_coll_elsewhere(dfccl_comm_t *comm, dfccl_coll_type_t type, uint64_t bytes);

typedef struct dfccl_completion {
    void          *user;
    dfccl_status_t status;
} dfccl_completion_t;

/* Moves up to max completions out of the completion queue; returns how many.
 * Thread-safe. */
int dfccl_context_poll(dfccl_context_t *context, dfccl_completion_t *out, int max);

/* Sleeps until a completion is queued or timeout_ns passed; returns 1 when
 * the completion queue is not empty. Lets a blocking caller wait without
 * burning a core. */
int dfccl_context_wait(dfccl_context_t *context, uint64_t timeout_ns);

/* Lets a caller that waits for its host collectives run the engine's host
 * scheduler itself (knob caller_drives): for at most max_ns, ending as soon
 * as a completion is queued or nothing is left to run. The collectives then
 * move on the caller's thread without a hand-off to the daemon thread,
 * which stands back while callers drive and resumes shortly after the last
 * one stopped (a rank that stops calling still lets its peers finish).
 * Thread-safe: one thread runs the scheduler at a time, others wait for it.
 * Returns 1 when the completion queue is not empty, 0 when it is, -1 when
 * driving is off (the caller waits with dfccl_context_wait instead). */
int dfccl_context_drive(dfccl_context_t *context, uint64_t max_ns);

/* How a caller waits for its collectives (what the engine's own threads
 * assume of it): first polls for the spin, then alternates its own
 * progress (Open MPI's, say) with dfccl_context_wait or
 * dfccl_context_drive for the sleep or drive below. */
/* A peer on another core answers within a few microseconds: spin this long. */
#define DFCCL_WAIT_CALLER_SPIN_NS 20000ull
/* A caller blocked in MPI keeps Open MPI progressing (a peer's pending
 * point-to-point traffic may need this rank); after the spin it sleeps on
 * the completion queue at most this long between rounds, so the daemon gets
 * the core when ranks outnumber cores. */
#define DFCCL_WAIT_CALLER_SLEEP_NS 100000ull
/* A caller that drives the host scheduler (dfccl_context_drive) gives it
 * back this often to let Open MPI progress, as the sleeping caller does. */
#define DFCCL_WAIT_CALLER_DRIVE_NS DFCCL_WAIT_CALLER_SLEEP_NS
/* A GPU collective needs no core from its caller while it runs, but a sleep
 * costs a thread wake-up of tens of microseconds at its end: spin longer. */
#define DFCCL_WAIT_CALLER_SPIN_GPU_NS 2000000ull

/* A waiting caller polling GPU completions alone yields the core after this
 * long: a small GPU collective completes within it without a system call,
 * and the proxy thread's work (mappings, relaunches) waits at most this. */
#define DFCCL_WAIT_CALLER_GPU_YIELD_NS 20000ull

/* by_algorithm[]'s entries for collectives that ran a plan file (plan_dir)
 * and for those that ran the one-shot within one node. */
#define DFCCL_STATS_PLAN_FILE 3
#define DFCCL_STATS_ONESHOT   4

/* Per-process counters: what the engine really carried. */
typedef struct dfccl_stats {
    uint64_t posted[DFCCL_COLL_TYPE_COUNT];
    uint64_t completed[DFCCL_COLL_TYPE_COUNT];
    uint64_t failed;
    uint64_t bytes_sent;       /* payload bytes pushed into connections */
    uint64_t comms_created;
    uint64_t net_collectives;  /* completed collectives whose plan used a link to another node */
    uint64_t net_bytes_sent;   /* payload bytes sent to other nodes (UCX) */
    uint64_t by_algorithm[5];  /* host collectives planned: ring, hierarchical, recursive
                                  doubling, plan file (DFCCL_STATS_PLAN_FILE, GPU ones
                                  too), one-shot (DFCCL_STATS_ONESHOT) */
} dfccl_stats_t;

void dfccl_stats_get(dfccl_stats_t *stats);

#ifdef __cplusplus
}
#endif
#endif /* DFCCL_H */
