/* clock.h - monotonic time in nanoseconds for budgets, timeouts and backoff. */
#ifndef DFCCL_CLOCK_H
#define DFCCL_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t dfccl_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
