/*
 * gpu_ll.cuh - the low-latency one-shot for the smallest collectives.
 * Included once, by daemon_kernel.cu (one translation unit: the kernel
 * inlines all of it).
 *
 * The exchange of the one-shot (gpu_oneshot.cuh), but in 16-byte lines that
 * carry 8 data bytes and the collective's number twice, as NCCL's LL
 * protocol does: each 8-byte half is one store, so a line whose two flags
 * match holds its data. A sender needs no fence and no counter after its
 * data, and a receiver polls the data itself, every thread its own lines,
 * instead of thread 0 waiting for counters and fencing. Twice the bytes
 * cross, which only small messages can afford.
 *
 * Flags are the one-shot's number modulo 2^32; an inbox line is rewritten
 * by every LL one-shot of its parity that reaches it, so an old line could
 * pass for a new one only if it stayed untouched through 2^32 one-shots.
 */
#ifndef DFCCL_GPU_LL_CUH
#define DFCCL_GPU_LL_CUH

#define GPU_LL_DATA 8   /* data bytes per line */

/* Lines of `from` in owner's inbox for one-shot k (two sets, by parity). */
__device__ static inline uint4 *gpu_ll_slot(const dfccl_gpu_comm_dev_t *c, int owner, int from,
                                            uint64_t k)
{
    size_t set = (size_t)(k & 1) * (size_t)c->size;
    return (uint4 *)(c->inbox[owner] + DFCCL_GPU_INBOX_LL_OFFSET(c->size) +
                     (set + (size_t)from) * DFCCL_GPU_LL_SLOT_BYTES);
}

/* One line in one 16-byte access; volatile, as other processes write it. */
__device__ static inline void gpu_ll_store(uint4 *line, uint64_t v, uint32_t flag)
{
    asm volatile("st.volatile.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(line),
                 "r"((uint32_t)v), "r"(flag), "r"((uint32_t)(v >> 32)), "r"(flag)
                 : "memory");
}

__device__ static inline uint4 gpu_ll_load(const uint4 *line)
{
    uint4 l;
    asm volatile("ld.volatile.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(l.x), "=r"(l.y), "=r"(l.z), "=r"(l.w)
                 : "l"(line)
                 : "memory");
    return l;
}

/* Up to 8 bytes of an application buffer, past L1 (another kernel may have
 * written them since this one last looked). */
__device__ static inline uint64_t gpu_ll_gather(const char *p, size_t n)
{
    uint64_t v = 0;

    if (n == GPU_LL_DATA && ((uintptr_t)p & 7) == 0) return __ldcg((const unsigned long long *)p);
    for (size_t b = 0; b < n; b++) v |= (uint64_t)((const volatile uint8_t *)p)[b] << (8 * b);
    return v;
}

__device__ static inline void gpu_ll_scatter(char *p, uint64_t v, size_t n)
{
    if (n == GPU_LL_DATA && ((uintptr_t)p & 7) == 0) {
        *(uint64_t *)p = v;
        return;
    }
    for (size_t b = 0; b < n; b++) p[b] = (char)(v >> (8 * b));
}

/* Lines that carry `bytes`: at least one, so that every collective reaches
 * every peer. A rank starts one-shot k + 1 (into the slot set of k - 1) once
 * it holds every peer's line of k, which each peer wrote only after it had
 * read all of k - 1; a contribution without lines would break that chain. */
__device__ static inline size_t gpu_ll_lines(size_t bytes)
{
    return bytes ? (bytes + GPU_LL_DATA - 1) / GPU_LL_DATA : 1;
}

/* Data bytes of line i (0 for an empty contribution's one line). */
__device__ static inline size_t gpu_ll_len(size_t i, size_t bytes)
{
    size_t at = i * GPU_LL_DATA;
    return at >= bytes ? 0 : bytes - at < GPU_LL_DATA ? bytes - at : GPU_LL_DATA;
}

/* All threads: our contribution, line by line, into every inbox (ours too,
 * so that the receive reads all inputs alike and in-place inputs are kept). */
