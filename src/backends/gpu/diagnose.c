/*
 * diagnose.c - what a GPU collective that made no progress was waiting
 * for, in words (diagnose.h): the kernel's watchdog fills the diagnosis,
 * this turns it into the error the application's log shows.
 */
#include <stdio.h>
#include "backends/gpu/diagnose.h"
#include "util/log.h"

void gpu_diagnose(const dfccl_call_t *coll, const dfccl_gpu_desc_t *d,
                  const dfccl_gpu_diag_t *g)
{
    const dfccl_comm_t *comm = coll->comm;
    char who[256];   /* the collective, as every message below names it (its ")" open) */

    if (g->waiting == 0xffffffffu) {
        const dfccl_gpu_comm_t *gc = gpu_comm_of(comm);
        dfccl_error("rank %d of comm %#llx: %s #%llu fails: %s", comm->rank,
                    (unsigned long long)comm->key, dfccl_coll_type_name(coll->type),
                    (unsigned long long)coll->seq,
                    gc != NULL && __atomic_load_n(&gc->watch_status, __ATOMIC_ACQUIRE)
                        ? "a peer or a link failed, or calls did not match (said above)"
                        : "an earlier collective on this communicator failed");
        return;
    }
    snprintf(who, sizeof who, "rank %d of comm %#llx (size %d, GPU): %s #%llu (%zu x %s, op %s,"
             " priority %d", comm->rank, (unsigned long long)comm->key, comm->size,
             dfccl_coll_type_name(coll->type), (unsigned long long)coll->seq, coll->total_count,
             dfccl_dtype_name((dfccl_dtype_t)d->dtype), dfccl_op_name((dfccl_op_t)d->op),
             coll->priority);
    if (g->algo == DFCCL_GPU_ALGO_DIRECT) {
        static const char *const phases[] = { "publishing its buffers", "waiting for the peers'"
            " buffers", "mapping the peers' buffers", "agreeing on the mappings", "waiting for"
            " channel 0's mappings", "moving data", "waiting for the peers to finish with its"
            " buffers", "done" };
        dfccl_error("%s, direct #%llu) made no progress for %.1f s on channel %u while %s: waiting"
                     " for rank %u%s (has rank %u posted this collective to the engine? a call that"
                    " takes another path there never joins)", who,
                    (unsigned long long)g->tail, (double)g->blocked_ns / 1e9, g->channel,
                    g->phase < 8 ? phases[g->phase] : "?", g->peer,
                    (int)g->peer == comm->rank ? " (this rank's host or channel 0)" : "", g->peer);
        return;
    }
    if (d->algo == DFCCL_GPU_ALGO_LL && g->waiting == DFCCL_WAIT_HOST) {
        dfccl_error("%s) made no progress for %.1f s: this rank's host never released its inputs"
                    " (its wait for CUDA's legacy default stream did not return)", who,
                    (double)g->blocked_ns / 1e9);
        return;
    }
    if (d->algo == DFCCL_GPU_ALGO_ONESHOT || d->algo == DFCCL_GPU_ALGO_LL) {
        dfccl_error("%s) made no progress for %.1f s in its %sone-shot #%llu: waiting for the data"
                     " of rank %d (has rank %d posted this collective to the engine? a call that"
                    " takes another path there never joins)", who, (double)g->blocked_ns / 1e9,
                    d->algo == DFCCL_GPU_ALGO_LL ? "LL " : "", (unsigned long long)g->tail,
                    (int)g->peer, (int)g->peer);
        return;
    }
    dfccl_error("%s) made no progress for %.1f s on channel %u at round %llu of %llu, step %u of"
                " %u (element %llu): waiting for %s rank %u (fifo tail %llu, head %llu); a rank"
                 " that takes another path there never joins: has rank %u posted this collective?",
                who, (double)g->blocked_ns / 1e9, g->channel,
                (unsigned long long)g->round + 1, (unsigned long long)g->nrounds, g->step + 1,
                g->nsteps, (unsigned long long)g->offset,
                g->waiting == DFCCL_WAIT_SEND ? "a free slot at" : "data from", g->peer,
                (unsigned long long)g->tail, (unsigned long long)g->head, g->peer);
}
