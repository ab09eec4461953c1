/*
 * ll_head.c - the LL summary of each submission slot (ll_head.h): written
 * with every entry, so that the kernel's early send can start an LL
 * collective from a few words, and marked held while the host waits for
 * CUDA's legacy default stream.
 */
#include "backends/gpu/ll_head.h"

/* Can the kernel's early send (gpu_ll_early.cuh) take this LL collective
 * from its summary? Allreduce and allgather; reduce-scatter when every
 * rank's block has the same count (the summary carries one count), as
 * MPI_Reduce_scatter_block's always do. */
int gpu_ll_early_takes(const dfccl_gpu_desc_t *d, int size)
{
    if (d->algo != DFCCL_GPU_ALGO_LL) return 0;
    if (d->type != DFCCL_COLL_REDUCE_SCATTER) return 1;
    for (int r = 1; r < size; r++)
        if (d->rs_counts[r] != d->rs_counts[0]) return 0;
    return 1;
}

/* The LL summary's KIND word's value, unmarked; a collective the early send
 * cannot take says algorithm 0 there, which the kernel passes by. */
static uint64_t gpu_ll_head_kind(const dfccl_gpu_desc_t *d, int size)
{
    uint64_t algo = gpu_ll_early_takes(d, size) ? d->algo : 0;

    return (uint64_t)d->type | (uint64_t)d->dtype << 8 | (uint64_t)d->op << 16 | algo << 24;
}

/* The slot's LL head (gpu_shared.h) for ticket: every word tagged, also for
 * collectives that do not use it, so that no older record can pass for the
 * ticket's. */
void gpu_ll_head_write(dfccl_gpu_t *g, const gpu_job_t *job, uint64_t ticket, int slot)
{
    const dfccl_gpu_desc_t *d = &job->desc;
    const dfccl_comm_t *comm = job->coll->comm;
    uint64_t v[DFCCL_GPU_LLH_WORDS], tag = (uint32_t)ticket;

    v[DFCCL_GPU_LLH_COMM] = d->comm_index;
    v[DFCCL_GPU_LLH_KIND] = gpu_ll_head_kind(d, comm->size) | (d->held ? DFCCL_GPU_LLH_HELD : 0);
    /* LL: at most 16384 bytes; reduce-scatter: each block's (alike when taken) */
    v[DFCCL_GPU_LLH_COUNT] =
        (uint32_t)(d->type == DFCCL_COLL_REDUCE_SCATTER ? d->rs_counts[0] : d->count);
    v[DFCCL_GPU_LLH_SHAPE] = (uint64_t)(d->esize & 0xff) | (uint64_t)(comm->rank & 0xff) << 8 |
                             (uint64_t)(comm->size & 0xffff) << 16;
    v[DFCCL_GPU_LLH_IN_LO] = (uint32_t)(uintptr_t)job->in;
    v[DFCCL_GPU_LLH_IN_HI] = (uint64_t)(uintptr_t)job->in >> 32;
    v[DFCCL_GPU_LLH_OUT_LO] = (uint32_t)(uintptr_t)d->recvbuf;
    v[DFCCL_GPU_LLH_OUT_HI] = (uint64_t)(uintptr_t)d->recvbuf >> 32;
    for (int w = 0; w < DFCCL_GPU_LLH_WORDS; w++) g->fixed.ll_heads[slot].w[w] = v[w] << 32 | tag;
}

/* The host's wait for the legacy default stream returned: ticket's held LL
 * collective (in slot) may read its inputs. Its summary's KIND word again,
 * unmarked; sq.lock held. */
void gpu_ll_head_release(dfccl_gpu_t *g, const gpu_job_t *job, uint64_t ticket, int slot)
{
    __atomic_store_n(&g->fixed.ll_heads[slot].w[DFCCL_GPU_LLH_KIND],
                     gpu_ll_head_kind(&job->desc, job->coll->comm->size) << 32 | (uint32_t)ticket,
                     __ATOMIC_SEQ_CST);
}
