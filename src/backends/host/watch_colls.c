/*
 * watch_colls.c - the host daemon's view of a collective's peers through
 * their boards (board.h): the identity check before a collective moves
 * data, peers that broke or are gone, the watchdog's diagnosis of every
 * rank, and the dump of what is pending when the process gets the dump
 * signal.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "util/clock.h"
#include "backends/host/host.h"
#include "util/log.h"
#include "core/wait_policy.h"

static void watch_break(dfccl_coll_t *coll, dfccl_status_t status, const char *why)
{
    dfccl_comm_break(coll->comm, coll->seq, status, why);
}

/* Every peer the plan receives from must have posted the same call. */
dfccl_status_t dfccl_watch_ident(dfccl_coll_t *coll)
{
    dfccl_comm_t *comm = coll->comm;
    const dfccl_exec_t *x = &coll->exec;
    dfccl_ident_t theirs;
    char what[120];
    int prev = -1, got = -1;

    for (uint32_t i = 0; i < x->nsteps; i++) {
        if (!x->steps[i].recv) continue;
        prev = x->recv_fifo[x->steps[i].recv_conn].peer;
        got = dfccl_board_ident(comm->peer_boards[prev], coll->seq, &theirs);
        if (got == 0) {
            coll->exec.waiting = DFCCL_WAIT_RECV;   /* as for its data: the watchdog says so */
            coll->exec.wait_peer = prev;
            return DFCCL_INPROGRESS;
        }
        if (got > 0 && dfccl_ident_differs(&coll->ident, &theirs, what, sizeof(what))) break;
        got = -1;
    }
    coll->checked = 1;
    /* all match, or were reused long ago: nothing left to compare */
    if (got < 0) return DFCCL_OK;
    return dfccl_watch_mismatch(coll, prev, &theirs, what);
}

dfccl_status_t dfccl_watch_mismatch(dfccl_coll_t *coll, int peer, const dfccl_ident_t *theirs,
                                    const char *what)
{
    const dfccl_comm_t *comm = coll->comm;
    char mine_s[160], theirs_s[160], why[512];

    dfccl_ident_describe(&coll->ident, mine_s, sizeof(mine_s));
    dfccl_ident_describe(theirs, theirs_s, sizeof(theirs_s));
    snprintf(why, sizeof(why), "rank %d called %s where rank %d called %s: %s", comm->rank, mine_s,
             peer, theirs_s, what);
    dfccl_error("rank %d of comm %#llx (size %d): calls do not match: %s", comm->rank,
                (unsigned long long)comm->key, comm->size, why);
    watch_break(coll, DFCCL_ERR_MISMATCH, why);
    return DFCCL_ERR_MISMATCH;
}

dfccl_status_t dfccl_watch_peers(dfccl_coll_t *coll)
{
    dfccl_comm_t *comm = coll->comm;
    char line[DFCCL_BOARD_WHY + 96];

    if (dfccl_watch_peer_broke(comm, coll->seq, line, sizeof(line))) {
        dfccl_error("rank %d of comm %#llx: %s #%llu fails: %s", comm->rank,
                    (unsigned long long)comm->key, dfccl_coll_type_name(coll->type),
                    (unsigned long long)coll->seq, line);
        watch_break(coll, DFCCL_ERR_PEER_FAILED, line);
        return DFCCL_ERR_PEER_FAILED;
    }
    if (dfccl_host_link_failed(comm, line, sizeof(line))) {
        dfccl_error("rank %d of comm %#llx: %s #%llu fails: %s", comm->rank,
                    (unsigned long long)comm->key, dfccl_coll_type_name(coll->type),
                    (unsigned long long)coll->seq, line);
        watch_break(coll, DFCCL_ERR_PEER_FAILED, line);
        return DFCCL_ERR_PEER_FAILED;
    }
    if (coll->blocked_ns < coll->next_live_check_ns) return DFCCL_OK;
    coll->next_live_check_ns = coll->blocked_ns + DFCCL_WAIT_LIVENESS_PERIOD_NS;
    for (int i = 0; i < comm->size; i++) {
        pid_t pid;
        if (i == comm->rank || comm->peer_boards[i] == NULL) continue;
        pid = (pid_t)comm->peer_boards[i]->pid;   /* 0 on another node: not ours to look up */
        if (dfccl_process_alive(pid)) continue;
        snprintf(line, sizeof(line), "rank %d (pid %d) is gone", i, (int)pid);
        dfccl_error("rank %d of comm %#llx: %s #%llu fails: %s", comm->rank,
                    (unsigned long long)comm->key, dfccl_coll_type_name(coll->type),
                    (unsigned long long)coll->seq, line);
        watch_break(coll, DFCCL_ERR_PEER_FAILED, line);
        return DFCCL_ERR_PEER_FAILED;
    }
    return DFCCL_OK;
}

