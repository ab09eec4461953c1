/* dtype.c - names, sizes and the (op, type) table of what the engine carries. */
#include "dfccl.h"
#include "reduce.h"

static const struct { const char *name; size_t size; } dtypes[DFCCL_DTYPE_COUNT] = {
    [DFCCL_INT8]   = { "int8", 1 },   [DFCCL_UINT8]  = { "uint8", 1 },
    [DFCCL_INT16]  = { "int16", 2 },  [DFCCL_UINT16] = { "uint16", 2 },
    [DFCCL_INT32]  = { "int32", 4 },  [DFCCL_UINT32] = { "uint32", 4 },
    [DFCCL_INT64]  = { "int64", 8 },  [DFCCL_UINT64] = { "uint64", 8 },
    [DFCCL_FLOAT]  = { "float", 4 },  [DFCCL_DOUBLE] = { "double", 8 },
    [DFCCL_BOOL]   = { "bool", 1 },   [DFCCL_BYTE]   = { "byte", 1 },
};

static const char *const op_names[DFCCL_OP_COUNT + 1] = {
    "sum", "prod", "min", "max", "land", "lor", "lxor", "band", "bor", "bxor", "none"
};

size_t dfccl_dtype_size(dfccl_dtype_t dtype)
{
    return (unsigned)dtype < DFCCL_DTYPE_COUNT ? dtypes[dtype].size : 0;
}

const char *dfccl_dtype_name(dfccl_dtype_t dtype)
{
    return (unsigned)dtype < DFCCL_DTYPE_COUNT ? dtypes[dtype].name : "invalid";
}

const char *dfccl_op_name(dfccl_op_t op)
{
    return (unsigned)op <= DFCCL_OP_COUNT ? op_names[op] : "invalid";
}

int dfccl_op_supported(dfccl_op_t op, dfccl_dtype_t dtype)
{
    unsigned char a = 0, b = 0, r;
    /* the reduction table is the single source of truth: ask it on one element */
    if ((unsigned)op >= DFCCL_OP_COUNT || (unsigned)dtype >= DFCCL_DTYPE_COUNT) return 0;
    if (dfccl_dtype_size(dtype) != 1) {
        unsigned long long x = 0, y = 0, z;
        return dfccl_reduce_strided(&z, &x, &y, 1, 0, 1, dtype, op);
    }
    return dfccl_reduce_strided(&r, &a, &b, 1, 0, 1, dtype, op);
}

const char *dfccl_coll_type_name(dfccl_coll_type_t type)
{
    switch (type) {
    case DFCCL_COLL_ALLREDUCE:      return "allreduce";
    case DFCCL_COLL_ALLGATHER:      return "allgather";
    case DFCCL_COLL_REDUCE_SCATTER: return "reduce_scatter";
    default:                        return "invalid";
    }
}

const char *dfccl_status_string(dfccl_status_t status)
{
    switch (status) {
    case DFCCL_OK:                return "success";
    case DFCCL_INPROGRESS:        return "in progress";
    case DFCCL_ERR_INVALID_PARAM: return "invalid parameter";
    case DFCCL_ERR_NO_MEMORY:     return "out of memory";
    case DFCCL_ERR_SYSTEM:        return "system call failed";
    case DFCCL_ERR_BOOTSTRAP:     return "bootstrap exchange failed";
    case DFCCL_ERR_TIMEOUT:       return "no progress before the timeout";
    case DFCCL_ERR_UNSUPPORTED:   return "unsupported";
    case DFCCL_ERR_SHUTDOWN:      return "engine shut down";
    case DFCCL_ERR_MISMATCH:      return "the ranks' calls do not match";
    case DFCCL_ERR_PEER_FAILED:   return "a peer failed";
    case DFCCL_ERR_BROKEN:        return "an earlier collective on this communicator failed";
    default:                      return "unknown status";
    }
}

