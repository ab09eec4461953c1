/*
 * proxy.c - the proxy thread (proxy.h). It owns the daemon kernel: it
 * launches it when work is pending and it is not running, and again after
 * a short backoff when it left while a collective still waited for a peer
 * (its state stays in device memory). Between launches it frees what only
 * the kernel's absence lets go: released communicators, unmapped peer
 * buffers, idle staging memory, host FIFOs of closed links. It also drains
 * completions, answers the direct path's requests, and pumps the links of
 * communicators that span nodes (net_side.h).
 */
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <cuda_runtime_api.h>
#include "util/clock.h"
#include "backends/gpu/comm_release.h"
#include "backends/gpu/direct.h"
#include "backends/gpu/jobs.h"
#include "backends/gpu/peer_watch.h"
#include "kernels/kernels.h"
#include "util/log.h"
#include "backends/gpu/net_side.h"
#include "backends/gpu/proxy.h"
#include "backends/gpu/stage.h"
#include "core/wait_policy.h"
#include "util/exit_park.h"

/* The kernel cannot run (launch error, fault): everything pending fails and
 * later GPU collectives are refused. */
static void gpu_break(dfccl_gpu_t *g, const char *what, cudaError_t e)
{
    dfccl_error("GPU daemon %s: %s: GPU collectives fail", what, gpu_err(e));
    pthread_mutex_lock(&g->sq.lock);
    __atomic_store_n(&g->sq.broken, 1, __ATOMIC_RELEASE);
    gpu_fail_all(g, DFCCL_ERR_SYSTEM);
    pthread_mutex_unlock(&g->sq.lock);
}

static void gpu_launch(dfccl_gpu_t *g)
{
    int rc;

    pthread_mutex_lock(&g->sq.lock);
    if (g->sq.broken) {   /* a submitter broke it since the proxy looked */
        pthread_mutex_unlock(&g->sq.lock);
        return;
    }
    g->env.launch_id++;
    g->sq.kernel_running = 1;
    g->proxy.launch_ticket = g->sq.next_ticket;
    pthread_mutex_unlock(&g->sq.lock);
    rc = dfccl_gpu_kernel_launch(&g->env, g->fixed.blocks, g->fixed.threads, g->fixed.stream);
    cudaError_t e = rc == 0 ? cudaEventRecord(g->fixed.exited, g->fixed.stream) : (cudaError_t)rc;

    if (e != cudaSuccess) {
        pthread_mutex_lock(&g->sq.lock);
        g->sq.kernel_running = 0;
        pthread_mutex_unlock(&g->sq.lock);
        gpu_break(g, "launch failed", e);
        return;
    }
    g->proxy.launched = 1;
    __atomic_store_n(&g->proxy.issued, g->env.launch_id, __ATOMIC_RELEASE);
}

/* Whether the proxy asks the driver now if the kernel has ended: at once
 * when the kernel said it is leaving (ctrl->left), else at most every
 * GPU_EXIT_CHECK_NS, for a kernel that failed and said nothing. A query on
 * every loop of the proxy contends for the driver with the caller's own
 * CUDA calls; asking only then made the smallest allreduces measurably
 * faster. */
static int gpu_exit_check_due(dfccl_gpu_t *g)
{
    uint64_t now;

    if (__atomic_load_n(&g->fixed.ctrl->left, __ATOMIC_ACQUIRE) == g->env.launch_id) return 1;
    now = dfccl_now_ns();
    if (now - g->proxy.exit_checked_ns < GPU_EXIT_CHECK_NS) return 0;
    g->proxy.exit_checked_ns = now;
    return 1;
}

void gpu_proxy_wake_at_exit(void *arg)
{
    dfccl_gpu_t *g = arg;

    __atomic_store_n(&g->fixed.ctrl->stop, UINT64_MAX, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&g->sq.lock);
    pthread_cond_broadcast(&g->sq.wake);
    pthread_mutex_unlock(&g->sq.lock);
}

