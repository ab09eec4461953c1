/*
 * gpu_shared.h - what the host side of the GPU backend (src/backends/gpu)
 * and the daemon kernel (src/kernels/daemon_kernel.cu) share: the
 * submission queue entries and completion entries in pinned, mapped host
 * memory, the communicator table and the kernel's saved state in device
 * memory.
 *
 * Submission: the host fills descs[ticket % DFCCL_GPU_SQ_DEPTH] and then
 * publishes ctrl->sq_tail = ticket + 1. Every block of the kernel admits
 * every ticket (each channel runs its part of a collective).
 * Completion: the last channel to finish a collective fills the next entry
 * of its block's own completion ring (cq + block * DFCCL_GPU_SQ_DEPTH) and
 * writes its marker last. Only that block writes the ring, so the entry
 * needs no atomic; the host drains every block's ring. A ring never holds
 * more than DFCCL_GPU_SQ_DEPTH undrained entries: each collective gets one.
 */
#ifndef DFCCL_GPU_SHARED_H
#define DFCCL_GPU_SHARED_H

#include <stdint.h>
#include "core/exec.h"
#include "core/exec_graph.h"
#include "core/fifo.h"
#include "core/plan.h"
#include "core/sched_policy.h"

/* The paths that reach every peer (LL, one-shot, direct) serve communicators
 * of up to this many ranks, all on one node; larger ones run the ring,
 * which connects each rank to its two neighbours only. */
#define DFCCL_GPU_ALL_PEER_RANKS 32
/* Plans of up to this many steps travel inside the submission entry (the
 * ring of DFCCL_GPU_ALL_PEER_RANKS ranks); longer ones lie in device memory
 * (plan_pool.h) and the entry points at them. */
#define DFCCL_GPU_INLINE_STEPS (2 * DFCCL_GPU_ALL_PEER_RANKS + 1)
#define DFCCL_GPU_MAX_CHANNELS 32     /* blocks of the daemon kernel */
/* Connections per channel each way: the ring's, the node ring's and the
 * counterpart's on another node (conn_plan.h); a step names one by index. */
#define DFCCL_GPU_MAX_CONNS    3
#define DFCCL_GPU_MAX_CONNS0   16     /* channel 0's: also the latency algorithm's */
/* Bytes of a plan image's graph before its arrays (dfccl_exec_graph_t, on
 * 8 bytes). */
#define DFCCL_GPU_GRAPH_HEAD   ((sizeof(dfccl_exec_graph_t) + 7) & ~(size_t)7)
#define DFCCL_GPU_SQ_DEPTH     64     /* collectives in the kernel at once, per process */
#define DFCCL_GPU_MAX_COMMS    1024   /* communicators with a GPU side, per process */
/* The one-shot path: every rank writes its contribution into every peer's
 * inbox slot of this size, then each reduces locally. */
#define DFCCL_GPU_SMALL_BYTES  65536
/* The low-latency one-shot (ALGO_LL) carries contributions up to this size
 * in 16-byte lines of 8 data bytes and two flags (twice the bytes). */
#define DFCCL_GPU_LL_MAX_BYTES 16384
#define DFCCL_GPU_LL_SLOT_BYTES (2 * DFCCL_GPU_LL_MAX_BYTES)

/* dfccl_gpu_comm_dev_t.broken as the host writes it: a peer or a link to
 * it failed (net_side.c's watch). */
#define DFCCL_GPU_BROKEN_PEER  2
/* ... or calls that do not match (its collectives fail with MISMATCH). */
#define DFCCL_GPU_BROKEN_MISMATCH 3

/* Board entries per communicator for the direct algorithm: a rank publishes
 * entry k % depth only after its direct collective k - 1 finished on every
 * rank, so two would do. */
#define DFCCL_GPU_BOARD_DEPTH  4

typedef enum {
    DFCCL_GPU_ALGO_RING    = 0,   /* the plan's ring through the channel FIFOs */
    DFCCL_GPU_ALGO_ONESHOT = 1,   /* small messages through the inboxes, channel 0 only */
    DFCCL_GPU_ALGO_DIRECT  = 2,   /* large messages: every rank reads and writes its peers'
                                     buffers, mapped by CUDA IPC for the call */
    DFCCL_GPU_ALGO_LL      = 3    /* the smallest: the one-shot in lines that carry their own
                                     flags (no counters, no fences), channel 0 only */
} dfccl_gpu_algo_t;

