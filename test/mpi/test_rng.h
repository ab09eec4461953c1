/*
 * test_rng.h - a small seeded random generator (splitmix64) for the
 * disorder tests: the same seed gives the same stream on every rank and
 * every run, so a failing seed can be replayed.
 */
#ifndef DFCCL_TEST_RNG_H
#define DFCCL_TEST_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t state;
} test_rng_t;

/* Mixes the parts into one seed, so (seed, rank) and (seed, round) give
 * unrelated streams. */
uint64_t test_rng_mix(uint64_t a, uint64_t b);

void     test_rng_init(test_rng_t *rng, uint64_t seed);
uint64_t test_rng_next(test_rng_t *rng);
/* Uniform in [0, bound); bound > 0. */
uint64_t test_rng_below(test_rng_t *rng, uint64_t bound);
/* Uniform in [0, 1). */
double   test_rng_unit(test_rng_t *rng);
/* Log-uniform integer in [low, high], low >= 1. */
uint64_t test_rng_log_uniform(test_rng_t *rng, uint64_t low, uint64_t high);
/* Fisher-Yates shuffle of an int array. */
void     test_rng_shuffle(test_rng_t *rng, int *items, size_t n);

#endif /* DFCCL_TEST_RNG_H */