void dfccl_watch_peers_reset(dfccl_coll_t *coll)
{
    coll->next_live_check_ns = DFCCL_WAIT_LIVENESS_PERIOD_NS;
}

/* A peer on another node, from what its link's messages told: what it
 * posted and whether it broke (its progress is not sent). */
static void watch_describe_mirror(const dfccl_board_t *b, uint64_t seq, char *line, size_t len)
{
    dfccl_ident_t id;
    char what[160], why[DFCCL_BOARD_WHY];
    uint64_t at;
    int got = dfccl_board_ident(b, seq, &id);

    if (dfccl_board_broken(b, &at, why, sizeof(why))) {
        snprintf(line, len, "its communicator broke at #%llu: %s", (unsigned long long)at, why);
    } else if (got > 0) {
        dfccl_ident_describe(&id, what, sizeof(what));
        snprintf(line, len, "posted %s; how far it got is not seen from here", what);
    } else if (got == 0) {
        snprintf(line, len, "has not posted #%llu (as far as its messages told)",
                 (unsigned long long)seq);
    } else {
        snprintf(line, len, "posted #%llu long ago", (unsigned long long)seq);
    }
}

/* One line per peer: what it does with respect to coll. */
static void watch_print_peers(const dfccl_coll_t *coll, const char *prefix)
{
    const dfccl_comm_t *comm = coll->comm;
    uint64_t now = dfccl_now_ns();
    char line[DFCCL_BOARD_WHY + 160];

    for (int i = 0; i < comm->size; i++) {
        const dfccl_board_t *b = comm->peer_boards[i];
        const char *host = dfccl_comm_host(comm) != NULL && dfccl_comm_host(comm)->hosts != NULL
                               ? dfccl_comm_host(comm)->hosts + (size_t)i * DFCCL_NET_HOST_MAX : "?";
        if (i == comm->rank) continue;
        if (b == NULL) {
            dfccl_error("%s rank %d (on host %s): not connected to this rank, its state is not"
                        " seen from here", prefix, i, host);
            continue;
        }
        if (b->pid == 0) {   /* a mirror: what its messages told */
            watch_describe_mirror(b, coll->seq, line, sizeof(line));
            dfccl_error("%s rank %d (on host %s, over the network): %s", prefix, i, host, line);
            continue;
        }
        dfccl_board_describe(b, coll->seq, now, line, sizeof(line));
        dfccl_error("%s rank %d (pid %d%s): %s", prefix, i, (int)b->pid,
                    dfccl_process_alive((pid_t)b->pid) ? "" : ", gone", line);
    }
}

/* The watchdog's diagnosis of a one-shot (oneshot.h): no FIFO, no steps. */
static void watch_timeout_oneshot(dfccl_coll_t *coll, double idle_sec)
{
    const dfccl_comm_t *comm = coll->comm;
    char where[200], why[DFCCL_BOARD_WHY];

    dfccl_oneshot_describe(coll, where, sizeof(where));
    dfccl_error("rank %d of comm %#llx (size %d): %s #%llu (%zu x %s, op %s, priority %d) made"
                " no progress for %.1f s in its %s%s", comm->rank, (unsigned long long)comm->key,
                comm->size, dfccl_coll_type_name(coll->type), (unsigned long long)coll->seq,
                coll->total_count, dfccl_dtype_name(coll->exec.dtype),
                dfccl_op_name(coll->exec.op), coll->priority, idle_sec, where,
                comm->size > 1 ? "; its peers:" : "");
    watch_print_peers(coll, "   ");
    snprintf(why, sizeof(why), "%s #%llu made no progress for %.1f s (waiting for data from rank"
             " %d)", dfccl_coll_type_name(coll->type), (unsigned long long)coll->seq, idle_sec,
             coll->exec.wait_peer);
    watch_break(coll, DFCCL_ERR_TIMEOUT, why);
}

