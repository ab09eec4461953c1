/*
 * gpu_block_state.cuh - what a block's threads share (the command thread 0
 * sets for all of them) and thread 0's own state within one launch.
 * The LL paths' contexts (gpu_ll.cuh, gpu_ll_early.cuh) live in the shared
 * command.
 */
#ifndef DFCCL_GPU_BLOCK_STATE_CUH
#define DFCCL_GPU_BLOCK_STATE_CUH

#include "kernels/gpu_device.cuh"
#include <stddef.h>
#include <stdint.h>
#include "core/exec.h"
#include "backends/gpu/gpu_shared.h"
#include "kernels/gpu_ll.cuh"
#include "kernels/gpu_ll_early.cuh"

typedef enum {
    CMD_NONE,          /* nothing for the other threads this round */
    CMD_QUIT,
    CMD_ADMIT,         /* copy new submissions into this block's tasks */
    CMD_RING_SLICE,
    CMD_ONESHOT_SEND,
    CMD_ONESHOT_RECV,
    CMD_LL,             /* LL: send (phase 0), then receive if the peers' lines are there */
    CMD_DIRECT_GATHER,  /* the peers' board entries into our host's request */
    CMD_DIRECT_TABLE,   /* our host's pointers into the channels' table */
    CMD_DIRECT_MOVE
} gpu_cmd_t;

/* 16-byte vectors of a submission before its reduce-scatter counts: what
 * admission reads field by field, kept in shared memory by the copy. */
#define GPU_DESC_HEAD_VECS ((offsetof(dfccl_gpu_desc_t, rs_counts) + 15) / 16)

typedef struct gpu_shared {
    gpu_cmd_t     cmd;
    int           slot;
    uint32_t      nsteps;
    dfccl_slice_t slice;
    uint4         head[GPU_DESC_HEAD_VECS];   /* CMD_ADMIT: the submission's first fields */
    uint64_t      admit_k;      /* and, admitted, its one-shot number */
    int           admit_broken; /* and whether its communicator had failed, */
    int           admit_sent;   /* and whether its LL lines are out already */
    gpu_ll_early_t early;       /* CMD_ADMIT: an LL send ahead of the copy */
    /* block 0 with nothing in hand: warp 1 reads the LL summary of ticket
     * llh_ticket (set by thread 0 between commands; UINT64_MAX: none)
     * while thread 0 reads the control words */
    uint64_t      llh_ticket;
    uint4         llh[GPU_LLH_VECS];
    struct {                    /* CMD_LL */
        uint64_t start, deadline;   /* the receive waits for lines until deadline */
        int      send;              /* the first attempt: send, then receive */
        int      fill;              /* ctx is not this task's: fill it first */
        uint32_t comm;              /* the task's communicator and one-shot number */
        uint64_t k;
        int      ok;                /* every line was there */
        int      lagging;           /* else: a rank whose line was missing */
        long long first_clk;        /* trace: thread 0's first line load was back (clock64), */
        long long done_clk;         /* it had handled its lines, */
        uint32_t polls;             /* and loaded one again this often */
        gpu_ll_ctx_t ctx;           /* kept across attempts */
    } ll;
    struct {                    /* CMD_DIRECT_MOVE: the chunk's inputs and outputs */
        char    *ins[DFCCL_GPU_ALL_PEER_RANKS];
        char    *outs[DFCCL_GPU_ALL_PEER_RANKS];
        int      nin, nout;
        uint64_t count;
        uint64_t at, end, stride;   /* elements: this chunk, the piece's end, to the next */
        int      more;              /* the command goes on with the next chunk */
    } direct;
} gpu_shared_t;

/* Thread 0's state within one launch. */
typedef struct gpu_sched {
    int      turn;            /* index in the active list of the running turn, or -1 */
    int      pos;             /* where the pass goes on */
    int      first_of_pass;
    uint64_t turn_budget, turn_blocked_since;
    int      turn_moved;
    uint32_t relax_ns;
    uint32_t wait_peer;
    uint64_t seen_ns;         /* when the submission being admitted was seen */
    int      express;         /* the command is set: no pass of the scheduler */
    ulonglong2 ctrl;          /* the control words as last read, */
    uint64_t ctrl_ns;         /* and when */
    ulonglong2 next;          /* block 0: the first 16 bytes of the next ticket's entry,
                                 read with them (ticket, nparts, nsteps) */
    uint64_t quit_check_ns;   /* block 0: when it last asked gpu_should_quit */
    /* trace: clock64 when the submission was seen; cycles of the control
     * read, of the read that saw it, and of the admission until the task */
    long long clk_seen;
    uint32_t ctrl_cyc, seen_cyc, issue_cyc, copy_cyc;
    int      mirror_due;      /* block 0: admitted, sq_mirror not yet raised */
} gpu_sched_t;

__device__ static dfccl_gpu_task_t *gpu_task(const dfccl_gpu_env_t *env, int slot)
{
    return &env->state->tasks[slot][blockIdx.x];
}

#endif
