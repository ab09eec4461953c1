/*
 * plan_files.h - plan files (plan_dir) on the GPU side: whom they make each
 * rank connect to, and a rank's program of one as the daemon kernel runs
 * it, an image that holds the steps, the further sends, the dependencies
 * and the dependency-driven executor's state (core/exec_graph.h), moved to
 * device memory as one piece (plan_pool.h).
 *
 * The plans a communicator runs are those of the engine's set that fit its
 * size and nodes, when every rank offers the same ones (setup_hello.h)
 * and every rank's connections with their peers fit the kernel's table
 * (conn_plan.h): decided alike on every rank, else none runs. They run on
 * channel 0 alone, whose table holds the plans' connections; a FIFO from a
 * peer on the same node lies in the receiver's region after its channels'
 * FIFOs, one per rank that sends to it under any plan of the size (known
 * before the nodes are: the regions are made first), at the index of the
 * sender among those. Free of CUDA: make check runs it.
 */
#ifndef DFCCL_GPU_PLAN_FILES_H
#define DFCCL_GPU_PLAN_FILES_H

#include <stddef.h>
#include <stdint.h>
#include "backends/gpu/conn_plan.h"
#include "engine/plan_file.h"

/* The peers of plans[0 .. n) (each for size ranks) into pp: rank r's sends
 * are the ranks any step of its programs sends to, its receives the ranks
 * whose programs send to it. DFCCL_ERR_NO_MEMORY leaves pp empty. */
dfccl_status_t gpu_plan_peers_make(const dfccl_plan_file_t *const *plans, int n, int size,
                                   gpu_plan_peers_t *pp);
void gpu_plan_peers_free(gpu_plan_peers_t *pp);

/* peer's place among rank's receives (the FIFO index in rank's region), or
 * -1. */
int gpu_plan_peers_recv_index(const gpu_plan_peers_t *pp, int rank, int peer);

/* A rank's program of a plan file for one call, ready to upload: one
 * allocation of bytes (whole dfccl_step_t's), holding at these offsets the steps, the further
 * send connections (uint8_t), the dependencies (uint32_t) and the
 * executor's graph (dfccl_exec_graph_t, its arrays right after it). */
typedef struct gpu_plan_image {
    void     *mem;
    size_t    bytes;
    uint32_t  nsteps;
    uint32_t  more_at, deps_at, graph_at;
} gpu_plan_image_t;

/*
 * Rank's program of pf for call, its peers mapped onto conn's connections,
 * with the graph of one part (channel 0) of elements of esize bytes moved
 * chunk_elems at a time. DFCCL_ERR_UNSUPPORTED when pf does not serve the
 * call (dfccl_plan_file_build); DFCCL_ERR_INVALID_PARAM when a peer has no
 * connection (conn not made with the plan's peers). img is set only on
 * success; gpu_plan_image_free frees it.
 */
dfccl_status_t gpu_plan_image_make(const dfccl_plan_file_t *pf, const gpu_conn_plan_t *conn,
                                   const dfccl_plan_call_t *call, int rank, size_t esize,
                                   uint64_t chunk_elems, gpu_plan_image_t *img);
void gpu_plan_image_free(gpu_plan_image_t *img);

/* The kernel points its executor at an uploaded image with
 * gpu_plan_image_point (gpu_shared.h). */

#endif
