/*
 * gpu_oneshot.cuh - the one-shot path for small collectives: inboxes, readiness,
 * the two phases.
 * Included once, by daemon_kernel.cu (one translation unit: the kernel
 * inlines all of it).
 */
#ifndef DFCCL_GPU_ONESHOT_CUH
#define DFCCL_GPU_ONESHOT_CUH

/* ---- one-shot for small messages ------------------------------------------ */

__device__ static inline dfccl_gpu_inbox_ctrl_t *gpu_inbox_ctrl(const dfccl_gpu_comm_dev_t *c, int r)
{
    return (dfccl_gpu_inbox_ctrl_t *)c->inbox[r];
}

__device__ static inline char *gpu_inbox_slot(const dfccl_gpu_comm_dev_t *c, int owner, int from)
{
    return c->inbox[owner] + DFCCL_GPU_INBOX_DATA_OFFSET + (size_t)from * DFCCL_GPU_SMALL_BYTES;
}

__device__ static uint64_t gpu_rs_displ(const dfccl_gpu_task_t *t, int r)
{
    uint64_t d = 0;
    for (int i = 0; i < r; i++) d += t->desc.rs_counts[i];
    return d;
}

/* Thread 0: may the one-shot's current phase run? Records the peer it waits for. */
__device__ static int gpu_oneshot_ready(dfccl_gpu_task_t *t, const dfccl_gpu_comm_dev_t *c,
                                        uint32_t *peer)
{
    const dfccl_gpu_inbox_ctrl_t *mine = gpu_inbox_ctrl(c, c->rank);

    for (int p = 0; p < c->size; p++) {
        if (p == c->rank) continue;
        uint64_t have = t->phase == 0 ? mine->acked[p] : mine->arrived[p];
        uint64_t need = t->phase == 0 ? t->small_k - 1 : t->small_k;
        if (have < need) {
            *peer = (uint32_t)p;
            t->exec.waiting = t->phase == 0 ? DFCCL_WAIT_SEND : DFCCL_WAIT_RECV;
            return 0;
        }
    }
    __threadfence_system();   /* acquire: the peers' data and slots are ours now */
    t->exec.waiting = DFCCL_WAIT_NONE;
    return 1;
}

/* All threads: phase 0 writes our contribution into every inbox (ours too,
 * so that phase 1 reads all inputs alike and in-place inputs are saved). */
__device__ static void gpu_oneshot_send(const dfccl_gpu_task_t *t, const dfccl_gpu_comm_dev_t *c)
{
    const dfccl_exec_t *x = &t->exec;
    const char *in = x->sendbuf ? x->sendbuf : x->recvbuf;

    for (int p = 0; p < c->size; p++) {
        char *slot = gpu_inbox_slot(c, p, c->rank);
        switch (t->type) {
        case DFCCL_COLL_ALLREDUCE:
            gpu_copy(slot, NULL, in, t->desc.count * x->esize);
            break;
        case DFCCL_COLL_ALLGATHER:
            gpu_copy(slot, NULL, x->sendbuf ? x->sendbuf : x->recvbuf + (size_t)c->rank *
                     t->desc.count * x->esize, t->desc.count * x->esize);
            break;
        default:
            gpu_copy(slot, NULL, in + gpu_rs_displ(t, p) * x->esize, t->desc.rs_counts[p] * x->esize);
            break;
        }
    }
}

/* All threads: phase 1 combines the inbox slots in rank order. */
__device__ static void gpu_oneshot_recv(const dfccl_gpu_task_t *t, const dfccl_gpu_comm_dev_t *c)
{
    const dfccl_exec_t *x = &t->exec;
    int me = c->rank, n = c->size;

    if (t->type == DFCCL_COLL_ALLGATHER) {
        for (int p = 0; p < n; p++)
            gpu_copy(x->recvbuf + (size_t)p * t->desc.count * x->esize, NULL, gpu_inbox_slot(c, me, p),
                     t->desc.count * x->esize);
        return;
    }
    size_t count = t->type == DFCCL_COLL_ALLREDUCE ? t->desc.count : t->desc.rs_counts[me];
    if (n == 1) {
        gpu_copy(x->recvbuf, NULL, gpu_inbox_slot(c, me, 0), count * x->esize);
        return;
    }
    /* each thread owns its elements through every pass: no barrier needed */
    gpu_sca_reduce(gpu_inbox_slot(c, me, 0), gpu_inbox_slot(c, me, 1), x->recvbuf, NULL, count,
                   x->dtype, x->op);
    for (int p = 2; p < n; p++)
        gpu_sca_reduce(x->recvbuf, gpu_inbox_slot(c, me, p), x->recvbuf, NULL, count, x->dtype,
                       x->op);
}

/* Thread 0, after a phase moved: tell the peers. */
__device__ static void gpu_oneshot_publish(dfccl_gpu_task_t *t, const dfccl_gpu_comm_dev_t *c)
{
    __threadfence_system();
    for (int p = 0; p < c->size; p++) {
        if (p == c->rank) continue;
        dfccl_gpu_inbox_ctrl_t *theirs = gpu_inbox_ctrl(c, p);
        if (t->phase == 0) theirs->arrived[c->rank] = t->small_k;
        else theirs->acked[c->rank] = t->small_k;
    }
    t->phase++;
}

#endif
