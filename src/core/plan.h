/*
 * plan.h - a collective as a short per-rank program of primitive steps
 * that address any peer of the communicator.
 *
 * A step moves `count` elements, slice by slice (one FIFO slot each):
 *     value = recv ? (reduce ? recv OP src : recv) : src
 *     if dst:  write value to dst
 *     for each peer it sends to: write value into that connection's next slot
 * A step with neither recv nor send is a local copy (memmove semantics).
 * The ring algorithms read like NCCL's runRing: send, recvReduceSend...,
 * recvReduceCopySend, recvCopySend..., recv.
 *
 * A step runs once the steps it depends on have moved the same part of
 * their blocks (see exec_graph.h): the step before it where `chain` is set
 * (built-in algorithms and version 1 plan files: program order), else the
 * steps its dependency list names, which point backwards. Each (sender,
 * receiver) pair has one connection per direction, a FIFO; the k-th step of
 * a rank that sends to a peer pairs with the k-th step of that peer that
 * receives from it, and both move the same count.
 *
 * The executor needs only the step (connection indices, 8 bytes of flags);
 * the peers a plan names travel next to the steps (dfccl_step_peers_t) until
 * the backend maps them onto its connections.
 */
#ifndef DFCCL_PLAN_H
#define DFCCL_PLAN_H

#include <stdint.h>
#include "include/dfccl.h"

typedef enum {
    DFCCL_BUF_NONE = 0,
    DFCCL_BUF_SEND = 1,   /* the user's send buffer */
    DFCCL_BUF_RECV = 2    /* the user's receive buffer */
} dfccl_buf_t;

/* Connections one rank's plans may use on one communicator, each way; a
 * step sends to at most that many peers (multicast). */
#define DFCCL_PLAN_MAX_CONNS 255

typedef struct dfccl_step {
    uint8_t  recv;       /* consume one slot per slice from connection recv_conn */
    uint8_t  send;       /* number of connections it sends to, 0..255 */
    uint8_t  reduce;     /* combine what was received with src */
    uint8_t  src_buf;    /* dfccl_buf_t */
    uint8_t  dst_buf;    /* dfccl_buf_t */
    uint8_t  recv_conn;  /* index into the executor's receive connections */
    uint8_t  send_conn;  /* the first connection it sends to ... */
    uint8_t  chain;      /* 1: depends on the step before it */
    uint32_t more_at;    /* ... the others: the plan's more_conns[more_at .. + send - 1) */
    uint32_t dep_at;     /* steps it depends on: the plan's deps[dep_at .. + ndeps) */
    uint32_t ndeps;
    uint32_t reserved;
    uint64_t src_off;    /* elements */
    uint64_t dst_off;    /* elements */
    uint64_t count;      /* elements */
} dfccl_step_t;

/* The ranks a step names: recv (when it receives), send (the first it sends
 * to; the others in the plan's more_peers from the step's more_at on). */
typedef struct dfccl_step_peers {
    int32_t recv;
    int32_t send;
} dfccl_step_peers_t;

/* Where ranks are: node[r] in 0..nnodes-1 (numbered by first rank), local[r]
 * the rank's index among its node's ranks (in rank order); order[] the ranks
 * node by node (the flat ring), pos[r] rank r's place in it. */
typedef struct dfccl_topo {
    int        size;
    int        nnodes;
    const int *node;
    const int *local;
    const int *order;
    const int *pos;
    int        uniform;   /* every node holds the same number of ranks */
} dfccl_topo_t;

/* Fills local, order and pos (size entries each) and *nnodes, *uniform from
 * node (size entries, 0..nnodes-1 numbered by first rank). */
void dfccl_topo_derive(int size, const int *node, int *local, int *order, int *pos, int *nnodes,
                       int *uniform);

typedef enum {
    DFCCL_ALGO_RING = 0,       /* one ring over all ranks, node by node */
    DFCCL_ALGO_HIER = 1,       /* allreduce: node reduce-scatter, allreduce of each shard
                                  across nodes, node allgather */
    DFCCL_ALGO_RD   = 2,       /* allreduce: recursive doubling (latency) */
    DFCCL_ALGO_COUNT
} dfccl_algo_t;

const char *dfccl_algo_name(dfccl_algo_t algo);

/* What a rank's program is built for. */
typedef struct dfccl_plan_call {
    dfccl_coll_type_t type;
    int               in_place;
    size_t            count;    /* allreduce: elements; allgather: per rank */
    const size_t     *counts;   /* reduce-scatter: per rank; else NULL */
} dfccl_plan_call_t;

