/*
 * net_side_watch.c - the network side's part in the watch (net_side.h):
 * whether a link or a peer on another node failed, telling those peers
 * that ours did, and the identities of our calls for their comparison.
 */
#include <stdio.h>
#include "backends/gpu/net_side_state.h"

int gpu_net_side_failed(const gpu_net_side_t *side, char *why, size_t len)
{
    char told[DFCCL_BOARD_WHY];

    for (int i = 0; i < side->nrecv + side->nsend; i++) {
        const gpu_net_conn_t *x = gpu_net_conn_at(side, i);
        for (unsigned c = 0; c < side->st.nchannels; c++) {
            if (x->link[c] == NULL) continue;
            if (dfccl_net_link_failed(x->link[c], why, len)) return 1;
            if (x->mirror[c] != NULL &&
                dfccl_board_broken(x->mirror[c], NULL, told, sizeof(told)) != 0) {
                snprintf(why, len, "rank %d on host %s failed: %s", x->peer, x->host, told);
                return 1;
            }
        }
    }
    return 0;
}

void gpu_net_side_break(gpu_net_side_t *side, int rank, const char *why)
{
    char told[DFCCL_BOARD_WHY];

    snprintf(told, sizeof(told), "rank %d: %.*s", rank, (int)sizeof(told) - 16, why);
    dfccl_board_break(&side->board, 0, DFCCL_ERR_PEER_FAILED, told);
    __atomic_store_n(&side->broken, 1, __ATOMIC_RELEASE);
}

void gpu_net_side_post_idents(gpu_net_side_t *side, const dfccl_board_t *board, uint64_t *posted)
{
    uint64_t end = __atomic_load_n(&board->posted, __ATOMIC_ACQUIRE);
    dfccl_ident_t id;

    /* what the board no longer holds, the peers skip (ident_check.c) */
    if (end > *posted + DFCCL_BOARD_IDENTS) *posted = end - DFCCL_BOARD_IDENTS;
    for (; *posted < end; ++*posted) {
        if (dfccl_board_ident(board, *posted, &id) != 1) continue;
        for (int i = 0; i < side->nrecv + side->nsend; i++) {
            gpu_net_conn_t *x = gpu_net_conn_at(side, i);
            if (x->link[0] != NULL) dfccl_net_link_post_ident(side->net, x->link[0], *posted, &id);
        }
    }
}

int gpu_net_side_boards(const gpu_net_side_t *side, const dfccl_board_t **boards, int *ranks,
                        int max)
{
    int n = 0;

    for (int i = 0; i < side->nrecv + side->nsend; i++) {
        const gpu_net_conn_t *x = gpu_net_conn_at(side, i);
        int seen = 0;
        for (int k = 0; k < n; k++) seen |= ranks[k] == x->peer;
        if (seen || x->mirror[0] == NULL || n == max) continue;
        boards[n] = x->mirror[0];
        ranks[n++] = x->peer;
    }
    return n;
}
