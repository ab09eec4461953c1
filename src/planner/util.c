/*
 * util.c - error text, a clock, growing arrays and a heap for the planner.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "planner/util.h"

int pl_fail(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;

    if (why != NULL && whylen > 0) {
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

double pl_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int pl_reserve(void **p, size_t *cap, size_t n, size_t size)
{
    size_t c = *cap ? *cap : 16;
    void *q;

    if (n <= *cap) return 0;
    while (c < n) c *= 2;
    q = realloc(*p, c * size);
    if (q == NULL) return -1;
    *p = q;
    *cap = c;
    return 0;
}

static int before(const pl_heap_item_t *a, const pl_heap_item_t *b)
{
    return a->key < b->key || (a->key == b->key && a->val < b->val);
}

int pl_heap_push(pl_heap_t *h, int64_t key, int64_t val)
{
    size_t i;

    if (pl_reserve((void **)&h->items, &h->cap, h->n + 1, sizeof(*h->items)) != 0) return -1;
    i = h->n++;
    h->items[i].key = key;
    h->items[i].val = val;
    while (i > 0 && before(&h->items[i], &h->items[(i - 1) / 2])) {
        pl_heap_item_t t = h->items[i];
        h->items[i] = h->items[(i - 1) / 2];
        h->items[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
    return 0;
}

int pl_heap_pop(pl_heap_t *h, pl_heap_item_t *out)
{
    size_t i = 0;

    if (h->n == 0) return 0;
    *out = h->items[0];
    h->items[0] = h->items[--h->n];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && before(&h->items[l], &h->items[m])) m = l;
        if (r < h->n && before(&h->items[r], &h->items[m])) m = r;
        if (m == i) break;
        pl_heap_item_t t = h->items[i];
        h->items[i] = h->items[m];
        h->items[m] = t;
        i = m;
    }
    return 1;
}

void pl_heap_free(pl_heap_t *h)
{
    free(h->items);
    h->items = NULL;
    h->n = h->cap = 0;
}

/* Keys are >= 0, so -1 marks an empty slot. */
static size_t slot_of(const pl_map_t *m, int64_t key)
{
    uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ull;
    size_t i = (size_t)(h >> 17) & (m->cap - 1);

    while (m->keys[i] != -1 && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
    return i;
}

static int map_grow(pl_map_t *m)
{
    pl_map_t g = { NULL, NULL, 0, m->cap ? m->cap * 2 : 64 };

    g.keys = malloc(sizeof(int64_t) * g.cap);
    g.vals = malloc(sizeof(int64_t) * g.cap);
    if (g.keys == NULL || g.vals == NULL) {
        free(g.keys);
        free(g.vals);
        return -1;
    }
    for (size_t i = 0; i < g.cap; i++) g.keys[i] = -1;
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i] != -1) {
            size_t j = slot_of(&g, m->keys[i]);
            g.keys[j] = m->keys[i];
            g.vals[j] = m->vals[i];
            g.n++;
        }
    free(m->keys);
    free(m->vals);
    *m = g;
    return 0;
}

int pl_map_put(pl_map_t *m, int64_t key, int64_t val)
{
    size_t i;

    if ((m->n + 1) * 2 > m->cap && map_grow(m) != 0) return -1;
    i = slot_of(m, key);
    if (m->keys[i] == -1) m->n++;
    m->keys[i] = key;
    m->vals[i] = val;
    return 0;
}

int pl_map_get(const pl_map_t *m, int64_t key, int64_t *val)
{
    size_t i;

    if (m->cap == 0) return 0;
    i = slot_of(m, key);
    if (m->keys[i] == -1) return 0;
    if (val != NULL) *val = m->vals[i];
    return 1;
}

void pl_map_free(pl_map_t *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = m->vals = NULL;
    m->n = m->cap = 0;
}
