/*
 * exit_park.h - our threads stand still before the process's exit tears
 * down the libraries they call.
 *
 * A process may end with exit() while the library runs (an application
 * that fails and never reaches MPI_Finalize). exit() then runs the
 * libraries' teardown (the CUDA runtime's, UCX's) while our threads still
 * call into them, and a thread that does crashes the exiting process. A
 * thread that registers here is woken at exit and must come to a point
 * where it holds no lock and then call dfccl_exit_park(), which never
 * returns; the handler waits for that, bounded, before exit goes on.
 */
#ifndef DFCCL_UTIL_EXIT_PARK_H
#define DFCCL_UTIL_EXIT_PARK_H

typedef struct dfccl_exit_entry dfccl_exit_entry_t;

/* Registers one thread: wake(arg), called from the exiting thread, gets it
 * to its next park point (it signals what the thread may sleep on).
 * Returns NULL when out of memory (the thread then goes unguarded). Each
 * registration hooks exit anew: after the libraries the caller already
 * used, so that it runs before their teardown. */
dfccl_exit_entry_t *dfccl_exit_guard_add(void (*wake)(void *arg), void *arg);
/* Once the thread has ended (joined), before arg goes. */
void dfccl_exit_guard_remove(dfccl_exit_entry_t *entry);
/* 1 once the process is exiting: a registered thread parks at its next
 * point without locks. */
int dfccl_exiting(void);
/* Counts the caller as parked and sleeps until the process is gone. */
void dfccl_exit_park(void) __attribute__((noreturn));

#endif
