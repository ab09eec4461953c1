/*
 * test_rng.c - splitmix64 and the draws the tests need (see test_rng.h).
 */
#include "test_rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t test_rng_mix(uint64_t a, uint64_t b)
{
    uint64_t state = a ^ (b * 0xd1342543de82ef95ULL);
    return splitmix64(&state);
}

void test_rng_init(test_rng_t *rng, uint64_t seed)
{
    rng->state = seed;
}

uint64_t test_rng_next(test_rng_t *rng)
{
    return splitmix64(&rng->state);
}

uint64_t test_rng_below(test_rng_t *rng, uint64_t bound)
{
    /* The modulo bias is irrelevant for the small bounds used here. */
    return test_rng_next(rng) % bound;
}

double test_rng_unit(test_rng_t *rng)
{
    return (double)(test_rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t test_rng_log_uniform(test_rng_t *rng, uint64_t low, uint64_t high)
{
    double span = log((double)high + 1.0) - log((double)low);
    uint64_t value = (uint64_t)exp(log((double)low) + test_rng_unit(rng) * span);
    if (value < low)
        value = low;
    if (value > high)
        value = high;
    return value;
}

void test_rng_shuffle(test_rng_t *rng, int *items, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)test_rng_below(rng, i);
        int tmp = items[i - 1];
        items[i - 1] = items[j];
        items[j] = tmp;
    }
}
