/*
 * exit_park.c - see exit_park.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include "util/exit_park.h"

/* How long exit waits for the registered threads to park: a thread in the
 * middle of a call into a library gets this long to come out of it. */
#define EXIT_PARK_WAIT_S 2
/* exit's handlers run last registered first, and a library may register
 * its teardown only when first used: every registration hooks exit again
 * (the later runs find the threads parked), up to this many */
#define EXIT_PARK_HOOKS 64

struct dfccl_exit_entry {
    struct dfccl_exit_entry *next;
    void (*wake)(void *arg);
    void *arg;
    pid_t pid;   /* a child forked since has not the thread, and may not have its locks */
};

static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static struct dfccl_exit_entry *park_entries;
static int park_hooks, park_parked, park_exiting;
static struct timespec park_until;   /* the first run's deadline holds for the later ones */

static void exit_park_all(void)
{
    struct timespec until;
    int registered = 0;

    if (!__atomic_exchange_n(&park_exiting, 1, __ATOMIC_ACQ_REL)) {
        clock_gettime(CLOCK_REALTIME, &park_until);
        park_until.tv_sec += EXIT_PARK_WAIT_S;
    }
    until = park_until;
    /* held while waking: an entry is removed only after this returns */
    if (pthread_mutex_timedlock(&park_lock, &until) != 0) return;
    for (struct dfccl_exit_entry *e = park_entries; e != NULL; e = e->next) {
        if (e->pid != getpid()) continue;
        e->wake(e->arg);
        registered++;
    }
    while (park_parked < registered)
        if (pthread_cond_timedwait(&park_cond, &park_lock, &until) == ETIMEDOUT) break;
    pthread_mutex_unlock(&park_lock);
}

dfccl_exit_entry_t *dfccl_exit_guard_add(void (*wake)(void *arg), void *arg)
{
    struct dfccl_exit_entry *e = calloc(1, sizeof(*e));

    if (e == NULL) return NULL;
    e->wake = wake;
    e->arg = arg;
    e->pid = getpid();
    pthread_mutex_lock(&park_lock);
    if (park_hooks < EXIT_PARK_HOOKS && atexit(exit_park_all) == 0) park_hooks++;
    e->next = park_entries;
    park_entries = e;
    pthread_mutex_unlock(&park_lock);
    return e;
}

void dfccl_exit_guard_remove(dfccl_exit_entry_t *entry)
{
    if (entry == NULL) return;
    pthread_mutex_lock(&park_lock);
    for (struct dfccl_exit_entry **p = &park_entries; *p != NULL; p = &(*p)->next)
        if (*p == entry) {
            *p = entry->next;
            break;
        }
    pthread_mutex_unlock(&park_lock);
    free(entry);
}

int dfccl_exiting(void)
{
    return __atomic_load_n(&park_exiting, __ATOMIC_ACQUIRE);
}

void dfccl_exit_park(void)
{
    pthread_mutex_lock(&park_lock);
    park_parked++;
    pthread_cond_broadcast(&park_cond);
    pthread_mutex_unlock(&park_lock);
    for (;;) pause();
}