/* A CUDA IPC memory handle (cudaIpcMemHandle_t, 64 opaque bytes). */
typedef struct dfccl_gpu_ipc_handle {
    char bytes[64];
} dfccl_gpu_ipc_handle_t;

/* One rank's buffers of a direct collective, as its peers need them. */
typedef struct __attribute__((aligned(16))) dfccl_gpu_export {
    uint32_t               ok;          /* 0: a buffer could not be exported */
    uint32_t               pad;
    uint64_t               in_offset;   /* from the start of its allocation */
    uint64_t               out_offset;
    uint64_t               in_alloc;    /* the allocations' addresses in its process: a */
    uint64_t               out_alloc;   /* new handle there means the old one was freed */
    dfccl_gpu_ipc_handle_t in_handle;   /* the input (the output when in place) */
    dfccl_gpu_ipc_handle_t out_handle;
} dfccl_gpu_export_t;

/* A submission queue entry. */
typedef struct __attribute__((aligned(16))) dfccl_gpu_desc {
    /* first 16 bytes: read by the kernel in one load */
    volatile uint64_t ticket;    /* written first (invalid) and last (valid): a seqlock */
    uint32_t     nparts;         /* channels that take part (0 .. nparts-1) */
    uint32_t     nsteps;         /* of steps[] (0 when plan is set) */
    uint32_t     comm_index;
    uint8_t      type, dtype, op, algo;
    int32_t      priority;
    uint32_t     held;           /* LL: published before the host's wait for the legacy
                                    stream ended; its LL head says when (DFCCL_GPU_LLH_HELD) */
    uint64_t     comm_key;
    uint64_t     seq;            /* on its communicator */
    uint64_t     count;          /* ALLREDUCE: elements; ALLGATHER: elements per rank */
    uint64_t     esize;
    char        *sendbuf;        /* NULL when in place */
    char        *recvbuf;
    uint64_t     chunk_elems;
    uint64_t     slice_elems;
    const dfccl_step_t *plan;    /* a plan longer than steps[] holds, in device memory;
                                    NULL: steps[0 .. nsteps) */
    uint32_t     plan_nsteps;
    uint32_t     vector_parts;   /* the channels' parts cut from the vector of count
                                    elements, not from each step (exec.h
                                    dfccl_exec_part): the hierarchical allreduce */
    uint32_t     plan_file;      /* 1: plan is a plan file's program (plan_files.h image) */
    uint32_t     plan_graph_at;  /* ... in bytes from plan: its graph, */
    uint32_t     plan_more_at;   /* ... its further send connections, */
    uint32_t     plan_deps_at;   /* ... its dependencies */
    uint64_t     rs_counts[DFCCL_GPU_ALL_PEER_RANKS];   /* REDUCE_SCATTER on the all-peer paths */
    dfccl_gpu_export_t exported;  /* DIRECT: our buffers, for the peers */
    dfccl_step_t steps[DFCCL_GPU_INLINE_STEPS];   /* the ring plan (DIRECT falls back to it),
                                                     when plan is NULL */
} dfccl_gpu_desc_t;

/* Points x (its nsteps set) at a plan file's program uploaded at base
 * (plan_files.h gpu_plan_image_t, its offsets as the entry carries them):
 * the steps, the further sends, the dependencies, and the graph, whose
 * arrays are laid out at base anew (the host made them at its copy). */
DFCCL_INLINE DFCCL_HD void gpu_plan_image_point(dfccl_exec_t *x, char *base, uint32_t more_at,
                                                uint32_t deps_at, uint32_t graph_at)
{
    dfccl_exec_graph_t *g = (dfccl_exec_graph_t *)(base + graph_at);

    x->steps = (const dfccl_step_t *)base;
    x->more_conns = (const uint8_t *)(base + more_at);
    x->deps = (const uint32_t *)(base + deps_at);
    dfccl_exec_graph_layout(g, base + graph_at + DFCCL_GPU_GRAPH_HEAD, x->nsteps);
    x->graph = g;
}

/* Why a channel failed, for the host's diagnosis line. */
typedef struct dfccl_gpu_diag {
    uint32_t channel, step, nsteps, waiting, peer, algo, phase, pad;
    uint64_t round, nrounds, offset, tail, head, blocked_ns;
} dfccl_gpu_diag_t;

/* Kernel clock (globaltimer, ns) at the steps of a collective on its last
 * channel, for the latency trace (gpu_trace). */
