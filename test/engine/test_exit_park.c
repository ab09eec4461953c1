/*
 * test_exit_park.c - threads of the library stand still before exit()
 * tears down what they call (util/exit_park.h).
 *
 * Each case runs in a child process. A "library" is stood in for by a
 * pointer that an exit handler, registered before the threads, sets to NULL
 * (its teardown); threads that keep reading through it after that crash
 * the child. The threads register with the exit guard, one polling, one
 * asleep on a condition variable that only their wake function signals.
 *   guarded    exit() while they run: the child must exit 0, promptly
 *   unguarded  the same threads, not registered: the child must die by
 *              SIGSEGV (the test's own check that it can see the crash)
 *   joined     the threads stopped, joined and removed before exit(): no
 *              wait at exit
 *   stuck      a third registered thread never parks: exit still ends,
 *              after the guard's bounded wait
 *   forked     a child forked after the registrations exits at once: the
 *              parent's threads are not in it, so there is nothing to wait for
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "util/exit_park.h"

static volatile int library_state = 42;
static volatile int *volatile library = &library_state;
static volatile int stop_threads;
static pthread_mutex_t sleeper_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sleeper_wake = PTHREAD_COND_INITIALIZER;

static void library_teardown(void)
{
    struct timespec linger = { 0, 50 * 1000 * 1000 };

    library = NULL;
    nanosleep(&linger, NULL);   /* a thread still running reads NULL meanwhile */
}

static int library_call(void)
{
    return *library;
}

static void *poller_main(void *arg)
{
    int guarded = arg != NULL;
    long sum = 0;

    while (!stop_threads) {
        if (guarded && dfccl_exiting()) dfccl_exit_park();
        sum += library_call();
    }
    return (void *)sum;
}

static void *sleeper_main(void *arg)
{
    int guarded = arg != NULL;

    pthread_mutex_lock(&sleeper_lock);
    while (!stop_threads) {
        if (guarded && dfccl_exiting()) {
            pthread_mutex_unlock(&sleeper_lock);
            dfccl_exit_park();
        }
        (void)library_call();
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 1000 * 1000;   /* looks every millisecond */
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&sleeper_wake, &sleeper_lock, &until);
    }
    pthread_mutex_unlock(&sleeper_lock);
    return NULL;
}

static void *stuck_main(void *arg)
{
    (void)arg;
    for (;;) pause();   /* inside a call that does not return */
    return NULL;
}

static void sleeper_wake_at_exit(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&sleeper_lock);
    pthread_cond_broadcast(&sleeper_wake);
    pthread_mutex_unlock(&sleeper_lock);
}

static void nothing_to_wake(void *arg)
{
    (void)arg;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void run_case(const char *name)
{
    int guarded = strcmp(name, "unguarded") != 0;
    void *mark = guarded ? (void *)1 : NULL;
    pthread_t poller, sleeper, stuck;
    dfccl_exit_entry_t *e1 = NULL, *e2 = NULL;
    struct timespec settle = { 0, 20 * 1000 * 1000 };

    atexit(library_teardown);   /* before the library's threads, as a real library's */
    pthread_create(&poller, NULL, poller_main, mark);
    pthread_create(&sleeper, NULL, sleeper_main, mark);
    if (guarded) {
        e1 = dfccl_exit_guard_add(nothing_to_wake, NULL);
        e2 = dfccl_exit_guard_add(sleeper_wake_at_exit, NULL);
        if (e1 == NULL || e2 == NULL) _exit(3);
    }
    if (strcmp(name, "stuck") == 0) {
        pthread_create(&stuck, NULL, stuck_main, NULL);
        if (dfccl_exit_guard_add(nothing_to_wake, NULL) == NULL) _exit(3);
    }
    nanosleep(&settle, NULL);
    if (strcmp(name, "forked") == 0) {
        double t0 = now_s();
        int status = 0;
        pid_t pid;

        fflush(stdout);
        pid = fork();
        if (pid == 0) exit(0);
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0 || now_s() - t0 > 1.0)
            exit(4);
    }
    if (strcmp(name, "joined") == 0) {
        stop_threads = 1;
        pthread_join(poller, NULL);
        pthread_join(sleeper, NULL);
        dfccl_exit_guard_remove(e1);
        dfccl_exit_guard_remove(e2);
    }
    exit(0);
}

/* Runs a case in a child; returns its wait status and how long it took. */
static int run_child(const char *name, double *seconds)
{
    double t0 = now_s();
    int status = 0;
    pid_t pid;

    fflush(stdout);   /* the child's exit would print it again */
    pid = fork();

    if (pid == 0) {
        alarm(20);   /* a hang ends the child by SIGALRM, which fails the case */
        run_case(name);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
    *seconds = now_s() - t0;
    return status;
}

int main(void)
{
    static const struct {
        const char *name;
        int signal;        /* 0: must exit 0; else must die by this signal */
        double max_s;
    } cases[] = {
        { "unguarded", SIGSEGV, 10.0 },
        { "guarded", 0, 1.5 },
        { "joined", 0, 1.5 },
        { "stuck", 0, 4.0 },
        { "forked", 0, 1.5 },
    };
    int failed = 0;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        double seconds = 0;
        int status = run_child(cases[i].name, &seconds), ok;
        if (cases[i].signal == 0)
            ok = status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
        else
            ok = status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == cases[i].signal;
        ok = ok && seconds <= cases[i].max_s;
        printf("%s: %-9s %s after %.2f s (", ok ? "ok" : "FAIL", cases[i].name,
               status >= 0 && WIFSIGNALED(status) ? "died" : "exited", seconds);
        if (status >= 0 && WIFSIGNALED(status)) printf("signal %d", WTERMSIG(status));
        else if (status >= 0) printf("status %d", WEXITSTATUS(status));
        printf("; wanted %s within %.1f s)\n", cases[i].signal ? "SIGSEGV" : "status 0",
               cases[i].max_s);
        failed += !ok;
    }
    printf("test_exit_park: %s\n", failed ? "FAILED" : "passed");
    return failed ? 1 : 0;
}