__device__ static void gpu_ll_send(const dfccl_gpu_task_t *t, const dfccl_gpu_comm_dev_t *c)
{
    int me = c->rank, n = c->size;
    uint32_t flag = (uint32_t)t->small_k;
    size_t bytes;

    if (t->type != DFCCL_COLL_REDUCE_SCATTER) {
        const char *from = gpu_oneshot_source(t, me, 0, &bytes);
        for (size_t i = threadIdx.x; i < gpu_ll_lines(bytes); i += blockDim.x) {
            uint64_t v = gpu_ll_gather(from + i * GPU_LL_DATA, gpu_ll_len(i, bytes));
            for (int p = 0; p < n; p++) gpu_ll_store(gpu_ll_slot(c, p, me, t->small_k) + i, v, flag);
        }
        return;
    }
    for (int p = 0; p < n; p++) {
        const char *from = gpu_oneshot_source(t, me, p, &bytes);
        uint4 *to = gpu_ll_slot(c, p, me, t->small_k);
        for (size_t i = threadIdx.x; i < gpu_ll_lines(bytes); i += blockDim.x)
            gpu_ll_store(to + i, gpu_ll_gather(from + i * GPU_LL_DATA, gpu_ll_len(i, bytes)), flag);
    }
}

/* One line, polled until its flags say `flag` or the deadline passes. */
__device__ static inline int gpu_ll_wait(const uint4 *line, uint4 *l, uint32_t flag, uint64_t deadline)
{
    while (l->y != flag || l->w != flag) {
        if (gpu_now_ns() >= deadline) return 0;
        *l = gpu_ll_load(line);
    }
    return 1;
}

/* Lines in flight per thread while it polls: their latencies overlap. */
#define GPU_LL_BATCH 8

/*
 * All threads: line i of every rank's contribution in our inbox, in rank
 * order, reduced (or, for allgather, copied) into the output. Returns 0 when
 * some line was not there by the deadline (*lagging: whose).
 */
__device__ static int gpu_ll_line(const dfccl_gpu_task_t *t, const dfccl_gpu_comm_dev_t *c,
                                  size_t i, size_t bytes, uint64_t deadline, int *lagging)
{
    int me = c->rank, n = c->size, gather = t->type == DFCCL_COLL_ALLGATHER;
    uint32_t flag = (uint32_t)t->small_k;
    size_t at = i * GPU_LL_DATA, len = gpu_ll_len(i, bytes), ne = len / t->exec.esize;
    char *out = t->exec.recvbuf + at;
    uint64_t acc = 0;

    for (int base = 0; base < n; base += GPU_LL_BATCH) {
        uint4 l[GPU_LL_BATCH];
        _Pragma("unroll") for (int j = 0; j < GPU_LL_BATCH; j++)
            if (base + j < n) l[j] = gpu_ll_load(gpu_ll_slot(c, me, base + j, t->small_k) + i);
        _Pragma("unroll") for (int j = 0; j < GPU_LL_BATCH; j++) {
            int p = base + j;
            if (p >= n) break;
            if (!gpu_ll_wait(gpu_ll_slot(c, me, p, t->small_k) + i, &l[j], flag, deadline)) {
                *lagging = p;
                return 0;
            }
            uint64_t v = (uint64_t)l[j].x | (uint64_t)l[j].z << 32;
            if (gather) {
                gpu_ll_scatter(t->exec.recvbuf + (size_t)p * bytes + at, v, len);
            } else if (p == 0) {
                acc = v;
            } else {
                dfccl_reduce_strided(&acc, &acc, &v, ne, 0, 1, t->exec.dtype, t->exec.op);
            }
        }
    }
    if (!gather) gpu_ll_scatter(out, acc, len);
    return 1;
}

/*
 * All threads: the result, once every line has arrived; each thread polls
 * its own lines until the deadline. Returns to every thread whether all
 * were there; if not, *lagging names a rank one was missing from. Outputs
 * of an attempt that comes too early are written again by the next (the
 * inputs are in the inbox, so in place is safe).
 */
__device__ static int gpu_ll_recv(const dfccl_gpu_task_t *t, const dfccl_gpu_comm_dev_t *c,
                                  uint64_t deadline, int *lagging)
{
    size_t count = t->type == DFCCL_COLL_REDUCE_SCATTER ? t->desc.rs_counts[c->rank] : t->desc.count;
    size_t bytes = count * t->exec.esize;
    int ok = 1, who = -1;

    for (size_t i = threadIdx.x; ok && i < gpu_ll_lines(bytes); i += blockDim.x)
        ok = gpu_ll_line(t, c, i, bytes, deadline, &who);
    if (!ok) atomicMax(lagging, who);   /* shared: one of them, without a race */
    return __syncthreads_and(ok);
}

#endif