void *gpu_proxy_main(void *arg)
{
    dfccl_gpu_t *g = arg;
    uint64_t idle_since = 0;

    cudaSetDevice(g->fixed.device);
    g->proxy.backoff_ns = GPU_RELAUNCH_MIN_NS;
    for (;;) {
        /* the process exits under us: the CUDA runtime and UCX go next */
        if (dfccl_exiting()) dfccl_exit_park();
        /* slots to and from other nodes move while the kernel fills and
         * drains them; sends under way keep this thread from sleeping */
        int net_busy = gpu_net_pump(g);
        gpu_watch(g);
        if (gpu_drain(g) > 0) g->proxy.backoff_ns = GPU_RELAUNCH_MIN_NS;
        gpu_direct_service(g);
        if (g->proxy.launched && gpu_exit_check_due(g)) {
            cudaError_t e = cudaEventQuery(g->fixed.exited);
            if (e != cudaErrorNotReady) {
                g->proxy.launched = 0;
                g->proxy.exit_ns = dfccl_now_ns();
                /* collectives held for the next launch may enter now */
                pthread_mutex_lock(&g->sq.lock);
                g->sq.kernel_running = 0;
                gpu_backlog_flush(g);
                pthread_mutex_unlock(&g->sq.lock);
                gpu_drain(g);   /* what it completed on its way out */
                if (g->direct.nheld > 0) gpu_direct_release_held(g);
                if (e != cudaSuccess) gpu_break(g, "kernel failed", e);
            }
        }
        pthread_mutex_lock(&g->sq.lock);
        int stop = g->sq.stop;
        uint64_t in_flight = g->sq.in_flight, fresh = g->sq.next_ticket > g->proxy.launch_ticket;
        /* an application stream waits for a stream-ordered collective: a
         * kernel runs from before that wait until it ends (stream.c) */
        int held = gpu_kernel_held(g);
        int dead = __atomic_load_n(&g->dead.list, __ATOMIC_ACQUIRE) != NULL;
        pthread_mutex_unlock(&g->sq.lock);
        if (!g->proxy.launched) {
            if (dead) gpu_free_dead(g);
            gpu_net_reap(g);
            if (g->direct.nclose > 0) gpu_direct_close_pending(g);
            if (__atomic_load_n(&g->stage.trim, __ATOMIC_ACQUIRE)) gpu_stage_trim(g);
            if (stop) break;
            if (in_flight > 0 && __atomic_load_n(&g->sq.broken, __ATOMIC_ACQUIRE)) {
                /* broken by a submitter (gpu_legacy_wait_failed) and no
                 * kernel runs: what it completed first, then the rest fails */
                gpu_drain(g);
                pthread_mutex_lock(&g->sq.lock);
                gpu_fail_all(g, DFCCL_ERR_SYSTEM);
                pthread_mutex_unlock(&g->sq.lock);
            } else if (in_flight > 0 || held) {
                uint64_t now = dfccl_now_ns();
                /* relaunch_now: set by this thread, or by a submitter
                 * releasing a held collective (collective.c) */
                if (__atomic_exchange_n(&g->proxy.relaunch_now, 0, __ATOMIC_ACQ_REL) || fresh ||
                    held) {
                    gpu_launch(g);
                } else if (now - g->proxy.exit_ns >= g->proxy.backoff_ns) {
                    gpu_launch(g);
                    g->proxy.backoff_ns = 2 * g->proxy.backoff_ns < GPU_RELAUNCH_MAX_NS
                                              ? 2 * g->proxy.backoff_ns
                                              : GPU_RELAUNCH_MAX_NS;
                }
            }
        }
        if (in_flight > 0 || stop || net_busy || held) {
            idle_since = 0;
        } else if (idle_since == 0) {
            idle_since = dfccl_now_ns();
        }
        if (in_flight == 0 && !stop && !net_busy && !held &&
            dfccl_now_ns() - idle_since > GPU_PROXY_LINGER_NS) {
            pthread_mutex_lock(&g->sq.lock);
            if (g->sq.in_flight == 0 && !g->sq.stop &&
                __atomic_load_n(&g->dead.list, __ATOMIC_ACQUIRE) == NULL) {
                struct timespec until;
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_nsec += (long)(GPU_PROXY_IDLE_WAIT_NS % 1000000000ull);
                if (until.tv_nsec >= 1000000000L) {
                    until.tv_sec++;
                    until.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&g->sq.wake, &g->sq.lock, &until);
            }
            pthread_mutex_unlock(&g->sq.lock);
        } else {
            sched_yield();
        }
    }
    /* shutting down: the kernel has left */
    gpu_drain(g);
    pthread_mutex_lock(&g->sq.lock);
    gpu_fail_all(g, DFCCL_ERR_SHUTDOWN);
    pthread_mutex_unlock(&g->sq.lock);
    gpu_free_dead(g);
    gpu_net_fini(g);
    gpu_direct_close_pending(g);
    return NULL;
}
