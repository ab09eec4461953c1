/*
 * ident_check.h - whether the collectives a GPU rank posted match those its
 * peers on the node posted under the same numbers, from their boards
 * (core/board.h: each rank publishes the identity of every collective it
 * posts). The GPU's daemon kernel moves data without looking; the proxy's
 * watch (peer_watch.h) compares after the fact, so calls that do not match
 * fail within a watch period or two instead of at the watchdog, or instead
 * of pairing up silently where their sizes happen to fit. Free of CUDA, so
 * make check runs it on boards in ordinary memory (test_gpu_conn.c).
 */
#ifndef DFCCL_GPU_IDENT_CHECK_H
#define DFCCL_GPU_IDENT_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include "core/board.h"

/*
 * Compares, from *checked on, each collective our board holds with the one
 * every peer's board holds under the same number; advances *checked past
 * those all peers posted (or that were reused before they could be
 * compared), and stops at one a peer has not posted yet. Returns 1 when a
 * pair differs, with why naming both calls and ranks; else 0.
 */
int gpu_ident_check(const dfccl_board_t *mine, int me, const dfccl_board_t *const *peers,
                    const int *ranks, int npeers, uint64_t *checked, char *why, size_t len);

#endif