enum {
    DFCCL_GPU_T_SEEN,            /* block saw the submission */
    DFCCL_GPU_T_ADMITTED,        /* its copy is in device memory */
    DFCCL_GPU_T_FIRST_MOVE,      /* first primitive began */
    DFCCL_GPU_T_SENT,            /* LL and one-shot: the send done by all threads */
    DFCCL_GPU_T_LAST_MOVE,       /* last primitive began */
    DFCCL_GPU_T_RECEIVED,        /* LL and one-shot: the receive done by all threads */
    DFCCL_GPU_T_FINISHED,        /* completion entry being written */
    DFCCL_GPU_T_COUNT
};

/* SM clock cycles (clock64, thread 0 of the collective's last channel) of
 * parts of the kernel's work on a collective, for the latency trace: the
 * global clock ticks in microseconds, too coarse for them. */
enum {
    DFCCL_GPU_C_POLL,            /* the read of the control words that saw it (the last
                                    one made: while busy, block 0 reuses a recent read) */
    DFCCL_GPU_C_ISSUE,           /* from seeing it to the admission's copy beginning */
    DFCCL_GPU_C_COPY,            /* the copy of the submission (all threads) */
    DFCCL_GPU_C_ADMIT,           /* thread 0 filling the task */
    DFCCL_GPU_C_START,           /* from there to its first primitive beginning */
    DFCCL_GPU_C_SEND,            /* the send (LL, one-shot) */
    DFCCL_GPU_C_RECEIVE,         /* the receive that found everything (LL, one-shot) */
    DFCCL_GPU_C_FIRST,           /* LL: of that, until thread 0's first line load was back */
    DFCCL_GPU_C_LINES,           /* LL: until thread 0 had handled its lines */
    DFCCL_GPU_C_POLLS,           /* LL: and how often it loaded one again (a count) */
    DFCCL_GPU_C_RETRY,           /* LL: between attempts, summed */
    DFCCL_GPU_C_ATTEMPTS,        /* LL: receive attempts (a count, not cycles) */
    DFCCL_GPU_C_TAKE,            /* LL sent early (gpu_ll_early.cuh), parts of its send:
                                    from the command's beginning to the summary taken, */
    DFCCL_GPU_C_LOAD,            /* the communicator's words and the data loaded, */
    DFCCL_GPU_C_FILL,            /* the LL context filled, */
    DFCCL_GPU_C_STORE,           /* the lines stored */
    DFCCL_GPU_C_COMPLETE,        /* the completion entry, up to its fence */
    DFCCL_GPU_C_TOTAL,           /* from seeing it to its completion entry (the clock's
                                    rate: this over the global clock's interval) */
    DFCCL_GPU_C_COUNT
};

typedef struct dfccl_gpu_cqe {
    volatile uint64_t marker;    /* completion index + 1, written last */
    uint64_t          ticket;
    int32_t           status;    /* dfccl_status_t */
    int32_t           pad;
    dfccl_gpu_diag_t  diag;
    uint64_t          t[DFCCL_GPU_T_COUNT];
    /* trace: time the channels spent moving data (slowest, and summed
     * over the channels), and the algorithm that ran (direct may have
     * fallen back to the ring) */
    uint64_t          move_max_ns, move_sum_ns;
    uint32_t          algo_run, nparts;
    uint32_t          cyc[DFCCL_GPU_C_COUNT];
} dfccl_gpu_cqe_t;

/*
 * What the send of an LL allreduce, allgather or reduce-scatter (its blocks
 * all alike; others say algorithm 0 here) needs, written by the host beside
 * each submission (pinned, mapped; one per slot): block 0 reads it with the
 * control words while it has nothing in hand, and sends and receives the
 * collective within its admission, before the copy of the entry (a second
 * trip over the bus) is stored. Each 8-byte word is one store, a value in the
 * high half and the ticket's low 32 bits in the low half, as LL lines carry
 * their flags: a record whose eight tags all match the ticket is that
 * ticket's, read in any order.
 */
