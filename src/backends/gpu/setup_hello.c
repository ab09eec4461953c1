/*
 * hello.c - the hello a rank sends its peers at a GPU communicator's set-up
 * (hello.h): the settings it carries, and the checks that the
 * ranks' hellos agree.
 */
#include <string.h>
#include "backends/gpu/setup_hello.h"
#include "util/log.h"

void gpu_hello_settings(gpu_hello_t *hello, const dfccl_config_t *cfg)
{
    hello->nslots = cfg->gpu_fifo_slots;
    hello->slot_bytes = cfg->gpu_slot_bytes;
    hello->direct_bytes = cfg->gpu_direct_bytes;
    hello->direct_chunk_bytes = cfg->gpu_direct_chunk_bytes;
    hello->ll_bytes = cfg->gpu_ll_bytes;
}

int gpu_hello_same_device(const gpu_hello_t *a, const gpu_hello_t *b)
{
    return memcmp(a->uuid, b->uuid, sizeof(a->uuid)) == 0;
}

dfccl_status_t gpu_hello_agree(const dfccl_comm_t *comm, const gpu_hello_t *all)
{
    int me = comm->rank, n = comm->size;

    for (int r = 0; r < n; r++) {
        if (all[r].status != DFCCL_OK) return (dfccl_status_t)all[r].status;
        if (all[r].nslots != all[me].nslots || all[r].slot_bytes != all[me].slot_bytes) {
            if (me == 0)
                dfccl_error("comm %#llx: rank %d has GPU FIFOs of %u x %llu bytes, rank 0 %u x"
                            " %llu: these settings must be equal on all ranks",
                            (unsigned long long)comm->key, r, all[r].nslots,
                            (unsigned long long)all[r].slot_bytes, all[me].nslots,
                            (unsigned long long)all[me].slot_bytes);
            return DFCCL_ERR_INVALID_PARAM;
        }
        if (all[r].direct_bytes != all[me].direct_bytes ||
            all[r].direct_chunk_bytes != all[me].direct_chunk_bytes) {
            if (me == 0)
                dfccl_error("comm %#llx: rank %d takes the direct path from %llu bytes in chunks"
                            " of %llu, rank 0 from %llu in chunks of %llu: these settings must"
                            " be equal on all ranks", (unsigned long long)comm->key, r,
                            (unsigned long long)all[r].direct_bytes,
                            (unsigned long long)all[r].direct_chunk_bytes,
                            (unsigned long long)all[me].direct_bytes,
                            (unsigned long long)all[me].direct_chunk_bytes);
            return DFCCL_ERR_INVALID_PARAM;
        }
        if (all[r].ll_bytes != all[me].ll_bytes) {
            if (me == 0)
                dfccl_error("comm %#llx: rank %d takes the LL one-shot up to %llu bytes, rank 0"
                            " up to %llu: this setting must be equal on all ranks",
                            (unsigned long long)comm->key, r, (unsigned long long)all[r].ll_bytes,
                            (unsigned long long)all[me].ll_bytes);
            return DFCCL_ERR_INVALID_PARAM;
        }
    }
    return DFCCL_OK;
}
