/* internal.h - the engine's objects, shared by its host-side files. */
#ifndef DFCCL_INTERNAL_H
#define DFCCL_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include "engine/backend_ops.h"
#include "engine/board.h"
#include "include/dfccl.h"
#include "backends/host/exec_host.h"
#include "backends/host/host_comm.h"
#include "core/fifo.h"
#include "core/plan.h"
#include "engine/plan_set.h"
#include "backends/host/queue.h"
#include "backends/host/host_sched.h"
#include "core/sched_policy.h"
#include "transport/shm.h"

static inline void dfccl_config_budgets(const dfccl_config_t *cfg, dfccl_sched_budgets_t *b)
{
    b->head_ns    = cfg->budget_head_ns;
    b->initial_ns = cfg->budget_ns;
    b->min_ns     = cfg->budget_min_ns;
    b->max_ns     = cfg->budget_max_ns;
}

/* One collective as the daemon sees it. */
typedef struct dfccl_coll {
    struct dfccl_coll *next;        /* queue link */
    dfccl_comm_t      *comm;        /* holds a reference */
    dfccl_coll_type_t  type;
    uint64_t           seq;         /* per communicator, identical on all ranks */
    int                priority;
    size_t             total_count; /* elements handled by this rank's plan */
    void              *user;
    void             (*callback)(void *user, dfccl_status_t status);   /* NULL: queued */
    dfccl_exec_t       exec;        /* plan interpretation and saved context */
    uint64_t           last_visit_ns; /* end of its last turn; 0 until first runnable */
    uint64_t           blocked_ns;    /* watchdog: time blocked since its last progress */
    uint64_t           budget_ns;   /* adaptive wait allowed per turn */
    dfccl_ident_t      ident;       /* what it is, as its peers see it on our board */
    int                marker;      /* a call rejected locally: holds its sequence number
                                       in the communicator's order, moves nothing */
    int                checked;     /* the sending peer's identity matched */
    uint64_t           next_live_check_ns; /* blocked time at which peers' pids are checked */
    dfccl_algo_t       algo;
    const char        *plan_name;   /* the plan file it runs, or NULL (built-in algo) */
    int                crosses;     /* its plan uses a link to another node */
    int                oneshot;     /* runs the one-shot (oneshot.h), not a plan */
    dfccl_oneshot_run_t shot;       /* ... and its saved context */
    dfccl_step_t       steps[];     /* the plan */
} dfccl_coll_t;

typedef struct dfccl_comm_setup dfccl_comm_setup_t;   /* comm.c */

struct dfccl_comm {
    dfccl_context_t *context;
    int              rank;
    int              size;
    uint64_t         key;
    uint64_t         node_label;    /* the caller's, or 0 */
    const dfccl_backend_ops_t *ops;
    dfccl_comm_setup_t *setup;      /* while the set-up runs */
    dfccl_status_t   setup_status;  /* DFCCL_INPROGRESS, then its agreed outcome (atomic) */
    uint64_t         next_seq;      /* posting thread side */
    uint64_t         next_run_seq;  /* daemon side: the collective that may use the FIFOs */
    int              refs;          /* user + in-flight collectives (atomic) */
    int              broken;        /* a collective failed: counters are inconsistent (atomic;
                                       the status that broke it) */
    dfccl_shm_t      recv_seg;      /* this rank's board, then its incoming node FIFOs */
    dfccl_board_t   *board;         /* ours: in recv_seg, or board_local on one rank */
    dfccl_board_t  **peer_boards;   /* every rank's, ours included (size entries): mapped
                                       on this node, mirrored over a link, or NULL (another
                                       node's rank we have no link to) */
    dfccl_board_t    board_local;
    dfccl_host_t    *host;          /* host communicators: topology and connections */
    struct dfccl_gpu_comm *gpu;     /* GPU communicators only */
};