/* A rank's program while it is built: steps and their peers (cap of each),
 * the peers of sends beyond a step's first (more_cap), the dependency lists
 * (deps_cap). Built-in algorithms are chains and use neither list. */
typedef struct dfccl_plan {
    dfccl_step_t       *steps;
    dfccl_step_peers_t *peers;
    uint32_t            nsteps;
    uint32_t            cap;
    uint64_t            max_block;  /* the largest step's count */
    int32_t            *more_peers;
    uint32_t            nmore, more_cap;
    uint32_t           *deps;
    uint32_t            ndeps, deps_cap;
} dfccl_plan_t;

/* Largest number of steps any algorithm's plan has on size ranks. */
uint32_t dfccl_plan_max_steps(int size);

/*
 * Builds rank's program for one algorithm (steps and peers must hold
 * dfccl_plan_max_steps(size)). An in-place reduce-scatter writes its
 * result straight to the front of the buffer (the rest keeps the caller's
 * input): its last step's source and destination may overlap, which the
 * movers take by combining in the received slot. DFCCL_ERR_UNSUPPORTED when
 * the algorithm does not serve this call on this topology.
 */
dfccl_status_t dfccl_plan_build(dfccl_algo_t algo, const dfccl_plan_call_t *call,
                                const dfccl_topo_t *topo, int rank, dfccl_plan_t *plan);

/*
 * The ring's neighbours of rank, node by node: the ranks of a node in rank
 * order, then the next node's (nodes in the order of dfccl_topo_t, node[r]
 * numbered from 0 by first rank), so that however ranks are numbered the
 * ring enters and leaves each node once. node NULL: one node (rank order).
 */
void dfccl_plan_ring_peers(int size, const int *node, int rank, int *prev, int *next);

/*
 * The one-ring program (the GPU backend's plan), node by node as
 * dfccl_plan_ring_peers: every send goes to the ring's next rank and every
 * receive comes from its previous one, both on connection 0. node NULL: one
 * node. *max_block: the largest block, the same on every rank.
 */
dfccl_status_t dfccl_plan_ring(dfccl_coll_type_t type, int rank, int size, const int *node,
                               int in_place, size_t count, const size_t *counts,
                               dfccl_step_t *steps, uint32_t *nsteps, uint64_t *max_block);

/*
 * Rank's program of the latency algorithm across nodes (allreduce): the
 * node's ring reduces into the node's last rank, the leaders of the nodes
 * run recursive doubling, and the result goes round each node's ring (see
 * plan_algos.c). Chains only; peers: the node's ring neighbours and, on a
 * leader, dfccl_plan_node_rd_peers. Steps must hold
 * dfccl_plan_max_steps(size). DFCCL_ERR_UNSUPPORTED for other collectives.
 */
dfccl_status_t dfccl_plan_node_rd(const dfccl_plan_call_t *call, const dfccl_topo_t *topo,
                                  int rank, dfccl_plan_t *plan);
/* The leaders rank exchanges with in that algorithm (none where rank leads
 * no node); returns how many (at most max). */
int dfccl_plan_node_rd_peers(const dfccl_topo_t *topo, int rank, int *peers, int max);

/*
 * The ranks rank may send to under any algorithm the topology allows,
 * sorted, without duplicates or rank itself: the connections a
 * communicator sets up. Returns how many (at most max).
 */
int dfccl_plan_send_peers(const dfccl_topo_t *topo, int rank, int *peers, int max);

/*
 * The algorithm for a call: the same on every rank, since it depends only
 * on what every rank knows alike. forced: DFCCL_ALGO_COUNT for automatic
 * choice, else the algorithm to use where it serves the call. rd_max_bytes:
 * allreduces across nodes up to this size take recursive doubling.
 */
dfccl_algo_t dfccl_plan_choose(const dfccl_plan_call_t *call, const dfccl_topo_t *topo,
                               size_t esize, dfccl_algo_t forced, uint64_t rd_max_bytes);

/* 1 when the plan's steps may be cut into parts that move side by side
 * (GPU channels); 0 when they must move in order. Reduce-scatter in place
 * writes each rank's result to the front of its buffer, over input blocks
 * that the other parts may still be sending: it runs as one part unless no
 * rank's result moves. Decided from what every rank knows alike. */
int dfccl_plan_parts_allowed(dfccl_coll_type_t type, int in_place, const size_t *counts, int size);

/* Elements of every block moved per round: half of a FIFO's slots. */
uint64_t dfccl_plan_chunk_elems(size_t slot_bytes, uint32_t nslots, size_t esize);

#endif
