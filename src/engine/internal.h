/* internal.h - the engine's objects, shared by its host-side files. */
#ifndef DFCCL_INTERNAL_H
#define DFCCL_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include "engine/backend_ops.h"
#include "engine/completions.h"
#include "core/board.h"
#include "include/dfccl.h"
#include "core/fifo.h"
#include "core/plan.h"
#include "engine/plan_set.h"
#include "core/sched_policy.h"
#include "transport/net.h"
#include "transport/shm.h"

static inline void dfccl_config_budgets(const dfccl_config_t *cfg, dfccl_sched_budgets_t *b)
{
    b->head_ns    = cfg->budget_head_ns;
    b->initial_ns = cfg->budget_ns;
    b->min_ns     = cfg->budget_min_ns;
    b->max_ns     = cfg->budget_max_ns;
}

/* One collective as every backend sees it; a backend's own record may
 * begin with these fields (DFCCL_CALL_FIELDS, as the host's does). */
#define DFCCL_CALL_FIELDS \
    dfccl_comm_t      *comm;        /* holds a reference */ \
    dfccl_coll_type_t  type; \
    uint64_t           seq;         /* per communicator, identical on all ranks */ \
    int                priority; \
    size_t             total_count; /* elements handled by this rank's plan */ \
    void              *user; \
    void             (*callback)(void *user, dfccl_status_t status);   /* NULL: queued */ \
    dfccl_ident_t      ident;       /* what it is, as its peers see it on our board */ \
    dfccl_algo_t       algo; \
    const char        *plan_name;   /* the plan file it runs, or NULL (built-in algo) */
typedef struct dfccl_call {
    DFCCL_CALL_FIELDS
} dfccl_call_t;

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
    pthread_mutex_t  setup_lock;    /* posts queued during the set-up, and its end */
    struct dfccl_queued_post *queued, *queued_tail;   /* in posting order */
    int              queued_left;   /* queued and not yet handed on (atomic) */
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
    void            *backend;       /* the backend's part (ops->begin makes it) */
};

struct dfccl_context {
    dfccl_config_t   config;
    dfccl_cqueue_t   complete;      /* backends -> application threads */
    pthread_mutex_t  net_lock;      /* creation of the network side */
    dfccl_net_t     *net;           /* NULL until a communicator spans nodes (atomic) */
    dfccl_plan_set_t plans;         /* plan_dir's plan files */
    /* every backend the library has, and the state its context_open made */
    const dfccl_backend_ops_t *backends[DFCCL_BACKEND_COUNT];
    void            *backend_state[DFCCL_BACKEND_COUNT];
};

void dfccl_comm_release(dfccl_comm_t *comm);
/* coll.c: a call's arguments checked (total: elements of this rank's plan). */
dfccl_status_t dfccl_coll_check_args(const dfccl_comm_t *comm, const dfccl_coll_args_t *a,
                                     size_t *total);
/* The generic part of a record: the call's type, priority, owner and size
 * (no sequence number, no reference on the communicator yet). */
void dfccl_call_init(dfccl_call_t *call, const dfccl_coll_args_t *args, size_t total);
/* Gives call the communicator's next sequence number and a reference on
 * it (before the hand-over: once submitted, it may complete and go). */
void dfccl_coll_enter(dfccl_comm_t *comm, dfccl_call_t *call, const dfccl_coll_args_t *args);
/* Hands a finished collective's status to its caller: the callback, or the
 * completion queue. */
void dfccl_coll_complete(dfccl_context_t *ctx, const dfccl_call_t *call, dfccl_status_t status);
/* comm.c: DFCCL_OK once the communicator's set-up succeeded; while it runs
 * DFCCL_ERR_INVALID_PARAM, after a failure that failure */
dfccl_status_t dfccl_comm_usable(const dfccl_comm_t *comm);
/* A post on a communicator whose set-up runs is queued (DFCCL_INPROGRESS)
 * and handed to its backend, in order, when the set-up ends, or completed
 * with the set-up's failure; else DFCCL_OK, and the caller posts it (after
 * every queued one was handed on). */
dfccl_status_t dfccl_comm_queue_post(dfccl_comm_t *comm, const dfccl_coll_args_t *args);
/* context.c: the engine with the library's backends (backend_ops.h),
 * each opened with the context. */
dfccl_status_t dfccl_context_open(const dfccl_config_t *config,
                                  const dfccl_backend_ops_t *const *backends,
                                  dfccl_context_t **context_p);

/* node_labels.c */
/* A label equal on the ranks of one node (host name and boot id); the host
 * name goes to host (for messages). */
uint64_t dfccl_node_label(char *host, size_t len);

/* node[] from every rank's label: equal labels share a node, numbered by
 * first rank; split > 0 cuts every node into groups of that many ranks (in
 * rank order), each of which counts as a node of its own (the knob
 * node_split). k[r]: ranks before r with r's label. Every backend's
 * communicators alike. */
void dfccl_node_groups(const uint64_t *label, int size, unsigned split, int *node, int *k);
/* net_context.c: the context's network side, opened on the first call (host
 * and GPU communicators that span nodes share it); *net stays set. */
dfccl_status_t dfccl_context_net(dfccl_context_t *ctx, dfccl_net_t **net);
/* config.c: the caller's configuration (NULL: defaults) as this library's: knobs past
 * the caller's size take their defaults. DFCCL_ERR_INVALID_PARAM, after an
 * error line, when size or version is not one dfccl_config_init wrote. */
dfccl_status_t dfccl_config_adopt(const dfccl_config_t *config, dfccl_config_t *out);
/* watch.c: breaks the communicator here (later posts fail at once) and
 * tells the peers why on our board. */
void dfccl_comm_break(dfccl_comm_t *comm, uint64_t seq, dfccl_status_t status, const char *why);
/* 1 when a peer broke at collective seq or before: "rank R failed #S: why". */
int dfccl_watch_peer_broke(const dfccl_comm_t *comm, uint64_t seq, char *line, size_t len);
void dfccl_watch_install_dump_signal(void);
int  dfccl_watch_dump_requested(void);

/* stats.c */
void dfccl_stats_add_posted(dfccl_coll_type_t type);
void dfccl_stats_add_completed(dfccl_coll_type_t type, dfccl_status_t status);
void dfccl_stats_add_bytes(uint64_t bytes);
void dfccl_stats_add_comm(void);
void dfccl_stats_add_net(void);
void dfccl_stats_add_net_bytes(uint64_t bytes);
void dfccl_stats_add_algorithm(unsigned algo);
/* Holder of the host scheduler's lock only: a collective that ended, and
 * one that was posted, ran and ended under the lock (run_on_caller.c). */
void dfccl_stats_add_finished(dfccl_coll_type_t type, dfccl_status_t status, uint64_t bytes);
void dfccl_stats_add_ran(dfccl_coll_type_t type, unsigned algo, dfccl_status_t status,
                         uint64_t bytes);

#endif