struct dfccl_context {
    dfccl_config_t   config;
    dfccl_queue_t    submit;        /* application threads -> daemon */
    dfccl_cqueue_t   complete;      /* scheduler -> application threads */
    dfccl_sched_t    sched;         /* the host scheduler: daemon thread or a waiting caller */
    pthread_t        daemon;
    int              daemon_started;
    pthread_mutex_t  gpu_lock;      /* creation of the GPU side */
    pthread_mutex_t  net_lock;      /* creation of the network side */
    dfccl_net_t     *net;           /* NULL until a communicator spans nodes (atomic) */
    struct dfccl_gpu *gpu;          /* NULL until the first GPU communicator */
    struct dfccl_streams *streams;  /* NULL until the first stream-ordered collective */
    dfccl_plan_set_t plans;         /* plan_dir's plan files */
};

void dfccl_comm_release(dfccl_comm_t *comm);
/* coll.c: a call's arguments checked (total: elements of this rank's plan),
 * and the engine's record of it, with the ring plan for the host executor
 * when with_plan (no sequence number, no reference on the communicator
 * yet). */
dfccl_status_t dfccl_coll_check_args(const dfccl_comm_t *comm, const dfccl_coll_args_t *a,
                                     size_t *total);
dfccl_status_t dfccl_coll_new(dfccl_comm_t *comm, const dfccl_coll_args_t *args, size_t total,
                              int with_plan, dfccl_coll_t **coll_p);
/* A record to run, copied from one that never runs (bytes: the record and
 * its steps; its plan then points at the copy's own steps), with this
 * call's completion owner and priority; NULL when out of memory. The
 * plan cache also gives it this call's buffers and callback. */
dfccl_coll_t *dfccl_coll_from_template(const dfccl_coll_t *tmpl, size_t bytes,
                                       const dfccl_coll_args_t *args);
/* Gives coll the communicator's next sequence number and a reference on
 * it (before the hand-over: once submitted, coll may complete and go). */
void dfccl_coll_enter(dfccl_comm_t *comm, dfccl_coll_t *coll, const dfccl_coll_args_t *args);
/* Hands a finished collective's status to its caller: the callback, or the
 * completion queue. */
void dfccl_coll_complete(dfccl_context_t *ctx, const dfccl_coll_t *coll, dfccl_status_t status);
/* host/post_host.c: the host backend's post; DFCCL_OK, or why a post on this
 * host communicator fails at once (it broke here, or a peer broke before
 * this collective). */
dfccl_status_t dfccl_host_post(dfccl_comm_t *comm, const dfccl_coll_args_t *args);
/* ... in two parts: what fails a call at once (a call with bad arguments
 * takes its place as rejected; *total: its elements), then the record and
 * the hand-over of a call that passed them. */
dfccl_status_t dfccl_host_post_checks(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                      size_t *total);
dfccl_status_t dfccl_host_post_checked(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                       size_t total);
/* host/run_now.c: the host backend's run (backend_ops.h). */
dfccl_status_t dfccl_host_run(dfccl_comm_t *comm, const dfccl_coll_args_t *args);
dfccl_status_t dfccl_comm_post_check(dfccl_comm_t *comm);
/* comm.c: DFCCL_OK once the communicator's set-up succeeded; while it runs
 * DFCCL_ERR_INVALID_PARAM, after a failure that failure */
dfccl_status_t dfccl_comm_usable(const dfccl_comm_t *comm);
/* host/plan_cache.c: a planned record for a call, copied from a recent
 * identical call's where there is one (else built, and kept) */
dfccl_status_t dfccl_plan_cache_take(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                     size_t total, dfccl_coll_t **coll_p);
/* ... and its prepared collectives (backend_ops.h) */
dfccl_status_t dfccl_host_prepare(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                  dfccl_coll_t **tmpl_p, size_t *bytes_p);
dfccl_status_t dfccl_host_start(dfccl_comm_t *comm, const dfccl_coll_t *tmpl, size_t bytes,
                                const dfccl_coll_args_t *args);
/* Takes the next place in the communicator's order for a call that moves
 * nothing here (ident: rejected or carried elsewhere); returns its number. */
uint64_t dfccl_coll_post_marker(dfccl_comm_t *comm, dfccl_ident_t *ident);
void dfccl_daemon_start(dfccl_context_t *context);
void *dfccl_daemon_main(void *arg);

