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

/* timeout_ns from now on clock (the one a condition variable waits by). */
static inline void dfccl_deadline_after(struct timespec *deadline, clockid_t clock,
                                        uint64_t timeout_ns)
{
    clock_gettime(clock, deadline);
    deadline->tv_sec += (time_t)(timeout_ns / 1000000000ull);
    deadline->tv_nsec += (long)(timeout_ns % 1000000000ull);
    if (deadline->tv_nsec >= 1000000000L) {
        deadline->tv_sec++;
        deadline->tv_nsec -= 1000000000L;
    }
}

#endif
