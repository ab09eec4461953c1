/*
 * gpu_oneshot.cuh - the one-shot path for small collectives: inboxes, readiness,
 * the two phases.
 */
#ifndef DFCCL_GPU_ONESHOT_CUH
#define DFCCL_GPU_ONESHOT_CUH

#include "kernels/gpu_device.cuh"
#include <stddef.h>
#include <stdint.h>
#include "core/exec.h"
#include "backends/gpu/gpu_shared.h"
#include "kernels/gpu_movers.cuh"
#include "kernels/gpu_direct_move.cuh"

/* ---- one-shot for small messages ------------------------------------------ */

__device__ static inline dfccl_gpu_inbox_ctrl_t *gpu_inbox_ctrl(const dfccl_gpu_comm_dev_t *c, int r)
{
    return (dfccl_gpu_inbox_ctrl_t *)c->inbox[r];
}

/* Slot of `from` in owner's inbox for one-shot k (two sets, by parity). */
__device__ static inline char *gpu_inbox_slot(const dfccl_gpu_comm_dev_t *c, int owner, int from,
                                              uint64_t k)
{
    size_t set = (size_t)(k & 1) * (size_t)c->size;
    return c->inbox[owner] + DFCCL_GPU_INBOX_DATA_OFFSET + (set + (size_t)from) * DFCCL_GPU_SMALL_BYTES;
}

/* The inbox traffic's fence. Peers on other GPUs need system scope. For
 * peers on this GPU a GPU-scope fence serves, and measured cheaper than a
 * system-scope one: what orders memory there is the L2 cache that every
 * process's kernels on the device share, and the data is read past L1.
 * PTX's scopes name only the threads of one program, so this rests on how
 * the hardware works, not on the written model (docs/gpu-backend.md). */
__device__ static inline void gpu_fence_peers(const dfccl_gpu_comm_dev_t *c)
{
    if (c->one_device) __threadfence();
    else __threadfence_system();
}

__device__ static uint64_t gpu_rs_displ(const dfccl_gpu_task_t *t, int r)
{
    uint64_t d = 0;
    for (int i = 0; i < r; i++) d += t->desc.rs_counts[i];
    return d;
}

/* Thread 0: the first peer whose counter is below need, or -1. The loads are
 * issued eight at a time before any is compared, so their latencies overlap
 * (each is a trip to memory). */
__device__ static int gpu_counters_lagging(const volatile uint64_t *counters, int n, int me,
                                           uint64_t need)
{
    for (int base = 0; base < n; base += 8) {
        uint64_t v[8];
        _Pragma("unroll") for (int j = 0; j < 8; j++)
            v[j] = base + j < n && base + j != me ? counters[base + j] : need;
        _Pragma("unroll") for (int j = 0; j < 8; j++)
            if (v[j] < need) return base + j;
    }
    return -1;
}

/* Thread 0: may the one-shot's current phase run? Records the peer it waits for.
 * Sending needs nothing (the slots are free, see dfccl_gpu_inbox_ctrl_t);
 * receiving k needs every peer's k. */
__device__ static int gpu_oneshot_ready(dfccl_gpu_task_t *t, const dfccl_gpu_comm_dev_t *c,
                                        uint32_t *peer)
{
    const dfccl_gpu_inbox_ctrl_t *mine = gpu_inbox_ctrl(c, c->rank);
    int lagging;

    if (t->phase == 0) return 1;
    lagging = gpu_counters_lagging(mine->arrived, c->size, c->rank, t->small_k);
    if (lagging >= 0) {
        *peer = (uint32_t)lagging;
        t->exec.waiting = DFCCL_WAIT_RECV;
        return 0;
    }
    gpu_fence_peers(c);   /* acquire: the peers' data are ours now */
    t->exec.waiting = DFCCL_WAIT_NONE;
    return 1;
}

/* Our contribution to rank p and its bytes (allreduce and allgather send the
 * same to all): what both one-shots send. */
__device__ static const char *gpu_oneshot_source(const dfccl_gpu_task_t *t, int me, int p,
                                                 size_t *bytes)
{
    const dfccl_exec_t *x = &t->exec;
    const char *in = x->sendbuf ? x->sendbuf : x->recvbuf;

    switch (t->type) {
    case DFCCL_COLL_ALLREDUCE:
        *bytes = t->desc.count * x->esize;
        return in;
    case DFCCL_COLL_ALLGATHER:
        *bytes = t->desc.count * x->esize;
        return x->sendbuf ? x->sendbuf : x->recvbuf + (size_t)me * *bytes;
    default:
        *bytes = t->desc.rs_counts[p] * x->esize;
        return in + gpu_rs_displ(t, p) * x->esize;
    }
}

/* All threads: phase 0 writes our contribution into every inbox (ours too,
 * so that phase 1 reads all inputs alike and in-place inputs are saved). */
__device__ static void gpu_oneshot_send(const dfccl_gpu_task_t *t, const dfccl_gpu_comm_dev_t *c)
{
    for (int p = 0; p < c->size; p++) {
        size_t bytes;
        const char *from = gpu_oneshot_source(t, c->rank, p, &bytes);
        gpu_copy(gpu_inbox_slot(c, p, c->rank, t->small_k), NULL, from, bytes);
    }
}

/* All threads: phase 1 combines the inbox slots in rank order (every rank
 * the same way: bit-identical results), 16-byte vectors where aligned. */
__device__ static void gpu_oneshot_recv(const dfccl_gpu_task_t *t, const dfccl_gpu_comm_dev_t *c)
{
    const dfccl_exec_t *x = &t->exec;
    int me = c->rank, n = c->size;
    char *ins[DFCCL_GPU_ALL_PEER_RANKS];

    if (t->type == DFCCL_COLL_ALLGATHER) {
        for (int p = 0; p < n; p++)
            gpu_copy(x->recvbuf + (size_t)p * t->desc.count * x->esize, NULL,
                     gpu_inbox_slot(c, me, p, t->small_k), t->desc.count * x->esize);
        return;
    }
    size_t count = t->type == DFCCL_COLL_ALLREDUCE ? t->desc.count : t->desc.rs_counts[me];
    if (n == 1) {
        gpu_copy(x->recvbuf, NULL, gpu_inbox_slot(c, me, 0, t->small_k), count * x->esize);
        return;
    }
    for (int p = 0; p < n; p++) ins[p] = gpu_inbox_slot(c, me, p, t->small_k);
    /* each thread owns its elements through every input: no barrier needed */
    gpu_direct_move(ins, n, &x->recvbuf, 1, count, x->esize, x->dtype, x->op, 1);
}

/* Thread 0, after a phase moved: a send is announced to the peers. */
__device__ static void gpu_oneshot_publish(dfccl_gpu_task_t *t, const dfccl_gpu_comm_dev_t *c)
{
    if (t->phase == 0) {
        gpu_fence_peers(c);   /* release: the data before the counters */
        for (int p = 0; p < c->size; p++)
            if (p != c->rank) gpu_inbox_ctrl(c, p)->arrived[c->rank] = t->small_k;
    }
    t->phase++;
}

#endif