enum {
    DFCCL_GPU_LLH_COMM,          /* communicator index */
    DFCCL_GPU_LLH_KIND,          /* type | dtype << 8 | op << 16 | algo << 24 | held */
    DFCCL_GPU_LLH_COUNT,         /* elements (ALLGATHER, REDUCE_SCATTER: per rank) */
    DFCCL_GPU_LLH_SHAPE,         /* esize | rank << 8 | size << 16 */
    DFCCL_GPU_LLH_IN_LO,         /* our input (in place: allgather, the output's part;
                                    the others, the output buffer) */
    DFCCL_GPU_LLH_IN_HI,
    DFCCL_GPU_LLH_OUT_LO,        /* the output buffer */
    DFCCL_GPU_LLH_OUT_HI,
    DFCCL_GPU_LLH_WORDS
};
/* In the KIND word's value: the host has not finished waiting for the legacy
 * default stream, so the inputs may not be read yet. The host rewrites the
 * word without it once the wait returned (gpu_ll_head_release). */
#define DFCCL_GPU_LLH_HELD 0x80000000u

typedef struct __attribute__((aligned(64))) dfccl_gpu_ll_head {
    volatile uint64_t w[DFCCL_GPU_LLH_WORDS];
} dfccl_gpu_ll_head_t;

/* Host-written control words (pinned, mapped), read together in one load;
 * and the kernel's word that it is leaving. */
typedef struct __attribute__((aligned(16))) dfccl_gpu_ctrl {
    volatile uint64_t sq_tail;
    volatile uint64_t stop;      /* launches numbered up to this leave at once: UINT64_MAX
                                    at shutdown, the current launch when the host needs
                                    the kernel out (new mappings for a direct collective) */
    volatile uint64_t left;      /* written by the kernel: the launch that is leaving */
    volatile uint64_t hold;      /* host: stream-ordered collectives whose streams wait
                                    (stream.c); while not 0 the kernel stays */
    volatile uint64_t quitting;  /* kernel: the launch about to leave, written before it
                                    reads hold again (with the host's write of hold and read
                                    of this word, one of the two sides sees the other) */
    char              pad[24];
} dfccl_gpu_ctrl_t;

/* One rank's view of a communicator, in device memory; built by the host at
 * set-up. Channel c's FIFOs are touched only by block c; the inbox counters
 * only by block 0. */
typedef struct dfccl_gpu_comm_dev {
    int32_t        rank, size;
    uint32_t       nchannels;
    volatile int32_t broken;      /* a collective failed: later ones fail at once; the host
                                     writes DFCCL_GPU_BROKEN_PEER where it found a peer
                                     failed (its collectives then fail with PEER_FAILED) */
    uint32_t       one_device;    /* every rank on this GPU: GPU-scope fences order the
                                     inbox traffic (system scope otherwise) */
    uint32_t       pad;
    uint64_t       key;
    uint64_t       small_count;   /* one-shot collectives started (block 0) */
    uint64_t       ll_early_k;    /* the one-shot whose lines an early send last sent
                                     (block 0; gpu_ll_early.cuh) */
    uint64_t       direct_count[DFCCL_GPU_MAX_CHANNELS];   /* direct ones, per channel */
    /* channel c's connections (conn_plan.h; gpu_comm_conns): receive k from
     * its k-th receive FIFO, in our memory (or, from another node, in
     * mapped host memory); send k into its k-th send FIFO, in the peer's
     * (or a host shadow the proxy sends). Channel 0 has more: the latency
     * algorithm's partners, which run on it alone. */
    dfccl_fifo_t   recv_fifo0[DFCCL_GPU_MAX_CONNS0];
    dfccl_fifo_t   send_fifo0[DFCCL_GPU_MAX_CONNS0];
    dfccl_fifo_t   recv_fifo[DFCCL_GPU_MAX_CHANNELS - 1][DFCCL_GPU_MAX_CONNS];   /* from 1 */
    dfccl_fifo_t   send_fifo[DFCCL_GPU_MAX_CHANNELS - 1][DFCCL_GPU_MAX_CONNS];
    char          *inbox[DFCCL_GPU_ALL_PEER_RANKS];          /* every rank's inbox, ours too */
} dfccl_gpu_comm_dev_t;

/* Channel c's connections of comm table t, receiving or sending (sending 1):
 * DFCCL_GPU_MAX_CONNS0 of them on channel 0, DFCCL_GPU_MAX_CONNS on others. */
DFCCL_INLINE DFCCL_HD dfccl_fifo_t *gpu_comm_conns(dfccl_gpu_comm_dev_t *t, int sending, unsigned c)
{
    if (c == 0) return sending ? t->send_fifo0 : t->recv_fifo0;
    return sending ? t->send_fifo[c - 1] : t->recv_fifo[c - 1];
}

