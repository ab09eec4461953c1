/*
 * peer_watch.h - the proxy thread's watch over what a GPU communicator's
 * collectives wait for, so that a failure ends them within about a second
 * on every survivor instead of at the watchdog:
 *   - on its node, the processes of the peers it waits for
 *     (gpu_conn_plan_waits_on): one that is gone fails the communicator;
 *   - the status at the end of the regions it maps and of its own
 *     (gpu_conn_status_t): a peer whose communicator failed, or a previous
 *     rank that says so, fails it too, and so the news goes round the node;
 *   - across nodes, its links and what the peers tell over them
 *     (net_side.h).
 * A communicator that fails here has the kernel fail its collectives
 * (DFCCL_GPU_BROKEN_PEER), later posts fail at once, and it tells its peers
 * in turn (its status, the next rank's, its links).
 */
#ifndef DFCCL_GPU_PEER_WATCH_H
#define DFCCL_GPU_PEER_WATCH_H

#include "backends/gpu/setup_hello.h"
#include "backends/gpu/state.h"

/* At connect, the peers mapped: what this rank watches (gc->watch). */
dfccl_status_t gpu_watch_prepare(dfccl_comm_t *comm, const gpu_hello_t *all);
/* The communicator is set up (ready): watched from now on. */
void gpu_watch_add(dfccl_gpu_t *g, dfccl_comm_t *comm);
/* Before its release: no longer watched (the engine frees comm next). */
void gpu_watch_remove(dfccl_gpu_t *g, dfccl_gpu_comm_t *gc);
/* Proxy thread: looks every GPU_WATCH_NS. */
void gpu_watch(dfccl_gpu_t *g);
/* The communicator's watch, when its host memory goes. */
void gpu_watch_free(dfccl_gpu_comm_t *gc);

#endif
