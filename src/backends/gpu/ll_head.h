/*
 * ll_head.h - the LL summary of a submission slot (dfccl_gpu_ll_head_t in
 * gpu_shared.h): the words the kernel's early send reads instead of the
 * whole entry.
 */
#ifndef DFCCL_GPU_LL_HEAD_H
#define DFCCL_GPU_LL_HEAD_H

#include "backends/gpu/state.h"

/* Whether the kernel's early send can take this LL collective from its
 * summary. */
int  gpu_ll_early_takes(const dfccl_gpu_desc_t *d, int size);
/* Writes job's summary into slot for ticket; sq.lock held. */
void gpu_ll_head_write(dfccl_gpu_t *g, const gpu_job_t *job, uint64_t ticket, int slot);
/* Releases ticket's held LL collective in slot; sq.lock held. */
void gpu_ll_head_release(dfccl_gpu_t *g, const gpu_job_t *job, uint64_t ticket, int slot);

#endif
