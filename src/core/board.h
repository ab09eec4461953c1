/*
 * board.h - what a rank publishes about one communicator for its peers on
 * the node, in the first page of the shared segment that holds its incoming
 * FIFO:
 *   - the identity of every collective it posted (kind, sequence number,
 *     count or a digest of the counts, type, op; or that the call was
 *     rejected locally), which the rank receiving from it checks before it
 *     moves any data, so that calls that do not match fail on every rank
 *     instead of pairing up;
 *   - its progress (posted, finished, what runs and whom it waits for), for
 *     the watchdog's job-wide diagnosis and the dump on a signal;
 *   - its pid, so that a peer that is gone is found within a bound;
 *   - why the communicator broke there, so that its peers fail too.
 * Only the owner writes its board; peers map it read-mostly.
 */
#ifndef DFCCL_BOARD_H
#define DFCCL_BOARD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "include/dfccl.h"

#define DFCCL_BOARD_BYTES  4096
/* Identities kept per communicator: a peer that posted this many more
 * collectives than the one being checked has overwritten its entry, and the
 * check is skipped for that call (nothing can be compared any more). */
#define DFCCL_BOARD_IDENTS 96
#define DFCCL_BOARD_WHY    320

#define DFCCL_IDENT_REJECTED  1
#define DFCCL_IDENT_ELSEWHERE 2

typedef struct dfccl_ident {
    uint64_t seq1;      /* sequence number + 1; 0: no entry. Stored last. */
    uint64_t count;     /* allreduce: elements; allgather: elements per rank;
                           reduce-scatter: a digest of all ranks' counts */
    uint8_t  type;      /* dfccl_coll_type_t */
    uint8_t  dtype;
    uint8_t  op;
    uint8_t  rejected;  /* DFCCL_IDENT_REJECTED: the call failed locally and moves
                           nothing; DFCCL_IDENT_ELSEWHERE: the caller carries it
                           outside the engine (count: its bytes) */
    int32_t  reason;    /* rejected: its dfccl_status_t */
} dfccl_ident_t;

typedef struct dfccl_board {
    uint32_t      magic;
    int32_t       pid;
    uint64_t      heartbeat_ns;   /* the daemon's clock at its last turn here */
    uint64_t      posted;         /* collectives posted (the next sequence number) */
    uint64_t      done;           /* collectives ended, well or not */
    uint64_t      run_seq1;       /* sequence number + 1 of the one running; 0: none */
    uint64_t      run_round;
    uint32_t      run_step;
    uint32_t      run_waiting;    /* dfccl_wait_t of its last turn */
    int32_t       run_peer;       /* the rank it waited for */
    /* Peers read what follows before every post and turn; the counters above
     * change on every one of the owner's: on a cache line of their own (the
     * boards in shared memory start page-aligned), a read hits the reader's
     * cache until the communicator breaks. */
    uint8_t       hot_end[4];
    int32_t       broken;         /* 0, or the status that broke the communicator here */
    uint64_t      broken_seq;     /* the collective that broke it */
    char          why[DFCCL_BOARD_WHY];
    dfccl_ident_t ident[DFCCL_BOARD_IDENTS];
} dfccl_board_t;

_Static_assert(offsetof(dfccl_board_t, broken) == 64, "broken starts a cache line");
_Static_assert(sizeof(dfccl_board_t) <= DFCCL_BOARD_BYTES, "a board fits its place");

void dfccl_board_init(dfccl_board_t *board);

/* The identity of a collective; counts: reduce-scatter's, else NULL. */
void dfccl_ident_make(dfccl_ident_t *id, const dfccl_coll_args_t *args, int size,
                      dfccl_status_t rejected);
/* "allreduce #7 (10 x int32, op sum)" */
void dfccl_ident_describe(const dfccl_ident_t *id, char *buf, size_t len);
/* 0 when two ranks' calls match; else 1 and what differs in `what`. */
int dfccl_ident_differs(const dfccl_ident_t *mine, const dfccl_ident_t *theirs, char *what,
                        size_t len);

/* Owner: publishes collective seq's identity (after which its data may flow). */
void dfccl_board_post(dfccl_board_t *board, uint64_t seq, const dfccl_ident_t *id);
/* Peer's view of collective seq: 1 and *id when posted; 0 not posted yet;
 * -1 when the entry was reused already, or is one a mirror (a board that a
 * peer's messages fill) never heard of while it heard of later ones: it
 * cannot be checked. Returns at once either way. */
int dfccl_board_ident(const dfccl_board_t *board, uint64_t seq, dfccl_ident_t *id);

/* Owner: records the first failure that broke the communicator. */
void dfccl_board_break(dfccl_board_t *board, uint64_t seq, dfccl_status_t status,
                       const char *why);
/* Returns the status that broke it (0: not broken), with the collective and why. */
int dfccl_board_broken(const dfccl_board_t *board, uint64_t *seq, char *why, size_t len);

/* Owner, from the daemon: what runs now. */
void dfccl_board_progress(dfccl_board_t *board, uint64_t seq, uint64_t round, uint32_t step,
                          uint32_t waiting, int peer, uint64_t now_ns);
void dfccl_board_done(dfccl_board_t *board, uint64_t done);

/* What a peer is doing with respect to collective seq, in words. */
void dfccl_board_describe(const dfccl_board_t *board, uint64_t seq, uint64_t now_ns, char *buf,
                          size_t len);

/* 1 while process pid exists (and is not a zombie), 0 once it is gone. */
int dfccl_process_alive(pid_t pid);

#endif
