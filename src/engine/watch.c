/*
 * watch.c - what every backend reads of its peers' boards (board.h): a
 * communicator broken here and told to the peers, a peer that broke, and the
 * dump signal (the backends say what is pending when it comes).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "util/clock.h"
#include "engine/internal.h"
#include "util/log.h"

static volatile sig_atomic_t watch_dump_requested;

static void watch_on_signal(int sig)
{
    (void)sig;
    watch_dump_requested = 1;
}

void dfccl_watch_install_dump_signal(void)
{
    struct sigaction old, sa;

    /* only where nobody else handles it: an application's own handler wins */
    if (sigaction(SIGUSR1, NULL, &old) != 0 || old.sa_handler != SIG_DFL) return;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = watch_on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
}

int dfccl_watch_dump_requested(void)
{
    if (!watch_dump_requested) return 0;
    watch_dump_requested = 0;
    return 1;
}

void dfccl_comm_break(dfccl_comm_t *comm, uint64_t seq, dfccl_status_t status, const char *why)
{
    dfccl_board_break(comm->board, seq, status, why);
    __atomic_store_n(&comm->broken, status, __ATOMIC_RELEASE);
}

int dfccl_watch_peer_broke(const dfccl_comm_t *comm, uint64_t seq, char *line, size_t len)
{
    char why[DFCCL_BOARD_WHY];
    uint64_t at;

    for (int i = 0; i < comm->size; i++) {
        if (i == comm->rank || comm->peer_boards[i] == NULL ||
            !dfccl_board_broken(comm->peer_boards[i], &at, why, sizeof(why)) ||
            at > seq)
            continue;
        snprintf(line, len, "rank %d failed #%llu: %s", i, (unsigned long long)at, why);
        return 1;
    }
    return 0;
}
