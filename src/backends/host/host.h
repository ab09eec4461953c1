/*
 * host.h - the host backend's own objects: its record of a collective, its
 * part of the context (the daemon thread, the submission queue, the
 * scheduler) and of a communicator (host_comm.h), and what its files share.
 */
#ifndef DFCCL_HOST_H
#define DFCCL_HOST_H

#include <pthread.h>
#include "engine/internal.h"
#include "backends/host/exec_host.h"
#include "backends/host/host_comm.h"
#include "backends/host/host_sched.h"
#include "backends/host/oneshot.h"
#include "backends/host/queue.h"

/* One collective as the daemon sees it: the generic fields (engine's
 * dfccl_call_t, reachable as ->call), then the executor's. */
typedef struct dfccl_coll {
    struct dfccl_coll *next;        /* queue link */
    union {
        dfccl_call_t call;
        struct { DFCCL_CALL_FIELDS };
    };
    dfccl_exec_t       exec;        /* plan interpretation and saved context */
    uint64_t           last_visit_ns; /* end of its last turn; 0 until first runnable */
    uint64_t           blocked_ns;    /* watchdog: time blocked since its last progress */
    uint64_t           budget_ns;   /* adaptive wait allowed per turn */
    int                marker;      /* a call rejected locally: holds its sequence number
                                       in the communicator's order, moves nothing */
    int                checked;     /* the sending peer's identity matched */
    uint64_t           next_live_check_ns; /* blocked time at which peers' pids are checked */
    int                crosses;     /* its plan uses a link to another node */
    int                oneshot;     /* runs the one-shot (oneshot.h), not a plan */
    dfccl_oneshot_run_t shot;       /* ... and its saved context */
    size_t             bytes;       /* the record with its plan and executor state */
    uint32_t           nmore, ndeps;/* the plan's further sends and dependencies */
    dfccl_exec_graph_t graph;       /* the executor's per-step state */
    dfccl_step_t       steps[];     /* the plan; then its further send connections
                                       (exec.more_conns), dependencies (exec.deps) and
                                       the graph's arrays */
} dfccl_coll_t;

/* The host backend's part of the context (its context_open makes it). */
typedef struct dfccl_host_ctx {
    dfccl_queue_t    submit;        /* application threads -> daemon */
    dfccl_sched_t    sched;         /* the host scheduler: daemon thread or a waiting caller */
    pthread_t        daemon;
    struct dfccl_exit_entry *daemon_exit;   /* util/exit_park.h */
} dfccl_host_ctx_t;

static inline dfccl_host_ctx_t *dfccl_host_ctx(const dfccl_context_t *ctx)
{
    return (dfccl_host_ctx_t *)ctx->backend_state[DFCCL_BACKEND_HOST];
}

/* A host communicator's part: topology and connections (host_comm.h). */
static inline dfccl_host_t *dfccl_comm_host(const dfccl_comm_t *comm)
{
    return (dfccl_host_t *)comm->backend;
}

/* daemon.c: the backend's context_open and context_close */
dfccl_status_t dfccl_host_context_open(dfccl_context_t *ctx, void **state);
void dfccl_host_context_close(dfccl_context_t *ctx, void *state);

/* coll_record.c: the record of a call with this rank's plan for the host
 * executor (no sequence number, no reference on the communicator yet). */
dfccl_status_t dfccl_coll_new(dfccl_comm_t *comm, const dfccl_coll_args_t *args, size_t total,
                              dfccl_coll_t **coll_p);
/* A record to run, copied from one that never runs (bytes: the record and
 * its plan, tmpl->bytes; its plan then points at the copy's own), with this
 * call's completion owner and priority; NULL when out of memory. The
 * plan cache also gives it this call's buffers and callback. */
dfccl_coll_t *dfccl_coll_from_template(const dfccl_coll_t *tmpl, size_t bytes,
                                       const dfccl_coll_args_t *args);
/* post_host.c: the host backend's post; DFCCL_OK, or why a post on this
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
/* run_on_caller.c: the host backend's run (backend_ops.h). */
dfccl_status_t dfccl_host_run(dfccl_comm_t *comm, const dfccl_coll_args_t *args);
dfccl_status_t dfccl_comm_post_check(dfccl_comm_t *comm);
/* plan_cache.c: a planned record for a call, copied from a recent
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
void *dfccl_daemon_main(void *arg);

/* carried_outside.c: the host backend's outside (backend_ops.h) */
dfccl_status_t dfccl_host_outside(dfccl_comm_t *comm, dfccl_coll_type_t type, uint64_t bytes);

/* watch_colls.c: the daemon's view of a collective's peers (board.h) */
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
void dfccl_watch_dump(const dfccl_coll_t *active);

#endif
