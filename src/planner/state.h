/*
 * state.h - a partial allgather schedule as the constructive planners (greedy,
 * ring, LP rounding) grow it: what each link carries in each epoch, where
 * each chunk is held and from when, and where it passes through switches.
 */
#ifndef DFCCL_PLANNER_STATE_H
#define DFCCL_PLANNER_STATE_H

#include "planner/planner.h"
#include "planner/util.h"

typedef struct {
    int node, epoch;
} pl_transit_t;

typedef struct {
    const pl_instance_t *in;
    pl_schedule_t *s;      /* flows are added here */
    int **busy;            /* busy[l][t]: chunks on link l in epoch t */
    int *busy_len;
    int *avail;            /* [chunk][rank]: epoch it is held from, INT_MAX: not */
    int *missing;          /* [chunk]: GPUs that do not hold it yet */
    int unmet;             /* (chunk, GPU) pairs still missing */
    pl_map_t at_switch;    /* (chunk, switch, epoch) present */
    pl_map_t left_switch;  /* (chunk, switch, epoch) sent on (switches without copies) */
    pl_transit_t **transits; /* [chunk]: where it passes switches */
    size_t *ntransits, *transits_cap;
    int last;              /* the latest epoch any flow occupies or reaches */
} pl_state_t;

/* Starts from the flows already in s (taken as valid). 0 or -1. */
int pl_state_init(pl_state_t *st, const pl_instance_t *in, pl_schedule_t *s);
void pl_state_fini(pl_state_t *st);

/* Whether a chunk may start on link l in epoch k (capacity only). */
int pl_state_link_free(const pl_state_t *st, int l, int k);
/* The first epoch from k on when it may. */
int pl_state_link_next(const pl_state_t *st, int l, int k);
/* Whether the chunk is at node n ready to leave in epoch k (at a switch
 * without copies: and not sent on yet). */
int pl_state_holds(const pl_state_t *st, int c, int n, int k);
/* Whether the chunk may reach node n in epoch k: always for GPUs and
 * switches that copy; a switch without copies passes a chunk once an
 * epoch, so that the schedule pairs its ways in and out by themselves. */
int pl_state_may_enter(const pl_state_t *st, int c, int n, int k);
/* Adds the flow (capacity and holding must have been checked). 0 or -1. */
int pl_state_send(pl_state_t *st, int c, int l, int k);
/* The epoch chunk c is held at rank r from, INT_MAX when not. */
static inline int pl_state_avail(const pl_state_t *st, int c, int r)
{
    return st->avail[(size_t)c * st->in->topo->ngpus + r];
}
/* The epoch by which every GPU holds every chunk (state complete). */
int pl_state_finish(const pl_state_t *st);

#endif