/* host/links.c: the context's network side, opened on the first call (host
 * and GPU communicators that span nodes share it); *net stays set. */
dfccl_status_t dfccl_context_net(dfccl_context_t *ctx, dfccl_net_t **net);
/* gpu/: the GPU backend's host side (gpu/none.c without CUDA) */
dfccl_status_t dfccl_gpu_submit(dfccl_coll_t *coll, const dfccl_coll_args_t *args,
                                int sync_legacy);
dfccl_status_t dfccl_gpu_post(dfccl_comm_t *comm, const dfccl_coll_args_t *args);
/* ... a collective its stream already ordered (gpu/stream.c) */
dfccl_status_t dfccl_gpu_post_ordered(dfccl_comm_t *comm, const dfccl_coll_args_t *args);
/* gpu/stream.c: the thread that posts stream-ordered collectives, stopped
 * (what was enqueued posted or failed) before the GPU side goes */
void dfccl_streams_stop(dfccl_context_t *context);
void dfccl_streams_free(dfccl_context_t *context);   /* after the GPU side went */
void dfccl_gpu_comm_release(dfccl_comm_t *comm);
void dfccl_gpu_destroy(dfccl_context_t *context);
void dfccl_gpu_poll(dfccl_context_t *context);   /* completions, without the proxy */

/* watch.c: the daemon's view of its peers (board.h) */
/* Breaks the communicator here (later posts fail at once) and tells the
 * peers why on our board. */
/* The caller's configuration (NULL: defaults) as this library's: knobs past
 * the caller's size take their defaults. DFCCL_ERR_INVALID_PARAM, after an
 * error line, when size or version is not one dfccl_config_init wrote. */
dfccl_status_t dfccl_config_adopt(const dfccl_config_t *config, dfccl_config_t *out);
void dfccl_comm_break(dfccl_comm_t *comm, uint64_t seq, dfccl_status_t status, const char *why);
/* 1 when a peer broke at collective seq or before: "rank R failed #S: why". */
int dfccl_watch_peer_broke(const dfccl_comm_t *comm, uint64_t seq, char *line, size_t len);
/* DFCCL_OK once the sending peer's identity matched (or can no longer be
 * read); DFCCL_INPROGRESS while it has not posted the collective;
 * DFCCL_ERR_MISMATCH (said, and the communicator broken) when it differs. */
dfccl_status_t dfccl_watch_ident(dfccl_coll_t *coll);
/* Says that peer made another call (what: how it differs) and breaks the
 * communicator; returns DFCCL_ERR_MISMATCH. */
dfccl_status_t dfccl_watch_mismatch(dfccl_coll_t *coll, int peer, const dfccl_ident_t *theirs,
                                    const char *what);
/* For a blocked collective: a peer that broke before it, or whose process is
 * gone, fails it (said, and the communicator broken); else DFCCL_OK. */
dfccl_status_t dfccl_watch_peers(dfccl_coll_t *coll);
void dfccl_watch_peers_reset(dfccl_coll_t *coll);
/* The watchdog's diagnosis, with every peer's view; breaks the communicator. */
void dfccl_watch_timeout(dfccl_coll_t *coll, double idle_sec);
void dfccl_watch_install_dump_signal(void);
int  dfccl_watch_dump_requested(void);
void dfccl_watch_dump(const dfccl_coll_t *active);

/* stats.c */
void dfccl_stats_add_posted(dfccl_coll_type_t type);
void dfccl_stats_add_completed(dfccl_coll_type_t type, dfccl_status_t status);
void dfccl_stats_add_bytes(uint64_t bytes);
void dfccl_stats_add_comm(void);
void dfccl_stats_add_net(void);
void dfccl_stats_add_algorithm(unsigned algo);
/* Holder of the host scheduler's lock only: a collective that ended, and
 * one that was posted, ran and ended under the lock (run_now.c). */
void dfccl_stats_add_finished(dfccl_coll_type_t type, dfccl_status_t status, uint64_t bytes);
void dfccl_stats_add_ran(dfccl_coll_type_t type, unsigned algo, dfccl_status_t status,
                         uint64_t bytes);

#endif