void dfccl_config_init(dfccl_config_t *config)
{
    /* 128 KiB slots amortise the per-slot handshake (two counter updates)
     * over enough bytes to run near memcpy speed; 8 slots let the sender run
     * a few slices ahead: 1 MiB of /dev/shm per rank and communicator. */
    config->slot_bytes  = 128 * 1024;
    config->fifo_slots  = 8;
    /* Long enough that no legal program trips it on a loaded machine. */
    config->timeout_sec = 300.0;
    config->verbose     = 0;
    config->preempt     = 1;
    /* The head of the global order is what all ranks converge on: it waits
     * several times longer than the others, which get a short try, just
     * enough to find out whether their peers are there. 50 us measured as
     * good as or better than 200 us on the chaos workload at 2-8 ranks
     * (contrib/results/); a new arrival ends any wait at once anyway. */
    config->budget_head_ns = 50000;
    config->budget_ns      = 10000;
    config->budget_min_ns  = 2000;
    config->budget_max_ns  = 1000000;
    /* GPU: blocks of 512 threads, as many as the ranks that share a GPU
     * leave room for (gpu_auto_channels in gpu.c): on an H200 (132 SMs, one
     * such block each) 32 up to 4 ranks per node, 16 at 8. 512 KiB slices:
     * the per-slice handshake (counter reads in peer memory, fences,
     * barriers) costs microseconds; 128 KiB slices reached 74 GB/s algbw on
     * a 256 MiB allreduce at 4 ranks, 512 KiB 120 GB/s (contrib/results).
     * 4 slots: 2 MiB of device memory per channel and communicator. */
    config->gpu_channels      = 0;
    config->gpu_local_ranks   = 0;
    config->gpu_threads       = 512;
    config->gpu_slot_bytes    = 512 * 1024;
    config->gpu_fifo_slots    = 4;
    /* An application's cudaDeviceSynchronize waits at most this long for
     * an idle daemon; back-to-back collectives keep it running. */
    config->gpu_idle_quit_ns  = 500000;
    /* A collective whose peer is late (or busy elsewhere) gives the GPU back
     * after 1 ms; the host launches the daemon again while work is pending. */
    config->gpu_stuck_quit_ns = 1000000;
    /* cudaMemcpy from pageable memory returns once the data is staged, not
     * landed; the daemon runs on its own stream, unordered with the legacy
     * default stream. Waiting for it costs a microsecond when it is idle
     * (1.3 us under MPS, 3 us with four processes asking), which an LL
     * collective, queued first and held, spends while the kernel finds it. */
    config->gpu_sync_legacy_stream = 1;
    /* The direct algorithm from 384 KiB of (whole vector) x (ranks - 1) on
     * (2 ranks: 384 KiB; 4: 128 KiB; 8: 55 KiB, where the one-shot still
     * takes everything up to 64 KiB per rank): it moves the floor's bytes
     * (inputs read once, outputs written once) where the ring through
     * FIFOs moves about three times as many, and its handshake (board, the
     * host mapping peers' buffers, cached) costs tens of microseconds,
     * while the ring's fixed cost grows with the ranks. Measured on an
     * H200 (contrib/results/2026-11-30-gpu-pages.md): the direct path was
     * faster from 512 KiB on at 2 ranks and from 128 KiB on at 4 and 8. */
    config->gpu_direct_bytes = 384 * 1024;
    /* Chunks are dealt to the channels of all ranks in turn, so the whole
     * machine works in a window of ranks x channels chunks: smaller chunks,
     * fewer pages in use at once; larger, fewer scheduler turns. */
    config->gpu_direct_chunk_bytes = 1024 * 1024;
    /* LL carries contributions up to this size (its most is 16 KiB): it
     * sends twice the bytes, but a collective waits for one device-memory
     * read of its peers' lines instead of counters, fences and scheduler
     * passes. Measured on an H200 (contrib/results/2026-11-30-gpu-ll.md):
     * 4-11 us faster than the counters from 8 B to 2 KiB at 2, 4 and 8
     * ranks; at 8 KiB 1-3 us faster at 2 and 4 ranks, even at 8. */
    config->gpu_ll_bytes = 8192;
    /* Staging blocks (host buffers on the GPU path) are kept for the next
     * calls: cudaMalloc per call costs more than the copies. 256 MiB holds
     * the staging of one 64 MiB non-in-place call several times over and
     * is little beside a GPU's memory; beyond it idle blocks are freed. */
    config->gpu_stage_keep_bytes = (size_t)256 * 1024 * 1024;
    /* A block that found nothing to move naps, doubling from 32 ns up to
     * this: it shares its SM's issue slots with nothing, but its polls of
     * host memory and peers' counters cross the bus. */
    config->gpu_poll_max_ns = 4000;
    /* An LL receive polls its lines, not the submission queue: it looks
     * for new work only when the attempt ends. 4 us made the ranks that
     * sent first give up before the last rank's lines came and pay a
     * retry of about 3.5 us; 16 us took the 8 B allreduce at 4 ranks from
     * 21.9-22.3 to 17.6-17.8 us (median), 50 us did no better
     * (contrib/results/2026-11-30-gpu-kernel-parts.md). New work meanwhile
     * waits at most this long, less than a turn's head budget. */
    config->gpu_ll_wait_ns = 16000;
    /* An idle kernel reads each LL submission's summary with the control
     * words and sends and receives within the admission, while the copy of
     * the entry crosses the bus: 8 B at 4 ranks 15.8-16.8 us instead of
     * 18.0-19.1, side by side (contrib/results/2026-11-30-gpu-ll-early-send.md). */
    config->gpu_ll_early_send = 1;
    config->gpu_trace = 0;
    /* Ranks on one GPU order their inbox traffic with GPU-scope fences
     * (see gpu_oneshot.cuh); 1 takes system scope, as across GPUs. */
    config->gpu_fence_system = 0;
}
