/*
 * ident_check.c - posted calls compared with the node's peers'
 * (ident_check.h).
 */
#include <stdio.h>
#include "backends/gpu/ident_check.h"

int gpu_ident_check(const dfccl_board_t *mine, int me, const dfccl_board_t *const *peers,
                    const int *ranks, int npeers, uint64_t *checked, char *why, size_t len)
{
    dfccl_ident_t own, theirs;
    char what[120], own_s[160], theirs_s[160];

    uint64_t posted = __atomic_load_n(&mine->posted, __ATOMIC_ACQUIRE);

    /* a board keeps DFCCL_BOARD_IDENTS entries: older ones went unchecked */
    if (posted > *checked + DFCCL_BOARD_IDENTS) *checked = posted - DFCCL_BOARD_IDENTS;
    for (int k = 0; k < DFCCL_BOARD_IDENTS; k++) {
        int got = dfccl_board_ident(mine, *checked, &own);
        if (got == 0) return 0;   /* not posted here yet */
        for (int i = 0; got > 0 && i < npeers; i++) {
            int g = dfccl_board_ident(peers[i], *checked, &theirs);
            if (g == 0) return 0;   /* the peer has yet to post it: next time */
            if (g < 0 || !dfccl_ident_differs(&own, &theirs, what, sizeof(what))) continue;
            dfccl_ident_describe(&own, own_s, sizeof(own_s));
            dfccl_ident_describe(&theirs, theirs_s, sizeof(theirs_s));
            snprintf(why, len, "calls do not match: rank %d called %s where rank %d called %s: %s",
                     me, own_s, ranks[i], theirs_s, what);
            return 1;
        }
        (*checked)++;
    }
    return 0;
}
