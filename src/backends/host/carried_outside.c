/*
 * carried_outside.c - calls the caller carries outside the engine on a host
 * communicator (dfccl.h, dfccl_coll_elsewhere): every rank declares the
 * call on its board and waits until all ranks declared the same, so that a
 * call routed differently on some rank (a user-defined op on one rank
 * only, say) ends in an error on every rank rather than in two routes that
 * wait for each other forever.
 */
#include <sched.h>
#include <stdio.h>
#include <time.h>
#include "util/clock.h"
#include "backends/host/host.h"
#include "util/log.h"
#include "core/wait_policy.h"


static dfccl_status_t elsewhere_fail(dfccl_comm_t *comm, uint64_t seq, dfccl_status_t status,
                                     const char *why)
{
    dfccl_error("rank %d of comm %#llx (size %d): #%llu fails: %s", comm->rank,
                (unsigned long long)comm->key, comm->size, (unsigned long long)seq, why);
    dfccl_comm_break(comm, seq, status, why);
    return status;
}

/* 1: every peer declared seq (the same call, else *status says why not);
 * 0: some have not yet. */
static int elsewhere_look(dfccl_comm_t *comm, uint64_t seq, const dfccl_ident_t *mine,
                          int check_pids, dfccl_status_t *status)
{
    char what[120], theirs_s[160], mine_s[160], why[512];
    int all = 1;

    if (dfccl_watch_peer_broke(comm, seq, why, sizeof(why))) {
        *status = elsewhere_fail(comm, seq, DFCCL_ERR_PEER_FAILED, why);
        return 1;
    }
    for (int i = 0; i < comm->size; i++) {
        const dfccl_board_t *b = comm->peer_boards[i];
        dfccl_ident_t theirs;
        int got;

        /* another node's rank without a link: its peers that see it check it */
        if (i == comm->rank || b == NULL) continue;
        got = dfccl_board_ident(b, seq, &theirs);
        if (got == 0) {
            all = 0;
            if (check_pids && !dfccl_process_alive((pid_t)b->pid)) {
                snprintf(why, sizeof(why), "rank %d (pid %d) is gone", i, (int)b->pid);
                *status = elsewhere_fail(comm, seq, DFCCL_ERR_PEER_FAILED, why);
                return 1;
            }
            continue;
        }
        if (got < 0 || !dfccl_ident_differs(mine, &theirs, what, sizeof(what))) continue;
        dfccl_ident_describe(mine, mine_s, sizeof(mine_s));
        dfccl_ident_describe(&theirs, theirs_s, sizeof(theirs_s));
        snprintf(why, sizeof(why), "rank %d called %s where rank %d called %s: %s", comm->rank,
                 mine_s, i, theirs_s, what);
        *status = elsewhere_fail(comm, seq, DFCCL_ERR_MISMATCH, why);
        return 1;
    }
    *status = DFCCL_OK;
    return all;
}

dfccl_status_t dfccl_host_outside(dfccl_comm_t *comm, dfccl_coll_type_t type, uint64_t bytes)
{
    dfccl_ident_t mine = { 0 };
    dfccl_status_t status;
    uint64_t seq, start, now, next_pid_check, timeout_ns;
    char why[160];

    if (comm->size == 1) return DFCCL_OK;
    status = dfccl_comm_post_check(comm);
    if (status != DFCCL_OK) return status;
    mine.type = (uint8_t)type;
    mine.dtype = DFCCL_BYTE;
    mine.op = DFCCL_OP_NONE;
    mine.count = bytes;
    mine.rejected = DFCCL_IDENT_ELSEWHERE;
    seq = dfccl_coll_post_marker(comm, &mine);
    timeout_ns = (uint64_t)(comm->context->config.timeout_sec * 1e9);
    start = dfccl_now_ns();
    next_pid_check = start + DFCCL_WAIT_LIVENESS_PERIOD_NS;
    for (;;) {
        now = dfccl_now_ns();
        int check_pids = now >= next_pid_check;
        if (check_pids) next_pid_check = now + DFCCL_WAIT_LIVENESS_PERIOD_NS;
        /* peers on other nodes post through their links' messages, which
         * only a pump takes in: the daemon may be idle (the marker ended at
         * once), so the waiting caller pumps */
        dfccl_net_progress(__atomic_load_n(&comm->context->net, __ATOMIC_ACQUIRE));
        if (elsewhere_look(comm, seq, &mine, check_pids, &status)) return status;
        if (now - start > timeout_ns) break;
        dfccl_wait_pause(now - start);
    }
    snprintf(why, sizeof(why), "%s #%llu, carried outside the engine, waited %.1f s for its"
             " peers to make the same call", dfccl_coll_type_name(type), (unsigned long long)seq,
             (double)(now - start) / 1e9);
    dfccl_error("rank %d of comm %#llx (size %d): %s; its peers:", comm->rank,
                (unsigned long long)comm->key, comm->size, why);
    for (int i = 0; i < comm->size; i++) {
        char line[DFCCL_BOARD_WHY + 160];
        if (i == comm->rank || comm->peer_boards[i] == NULL) continue;
        dfccl_board_describe(comm->peer_boards[i], seq, now, line, sizeof(line));
        dfccl_error("    rank %d (pid %d): %s", i, (int)comm->peer_boards[i]->pid, line);
    }
    return elsewhere_fail(comm, seq, DFCCL_ERR_TIMEOUT, why);
}
