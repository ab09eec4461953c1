/*
 * oneshot.h - small host collectives within one node in one shot.
 *
 * Every rank of a communicator that lies within one node writes its whole
 * contribution once, into a slot of its own shared segment, and each rank
 * then reads every rank's slot and computes its result itself, reducing in
 * rank order so that every rank gets the same bits. One write and one read
 * of each peer's slot replace the ring's 2 (ranks - 1) hand-offs and
 * recursive doubling's log2(ranks) exchanges, each of which is a wait for a
 * peer that may first have to be scheduled.
 *
 * A slot starts with a cache line that holds the call's identity, whose
 * sequence number is written last: a reader that finds the number it waits
 * for finds the data complete, and checks the call against its own there
 * (no read of the peer's board on the fast path).
 *
 * Slots come in two sets, used by one-shots in turn. One-shots run one at a
 * time per communicator, in its order, and are numbered together (the same
 * calls take them on every rank): before a rank writes one-shot k it has
 * read every peer's k - 1, which each peer wrote only after it had read
 * everything of k - 2, the last user of k's set. No counter of reads is
 * needed.
 */
#ifndef DFCCL_ONESHOT_H
#define DFCCL_ONESHOT_H

#include <stddef.h>
#include <stdint.h>
#include "include/dfccl.h"

struct dfccl_comm;
struct dfccl_coll;
struct dfccl_host;

/* A one-shot collective's saved context (in its record). */
typedef struct dfccl_oneshot_run {
    uint64_t k;          /* its number among the communicator's one-shots */
    int      written;    /* our contribution is in our slot */
    int      seen;       /* ranks whose contribution is there, from rank 0 on */
    uint32_t looks;      /* looks that found a peer's missing */
    size_t   in_elems;   /* elements each rank contributes */
    size_t   out_off;    /* reduce-scatter: our block within every contribution */
    size_t   out_elems;
} dfccl_oneshot_run_t;

typedef struct dfccl_oneshot {
    size_t    max_bytes;   /* largest contribution (0: the communicator has no one-shot) */
    size_t    slot_bytes;  /* one slot: the identity's line, then max_bytes */
    char    **slots;       /* every rank's two slots, ours included (size entries) */
    uint64_t  next;        /* the number of the next one-shot to run (scheduler side) */
} dfccl_oneshot_t;

/* Bytes of a rank's segment its two slots take (0: none), from what every
 * rank knows alike: the knob, the communicator's size and nodes. */
size_t dfccl_oneshot_area_bytes(const dfccl_config_t *cfg, int size, int nnodes);
/* Where the slots are: every rank's two, ours included, in slots[] (size
 * entries, malloc'ed; dfccl_oneshot_free frees it). */
void dfccl_oneshot_attach(struct dfccl_host *h, const dfccl_config_t *cfg, char **slots);
void dfccl_oneshot_free(struct dfccl_host *h);

/* 1 when the call (checked, total elements) takes the one-shot: the same
 * answer on every rank. */
int dfccl_oneshot_serves(const struct dfccl_comm *comm, const dfccl_coll_args_t *args,
                         size_t total);
/* Fills a zeroed record (no plan steps) for a call that oneshot_serves. */
void dfccl_oneshot_init(struct dfccl_comm *comm, const dfccl_coll_args_t *args, size_t total,
                        struct dfccl_coll *coll);

typedef enum {
    DFCCL_ONESHOT_DONE,
    DFCCL_ONESHOT_BLOCKED,   /* a peer's contribution is not there yet: nothing half-done */
    DFCCL_ONESHOT_MISMATCH   /* a peer made another call: said, and the communicator broken */
} dfccl_oneshot_result_t;

/* Runs as far as it can: writes our contribution on the first call, then
 * looks for the peers' and, once all are there, computes the result. The
 * thread that runs the scheduler only. */
dfccl_oneshot_result_t dfccl_oneshot_advance(struct dfccl_coll *coll);

/* The watchdog's and the dump's words for where it waits. */
void dfccl_oneshot_describe(const struct dfccl_coll *coll, char *buf, size_t len);

#endif
