/*
 * wait_policy.h - how long the engine waits, polls and backs off, in one
 * place: its host threads, the GPU backend's proxy thread and the daemon
 * kernel (this header compiles for both).
 *
 * One policy for every host-side wait: spin while a peer on another core is
 * likely to answer within microseconds; then yield, because ranks may
 * outnumber cores and the peer may need this one; then nap, so that a wait
 * for a late rank does not burn a core the others could use.
 */
#ifndef DFCCL_WAIT_POLICY_H
#define DFCCL_WAIT_POLICY_H

#include <sched.h>
#include <stdint.h>
#include <time.h>
#include "include/dfccl.h"

/* A peer on another core answers a FIFO slot or a board post within a few
 * microseconds: longer spins only burn the core a late peer may need. The
 * same spin a caller is told to make (dfccl.h). */
#define DFCCL_WAIT_SPIN_NS DFCCL_WAIT_CALLER_SPIN_NS
/* Yield (not nap) up to this long: a nap costs a timer wake-up of tens of
 * microseconds, which a yield avoids while waits are still short. */
#define DFCCL_WAIT_YIELD_NS 1000000ull
/* Beyond the yields, nap this long between looks. */
#define DFCCL_WAIT_NAP_NS 50000L

/* An idle host daemon polls for new work this long before it sleeps on its
 * queue: back-to-back collectives then skip a thread wake-up. */
#define DFCCL_WAIT_IDLE_SPIN_NS 50000ull
/* The sleeping daemon still looks every so often (a dump request, a stop
 * that raced with the signal). */
#define DFCCL_WAIT_IDLE_SLEEP_NS 200000000ull

/* A blocked collective looks at its peers' pids this often: a dead peer is
 * found within this time, while the look (a system call per peer) stays rare. */
#define DFCCL_WAIT_LIVENESS_PERIOD_NS 500000000ull

/* A caller's own waits: dfccl.h ("How a caller waits"). */
/* The daemon thread takes the host scheduler back once no caller has
 * driven it for this long: callers that wait come back to drive within
 * microseconds, while a rank that stopped calling MPI holds its peers up
 * by at most this much. */
#define DFCCL_WAIT_DRIVER_LINGER_NS 1000000ull

/* ---- the GPU backend's proxy thread ---- */

/* A failed kernel is noticed within this (a normal exit at once). */
#define GPU_EXIT_CHECK_NS 100000ull
/* After the kernel left with work pending and nothing new arrived, launch
 * it again after this backoff, doubling up to the cap: a peer that is late
 * by milliseconds does not cost a launch every few microseconds, and the
 * application's cudaDeviceSynchronize gets its window. */
#define GPU_RELAUNCH_MIN_NS 20000ull
#define GPU_RELAUNCH_MAX_NS 1000000ull
/* The proxy thread polls while collectives are in flight, yielding between
 * polls (ranks may share cores); with nothing in flight it keeps polling for
 * GPU_PROXY_LINGER_NS (the next collective usually follows soon: a sleeping
 * thread takes tens of microseconds to wake), then sleeps. */
#define GPU_PROXY_IDLE_WAIT_NS 10000000ull
#define GPU_PROXY_LINGER_NS    2000000ull

/* ---- the daemon kernel ---- */

/* Block 0 reads the control words over the bus, far slower than device
 * memory: while it has collectives in hand it reuses a read younger than
 * this, so that admitting, checking peers and moving are not paced by the
 * bus; new work then waits at most this much longer to be seen. An idle
 * block reads them on every pass. */
#define GPU_CTRL_MAX_AGE_NS 4000

/* Block 0 asks whether the kernel should leave (gpu_should_quit: reads of
 * every block's published state) at most this often, 2 % of the idle
 * bound: asked on every idle pass, it delayed the next look for new work. */
#define GPU_QUIT_CHECK_NS 10000

#ifndef __CUDACC__
/* How long host waits spin before they yield: DFCCL_WAIT_SPIN_NS, or 0
 * where ranks outnumber cores (knob oversubscribed; set when a context is
 * created). */
extern uint64_t dfccl_wait_spin_ns;

/* One pause of a wait that has lasted waited_ns so far. */
static inline void dfccl_wait_pause(uint64_t waited_ns)
{
    if (waited_ns < __atomic_load_n(&dfccl_wait_spin_ns, __ATOMIC_RELAXED)) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    } else if (waited_ns < DFCCL_WAIT_YIELD_NS) {
        sched_yield();
    } else {
        struct timespec nap = { 0, DFCCL_WAIT_NAP_NS };
        nanosleep(&nap, NULL);
    }
}
#endif

#endif
