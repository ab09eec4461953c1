/*
 * util.h - small helpers the planner's files share: error text, a clock,
 * growing arrays, and a binary heap of (key, value) pairs.
 */
#ifndef DFCCL_PLANNER_UTIL_H
#define DFCCL_PLANNER_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Formats into why (when there is room) and returns -1, so that a failing
 * path reads `return pl_fail(why, whylen, "...", ...)`. */
int pl_fail(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
double pl_now(void);
/* Makes room for n elements of size bytes in *p (capacity *cap); 0 or -1. */
int pl_reserve(void **p, size_t *cap, size_t n, size_t size);

/* Smallest key first; equal keys by smaller value, so runs repeat exactly. */
typedef struct {
    int64_t key;
    int64_t val;
} pl_heap_item_t;
typedef struct {
    pl_heap_item_t *items;
    size_t n, cap;
} pl_heap_t;
int pl_heap_push(pl_heap_t *h, int64_t key, int64_t val);
int pl_heap_pop(pl_heap_t *h, pl_heap_item_t *out); /* 0 when empty */
void pl_heap_free(pl_heap_t *h);


/* A map from non-negative 64-bit keys to 64-bit values (open addressing):
 * the planners look up chunks by (chunk, node, epoch). */
typedef struct {
    int64_t *keys, *vals;
    size_t n, cap;
} pl_map_t;
int pl_map_put(pl_map_t *m, int64_t key, int64_t val); /* replaces; 0 or -1 */
int pl_map_get(const pl_map_t *m, int64_t key, int64_t *val); /* 1 when found */
void pl_map_free(pl_map_t *m);
/* The key of a chunk at a node at an epoch. */
static inline int64_t pl_key(int chunk, int node, int nnodes, int epoch)
{
    return (((int64_t)chunk * nnodes + node) << 31) | (int64_t)epoch;
}

#endif