/* How many connections channel c's table rows hold. */
DFCCL_INLINE DFCCL_HD int gpu_comm_nconns(unsigned c)
{
    return c == 0 ? DFCCL_GPU_MAX_CONNS0 : DFCCL_GPU_MAX_CONNS;
}

/* Inbox of one rank for one communicator: counters, then two sets of one
 * data slot per peer, then two sets of one LL slot per peer. arrived[p]:
 * one-shots whose data p has written into slot p.
 * No counter says that a peer has read a slot: one-shots (of both kinds)
 * run one at a time per communicator and are numbered together, so before
 * a rank sends k it has received every peer's k - 1, which each peer sent
 * only after it had read everything of k - 2, the last user of k's slot set. */
typedef struct dfccl_gpu_inbox_ctrl {
    volatile uint64_t arrived[DFCCL_GPU_ALL_PEER_RANKS];
} dfccl_gpu_inbox_ctrl_t;

/* The direct algorithm's board in each rank's region, after the inbox
 * counters. Peers read entry k % depth of the board for direct collective
 * k: the exported buffers (valid when tag == k), then whether this rank
 * could map everyone's (open_ok, valid when open_tag == k). done[c][p]:
 * direct collectives in which rank p's channel c finished with our buffers. */
typedef struct dfccl_gpu_board_entry {
    volatile uint64_t  tag;
    volatile uint64_t  open_tag;
    volatile uint32_t  open_ok;
    uint32_t           pad;
    dfccl_gpu_export_t exported;
} dfccl_gpu_board_entry_t;

typedef struct dfccl_gpu_board {
    dfccl_gpu_board_entry_t entry[DFCCL_GPU_BOARD_DEPTH];
    volatile uint64_t       done[DFCCL_GPU_MAX_CHANNELS][DFCCL_GPU_ALL_PEER_RANKS];
} dfccl_gpu_board_t;

#define DFCCL_GPU_BOARD_OFFSET      1024
#define DFCCL_GPU_INBOX_DATA_OFFSET 16384  /* data slots start 16-byte aligned */
/* Two sets of data slots, by the one-shot's parity: a rank may write one-shot
 * k while a slow peer still reads k - 1 (k - 2 has been read, see above). */
#define DFCCL_GPU_INBOX_LL_OFFSET(size) \
    (DFCCL_GPU_INBOX_DATA_OFFSET + 2 * (size_t)(size) * DFCCL_GPU_SMALL_BYTES)
#define DFCCL_GPU_INBOX_BYTES(size) \
    (DFCCL_GPU_INBOX_LL_OFFSET(size) + 2 * (size_t)(size) * DFCCL_GPU_LL_SLOT_BYTES)

/* Direct collectives: channel 0 asks its host to map the peers' buffers
 * (request, written by the kernel) and the host answers (reply); both in
 * pinned mapped memory, one per submission slot, valid when tag ==
 * ticket + 1. */
typedef struct dfccl_gpu_direct_req {
    volatile uint64_t  tag;
    dfccl_gpu_export_t peer[DFCCL_GPU_ALL_PEER_RANKS];
} dfccl_gpu_direct_req_t;

typedef struct dfccl_gpu_direct_reply {
    volatile uint64_t tag;
    uint32_t          ok;         /* every peer's buffers are mapped */
    uint32_t          pad;
    char             *in[DFCCL_GPU_ALL_PEER_RANKS];
    char             *out[DFCCL_GPU_ALL_PEER_RANKS];
} dfccl_gpu_direct_reply_t;

/* The pointers channel 0 agreed on, in device memory for every channel;
 * valid when ready == ticket + 1. ok = 0: some rank could not map some
 * peer's buffers, and every rank runs the ring instead. */
typedef struct dfccl_gpu_direct_tab {
    volatile uint64_t ready;
    uint32_t          ok;
    uint32_t          pad;
    char             *in[DFCCL_GPU_ALL_PEER_RANKS];
    char             *out[DFCCL_GPU_ALL_PEER_RANKS];
} dfccl_gpu_direct_tab_t;