void dfccl_watch_timeout(dfccl_coll_t *coll, double idle_sec)
{
    if (coll->oneshot) {
        watch_timeout_oneshot(coll, idle_sec);
        return;
    }
    const dfccl_exec_t *x = &coll->exec;
    const dfccl_comm_t *comm = coll->comm;
    const dfccl_host_t *h = dfccl_comm_host(comm);
    int peer = x->wait_peer >= 0 && x->wait_peer < comm->size ? x->wait_peer : comm->rank;
    int conn = x->waiting == DFCCL_WAIT_SEND ? h->send_conn[peer] : h->recv_conn[peer];
    const dfccl_fifo_t *f = conn < 0 ? NULL : x->waiting == DFCCL_WAIT_SEND ? &x->send_fifo[conn]
                                                                            : &x->recv_fifo[conn];
    char why[DFCCL_BOARD_WHY];

    dfccl_error("rank %d of comm %#llx (size %d): %s #%llu (%zu x %s, op %s, priority %d) made"
                " no progress for %.1f s at round %llu of %llu, step %u of %u (element %llu):"
                " waiting for %s rank %d (fifo tail %llu, head %llu, %u slots; %s plan)%s",
                comm->rank, (unsigned long long)comm->key, comm->size,
                dfccl_coll_type_name(coll->type), (unsigned long long)coll->seq,
                coll->total_count, dfccl_dtype_name(x->dtype), dfccl_op_name(x->op),
                coll->priority, idle_sec, (unsigned long long)x->round + 1,
                (unsigned long long)x->nrounds, x->step + 1, x->nsteps,
                (unsigned long long)x->offset,
                x->waiting == DFCCL_WAIT_SEND ? "a free slot at" : "data from", x->wait_peer,
                f ? (unsigned long long)__atomic_load_n(&f->ctrl->tail, __ATOMIC_ACQUIRE) : 0ull,
                f ? (unsigned long long)__atomic_load_n(&f->ctrl->head, __ATOMIC_ACQUIRE) : 0ull,
                f ? f->nslots : 0u,
                coll->plan_name != NULL ? coll->plan_name : dfccl_algo_name(coll->algo),
                comm->size > 1 ? "; its peers:" : "");
    watch_print_peers(coll, "   ");
    snprintf(why, sizeof(why), "%s #%llu made no progress for %.1f s (waiting for %s rank %d)",
             dfccl_coll_type_name(coll->type), (unsigned long long)coll->seq, idle_sec,
             x->waiting == DFCCL_WAIT_SEND ? "a free slot at" : "data from", x->wait_peer);
    watch_break(coll, DFCCL_ERR_TIMEOUT, why);
}

void dfccl_watch_dump(const dfccl_coll_t *active)
{
    int n = 0;

    for (const dfccl_coll_t *c = active; c != NULL; c = c->next) {
        char what[160];
        const dfccl_exec_t *x = &c->exec;
        if (c->marker) continue;
        dfccl_ident_describe(&c->ident, what, sizeof(what));
        if (c->oneshot) {
            char where[200];
            dfccl_oneshot_describe(c, where, sizeof(where));
            dfccl_error("pending: rank %d of comm %#llx (size %d): %s, priority %d, %s: %s,"
                        " blocked %.3f s", c->comm->rank, (unsigned long long)c->comm->key,
                        c->comm->size, what, c->priority,
                        c->seq == c->comm->next_run_seq ? "running" : "behind an older one", where,
                        (double)c->blocked_ns / 1e9);
            if (c->seq == c->comm->next_run_seq) watch_print_peers(c, "   ");
            n++;
            continue;
        }
        dfccl_error("pending: rank %d of comm %#llx (size %d): %s, priority %d, %s: round %llu"
                    " of %llu, step %u of %u, %s rank %d, blocked %.3f s", c->comm->rank,
                    (unsigned long long)c->comm->key, c->comm->size, what, c->priority,
                    c->seq == c->comm->next_run_seq ? "running" : "behind an older one",
                    (unsigned long long)x->round + 1, (unsigned long long)x->nrounds,
                    x->step + 1, x->nsteps,
                    x->waiting == DFCCL_WAIT_SEND ? "waiting for a free slot at" : "waiting for"
                    " data from", x->wait_peer,
                    (double)c->blocked_ns / 1e9);
        if (c->seq == c->comm->next_run_seq) watch_print_peers(c, "   ");
        n++;
    }
    if (n == 0) dfccl_error("pending: nothing in this process's host engine");
}
