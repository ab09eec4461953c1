/*
 * gpu_direct_move.cuh - the direct path for large collectives: its phases, the chunk
 * layout and the movers over all ranks' buffers.
 */
#ifndef DFCCL_GPU_DIRECT_MOVE_CUH
#define DFCCL_GPU_DIRECT_MOVE_CUH

#include "kernels/gpu_device.cuh"
#include <stddef.h>
#include <stdint.h>
#include "backends/gpu/gpu_shared.h"
#include "kernels/gpu_movers.cuh"

/* ---- direct, for large messages ------------------------------------------- */
/*
 * Every rank maps its peers' buffers (CUDA IPC, per call; the host caches
 * the mappings). Channel c of rank r owns some chunks: for allreduce chunks
 * of rank r's slice of the vector, which it reduces from every rank's input
 * and writes into every rank's output; for allgather chunks of its own
 * block, copied into every output; for reduce-scatter chunks of its own
 * block, reduced into its own output. Nobody else reads or writes an owned
 * chunk, so in-place buffers are safe, and each element is computed once:
 * every rank gets the same bits. Memory traffic is the floor's: inputs read once, outputs
 * written once.
 */
enum {
    DIRECT_PUBLISH = 0,   /* channel 0: our buffers onto our board */
    DIRECT_GATHER,        /* channel 0: the peers' entries, handed to our host */
    DIRECT_OPENED,        /* channel 0: our host mapped them (or could not) */
    DIRECT_AGREE,         /* channel 0: could every rank map everyone's? */
    DIRECT_TABLE,         /* every channel: channel 0's pointers */
    DIRECT_MOVE,
    DIRECT_FINISH,        /* every channel: the peers are done with our buffers */
    DIRECT_DONE
};

/* All threads: from one source into nout outputs (allgather). */
__device__ static void gpu_copy_many(const char *from, char *const *outs, int nout, size_t bytes,
                                     int aligned)
{
    size_t i = threadIdx.x, vecs = 0;

    if (aligned) {
        const uint4 *f = (const uint4 *)from;
        size_t step = (size_t)blockDim.x * GPU_UNROLL;
        vecs = bytes / 16;
        for (; i + (GPU_UNROLL - 1) * blockDim.x < vecs; i += step) {
            uint4 v[GPU_UNROLL];
            _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++) v[u] = __ldcg(f + i + u * blockDim.x);
            for (int j = 0; j < nout; j++) {
                uint4 *o = (uint4 *)outs[j];
                _Pragma("unroll") for (int u = 0; u < GPU_UNROLL; u++) o[i + u * blockDim.x] = v[u];
            }
        }
        for (; i < vecs; i += blockDim.x) {
            uint4 v = __ldcg(f + i);
            for (int j = 0; j < nout; j++) ((uint4 *)outs[j])[i] = v;
        }
        i = vecs * 16 + threadIdx.x;
    }
    for (; i < bytes; i += blockDim.x) {
        char v = ((const volatile char *)from)[i];
        for (int j = 0; j < nout; j++) outs[j][i] = v;
    }
}

/* All threads: one chunk of a direct collective (ins and outs point at it). */
__device__ static void gpu_direct_move(char *const *ins, int nin, char *const *outs, int nout,
                                       size_t count, size_t esize, dfccl_dtype_t dtype,
                                       dfccl_op_t op, int reduce)
{
    size_t bytes = count * esize, vec_bytes = 0;
    int aligned = 1;

    for (int k = 0; k < nin; k++) aligned &= gpu_aligned16(ins[k]);
    for (int j = 0; j < nout; j++) aligned &= gpu_aligned16(outs[j]);
    if (!reduce) {
        gpu_copy_many(ins[0], outs, nout, bytes, aligned);
        return;
    }
    if (aligned) {
        vec_bytes = bytes & ~(size_t)15;
        gpu_vecn_reduce(ins, nin, outs, nout, 0, vec_bytes / 16, dtype, op);
    }
    if (vec_bytes < bytes)
        gpu_scan_reduce(ins, nin, outs, nout, vec_bytes, (bytes - vec_bytes) / esize, dtype, op);
}

__device__ static inline dfccl_gpu_board_t *gpu_board(const dfccl_gpu_comm_dev_t *c, int r)
{
    return (dfccl_gpu_board_t *)(c->inbox[r] + DFCCL_GPU_BOARD_OFFSET);
}

__device__ static inline dfccl_gpu_board_entry_t *gpu_board_entry(const dfccl_gpu_comm_dev_t *c,
                                                                  int r, uint64_t k)
{
    return &gpu_board(c, r)->entry[k % DFCCL_GPU_BOARD_DEPTH];
}

/* What this channel owns: chunks of *chunk elements at *begin + j * *chunk
 * for j = owner, owner + owners, ... while below *end. Allreduce: rank r
 * owns the r-th of N equal slices of the vector, allgather and
 * reduce-scatter their own block; within it channel c takes every
 * nparts-th chunk (owner = c, owners = nparts), so the blocks of one rank
 * work side by side in a window of nparts chunks. (One range per channel
 * was much slower for a large allreduce; chunks of all ranks interleaved
 * over the whole vector were no faster than these slices.) Chunks are cut
 * on 16 bytes. */
__device__ static void gpu_direct_layout(const dfccl_gpu_env_t *env, const dfccl_gpu_task_t *t,
                                         const dfccl_gpu_comm_dev_t *c, uint64_t *begin,
                                         uint64_t *end, uint64_t *owner, uint64_t *owners,
                                         uint64_t *chunk)
{
    const dfccl_gpu_desc_t *d = &t->desc;
    uint64_t grain = d->esize < 16 ? 16 / d->esize : 1, per, most, total;

    total = t->type == DFCCL_COLL_REDUCE_SCATTER ? d->rs_counts[c->rank] : d->count;
    *begin = 0;
    *end = total;
    if (t->type == DFCCL_COLL_ALLREDUCE) {
        uint64_t slice = (total + (uint64_t)c->size - 1) / (uint64_t)c->size;
        slice = (slice + grain - 1) / grain * grain;
        *begin = slice * (uint64_t)c->rank;
        if (*begin > total) *begin = total;
        *end = total - *begin < slice ? total : *begin + slice;
    }
    *owners = t->nparts;
    *owner = blockIdx.x;
    per = (*end - *begin + *owners - 1) / *owners;
    per = (per + grain - 1) / grain * grain;
    most = env->direct_chunk_bytes / d->esize / grain * grain;
    *chunk = per < most ? per : most > grain ? most : grain;
}

#endif
