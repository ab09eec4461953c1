/*
 * post_host.c - posting on a host communicator: what fails a call at once
 * (a broken communicator, a peer that broke before it, bad arguments), the
 * place every call takes in the communicator's order, and the hand-over to
 * the daemon thread; prepared collectives' records, planned once.
 */
#include <stdlib.h>
#include <string.h>
#include "backends/host/host.h"
#include "util/log.h"

/* A host communicator that broke here, or whose peer broke before the
 * collective about to be posted: the call fails at once (so that callers
 * that retry, as Open MPI's context-id agreement does, see an error rather
 * than a request that fails). A peer's failure breaks it here too. */
dfccl_status_t dfccl_comm_post_check(dfccl_comm_t *comm)
{
    uint64_t seq = __atomic_load_n(&comm->next_seq, __ATOMIC_RELAXED);
    char line[DFCCL_BOARD_WHY + 96];

    if (__atomic_load_n(&comm->broken, __ATOMIC_ACQUIRE)) return DFCCL_ERR_BROKEN;
    if (dfccl_watch_peer_broke(comm, seq, line, sizeof(line))) {
        dfccl_error("rank %d of comm %#llx: collective #%llu fails at once: %s", comm->rank,
                    (unsigned long long)comm->key, (unsigned long long)seq, line);
        dfccl_comm_break(comm, seq, DFCCL_ERR_PEER_FAILED, line);
        return DFCCL_ERR_PEER_FAILED;
    }
    return DFCCL_OK;
}

uint64_t dfccl_coll_post_marker(dfccl_comm_t *comm, dfccl_ident_t *ident)
{
    dfccl_coll_t *marker = calloc(1, sizeof(*marker));
    uint64_t seq = __atomic_fetch_add(&comm->next_seq, 1, __ATOMIC_RELAXED);

    ident->seq1 = seq + 1;
    dfccl_host_publish(comm, seq, ident);
    if (marker == NULL) {   /* its place must still be taken */
        dfccl_error("rank %d of comm %#llx: out of memory for the place of #%llu: the"
                    " communicator cannot be used further", comm->rank,
                    (unsigned long long)comm->key, (unsigned long long)seq);
        dfccl_comm_break(comm, seq, DFCCL_ERR_NO_MEMORY, "out of memory");
        return seq;
    }
    marker->marker = 1;
    marker->type = (dfccl_coll_type_t)ident->type;
    marker->seq = seq;
    marker->ident = *ident;
    __atomic_add_fetch(&comm->refs, 1, __ATOMIC_ACQ_REL);
    marker->comm = comm;
    dfccl_queue_push(&dfccl_host_ctx(comm->context)->submit, marker);
    return seq;
}

/* A call that fails here still takes its place in the communicator's
 * order: its peers, which may have posted theirs, find it on our board and
 * fail theirs instead of pairing it with our next call. */
static dfccl_status_t coll_post_rejected(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                         dfccl_status_t status)
{
    dfccl_ident_t ident;
    char what[160];

    dfccl_ident_make(&ident, args, comm->size, status);
    dfccl_coll_post_marker(comm, &ident);
    dfccl_ident_describe(&ident, what, sizeof(what));
    dfccl_info("rank %d of comm %#llx: %s", comm->rank, (unsigned long long)comm->key, what);
    return status;
}

/* A record's place in the communicator's order, the identity its peers
 * check: all of a post but the counters and the hand-over. */
static void host_enter(dfccl_comm_t *comm, dfccl_coll_t *coll, const dfccl_coll_args_t *args)
{
    dfccl_coll_enter(comm, &coll->call, args);
    /* what the peer receiving from us checks before any data moves */
    coll->ident.seq1 = coll->seq + 1;
    dfccl_host_publish(comm, coll->seq, &coll->ident);
    coll->checked = comm->size == 1 || coll->oneshot;
}

/* Hands a record to the scheduler, entered and counted. */
static void host_submit(dfccl_comm_t *comm, dfccl_coll_t *coll, const dfccl_coll_args_t *args)
{
    host_enter(comm, coll, args);
    dfccl_stats_add_posted(args->type);
    dfccl_stats_add_algorithm(coll->oneshot             ? DFCCL_STATS_ONESHOT
                              : coll->plan_name != NULL ? DFCCL_STATS_PLAN_FILE
                                                        : coll->algo);
    dfccl_queue_push(&dfccl_host_ctx(comm->context)->submit, coll);
}

/* A record that has not run: the one-shot's, or a planned one. */
static dfccl_status_t host_plan(dfccl_comm_t *comm, const dfccl_coll_args_t *args, size_t total,
                                dfccl_coll_t **coll_p)
{
    dfccl_status_t status = DFCCL_OK;

    if (dfccl_oneshot_serves(comm, args, total)) {
        if ((*coll_p = calloc(1, sizeof(dfccl_coll_t))) == NULL) return DFCCL_ERR_NO_MEMORY;
        (*coll_p)->bytes = sizeof(dfccl_coll_t);
        dfccl_oneshot_init(comm, args, total, *coll_p);
    } else {
        status = dfccl_plan_cache_take(comm, args, total, coll_p);
    }
    if (status == DFCCL_OK) dfccl_ident_make(&(*coll_p)->ident, args, comm->size, DFCCL_OK);
    return status;
}

dfccl_status_t dfccl_host_post_checks(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                      size_t *total)
{
    dfccl_status_t status = dfccl_comm_post_check(comm);

    if (status != DFCCL_OK) return status;
    status = dfccl_coll_check_args(comm, args, total);
    if (status != DFCCL_OK)
        return (unsigned)args->type < DFCCL_COLL_TYPE_COUNT ? coll_post_rejected(comm, args, status)
                                                            : status;
    return DFCCL_OK;
}

dfccl_status_t dfccl_host_post_checked(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                       size_t total)
{
    dfccl_coll_t *coll;
    dfccl_status_t status = host_plan(comm, args, total, &coll);

    if (status != DFCCL_OK) return status;
    host_submit(comm, coll, args);
    return DFCCL_OK;
}

dfccl_status_t dfccl_host_post(dfccl_comm_t *comm, const dfccl_coll_args_t *args)
{
    size_t total;
    dfccl_status_t status = dfccl_host_post_checks(comm, args, &total);

    return status == DFCCL_OK ? dfccl_host_post_checked(comm, args, total) : status;
}

/* Prepared collectives (prepared.c): the plan is built once; each start
 * copies the record that never ran, so that a run begins from a clean
 * saved context while the plan, the algorithm and the identity are
 * reused. */
dfccl_status_t dfccl_host_prepare(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                  dfccl_coll_t **tmpl_p, size_t *bytes_p)
{
    dfccl_status_t status;
    size_t total;

    status = dfccl_coll_check_args(comm, args, &total);
    if (status != DFCCL_OK) return status;
    status = host_plan(comm, args, total, tmpl_p);
    if (status == DFCCL_OK)
        *bytes_p = (*tmpl_p)->bytes;
    return status;
}

dfccl_status_t dfccl_host_start(dfccl_comm_t *comm, const dfccl_coll_t *tmpl, size_t bytes,
                                const dfccl_coll_args_t *args)
{
    dfccl_status_t status = dfccl_comm_post_check(comm);
    dfccl_coll_t *coll;

    if (status != DFCCL_OK) return status;
    if ((coll = dfccl_coll_from_template(tmpl, bytes, args)) == NULL) return DFCCL_ERR_NO_MEMORY;
    host_submit(comm, coll, args);
    return DFCCL_OK;
}