/* A collective on one channel: the saved dynamic context. */
typedef struct dfccl_gpu_task {
    dfccl_exec_t  exec;          /* ring: step, round, offset */
    uint32_t      phase;         /* one-shot and LL: 0 send, 1 receive, 2 done */
    uint32_t      algo;
    uint32_t      comm_index;
    uint32_t      type;
    uint64_t      small_k;       /* one-shot: its number on the communicator */
    uint64_t      direct_k;      /* direct: its number on the communicator's channel */
    uint64_t      budget_ns;
    uint64_t      blocked_since; /* 0 while moving */
    dfccl_sched_key_t key;
    uint32_t      nparts;
    uint32_t      held;          /* LL: its inputs may not be read before the host says so */
    uint64_t      t[DFCCL_GPU_T_FINISHED];   /* kernel clock at its steps (trace) */
    uint64_t      move_ns;       /* trace: this channel's time in data movement */
    uint64_t      clk[2];        /* trace: clock64 when seen, and at the last mark */
    uint32_t      cyc[DFCCL_GPU_C_COUNT];   /* trace: cycles of its parts */
    dfccl_gpu_desc_t desc;       /* device copy of the submission (steps: the plan) */
} dfccl_gpu_task_t;

/* A block's own scheduler state, kept across kernel launches: a launch
 * works on a copy in shared memory and saves it here when it leaves;
 * busy_ns and nactive are published here as they change (block 0's quit
 * decision reads the other blocks'). */
typedef struct dfccl_gpu_block {
    uint64_t admitted;            /* tickets seen */
    volatile uint64_t busy_ns;    /* last admission or movement */
    volatile uint32_t nactive;
    uint32_t pad;
    uint64_t cq_next;             /* entries written into its completion ring */
    uint16_t active[DFCCL_GPU_SQ_DEPTH];   /* slots, in the global order */
} dfccl_gpu_block_t;

/* Device-resident state of the daemon kernel. */
typedef struct dfccl_gpu_state {
    volatile uint64_t  quit_launch;          /* block 0 ends launch number ... for all */
    /* Block 0 alone reads the submission queue in host memory; it copies
     * each entry here and then raises sq_mirror, which the other blocks
     * read instead of the bus. */
    volatile uint64_t  sq_mirror;
    dfccl_gpu_desc_t   descs[DFCCL_GPU_SQ_DEPTH];
    uint32_t           done[DFCCL_GPU_SQ_DEPTH];     /* channels finished per slot */
    int32_t            status[DFCCL_GPU_SQ_DEPTH];   /* worst channel status per slot */
    uint32_t           diag_taken[DFCCL_GPU_SQ_DEPTH];
    unsigned long long move_max[DFCCL_GPU_SQ_DEPTH];   /* trace: over the channels */
    unsigned long long move_sum[DFCCL_GPU_SQ_DEPTH];
    dfccl_gpu_diag_t   diag[DFCCL_GPU_SQ_DEPTH];
    dfccl_gpu_direct_tab_t direct[DFCCL_GPU_SQ_DEPTH];
    dfccl_gpu_block_t  blocks[DFCCL_GPU_MAX_CHANNELS];
    dfccl_gpu_task_t   tasks[DFCCL_GPU_SQ_DEPTH][DFCCL_GPU_MAX_CHANNELS];
} dfccl_gpu_state_t;

/* Everything a launch needs (kernel parameter). */
typedef struct dfccl_gpu_env {
    dfccl_gpu_ctrl_t     *ctrl;      /* mapped host memory */
    dfccl_gpu_desc_t     *descs;     /* mapped host memory */
    dfccl_gpu_ll_head_t  *ll_heads;  /* mapped host memory, one per descs entry */
    dfccl_gpu_cqe_t      *cq;        /* mapped host memory: a ring of DFCCL_GPU_SQ_DEPTH
                                        entries per block */
    dfccl_gpu_direct_req_t   *direct_req;     /* mapped host memory */
    dfccl_gpu_direct_reply_t *direct_reply;   /* mapped host memory */
    dfccl_gpu_state_t    *state;     /* device memory */
    dfccl_gpu_comm_dev_t *comms;     /* device memory */
    uint64_t budget_head_ns, budget_ns, budget_min_ns, budget_max_ns;
    uint64_t timeout_ns;
    uint64_t idle_quit_ns;           /* nothing to do this long: the kernel leaves */
    uint64_t stuck_quit_ns;          /* nothing moved this long: the kernel leaves */
    uint64_t launch_id;              /* numbers the launches (quit_launch) */
    uint64_t direct_chunk_bytes;     /* direct: bytes a channel moves per turn */
    uint32_t poll_max_ns;            /* longest nap between passes that moved nothing */
    uint32_t trace;                  /* 1: stamp the steps into completion entries */
    uint64_t ll_wait_ns;             /* an LL receive attempt's longest poll for its lines */
    uint32_t pad2;
} dfccl_gpu_env_t;

#endif
