/*
 * hello.h - what a rank tells its peers when a GPU communicator is set up
 * (its hello: filled by dfccl_gpu_comm_begin, gathered by the caller, read
 * by dfccl_gpu_comm_connect), and the checks on the gathered hellos.
 */
#ifndef DFCCL_GPU_HELLO_H
#define DFCCL_GPU_HELLO_H

#include <stdint.h>
#include <cuda_runtime_api.h>
#include "engine/internal.h"
#include "transport/shm.h"

typedef struct gpu_hello {
    int32_t            status;
    int32_t            device;
    uint32_t           nchannels;
    uint32_t           nslots;
    uint64_t           slot_bytes;
    uint64_t           direct_bytes;      /* these two decide the algorithm and who owns */
    uint64_t           direct_chunk_bytes; /* which elements: equal on all ranks */
    uint64_t           ll_bytes;          /* decides the algorithm too */
    uint64_t           region_bytes;
    uint64_t           node_label;        /* equal on the ranks of one node (net_side.h) */
    int32_t            pid;               /* its process, watched by the node's peers */
    int32_t            plan_fifos;        /* FIFOs its region holds for plan files' senders */
    uint64_t           plans;             /* digest of the plan files it offers (0: none) */
    char               board_name[DFCCL_SHM_NAME_MAX];   /* its board's segment */
    char               host[DFCCL_NET_HOST_MAX];   /* its host's name, for messages */
    char               uuid[16];
    cudaIpcMemHandle_t handle;
} gpu_hello_t;

/* The settings from the configuration that must be equal on all ranks. */
void gpu_hello_settings(gpu_hello_t *hello, const dfccl_config_t *cfg);
/* Are ranks a and b on the same GPU (by the device's UUID)? */
int gpu_hello_same_device(const gpu_hello_t *a, const gpu_hello_t *b);
/* DFCCL_OK when every rank's set-up succeeded and all share the settings;
 * else the first rank's failure, or DFCCL_ERR_INVALID_PARAM for settings
 * that differ (said by rank 0). */
dfccl_status_t gpu_hello_agree(const dfccl_comm_t *comm, const gpu_hello_t *all);

#endif
