/*
 * coll_dfccl_component.c - MCA parameters, open/close, and the process-wide
 * engine context, created on the first call the engine carries so that a
 * program that never uses it pays nothing (no thread, no progress hook).
 */
#include <sched.h>
#include "coll_dfccl.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

static int dfccl_register(void);
static int dfccl_open(void);
static int dfccl_close(void);

mca_coll_dfccl_component_t mca_coll_dfccl_component = {
    .super = {
        .collm_version = {
            MCA_COLL_BASE_VERSION_2_0_0,
            .mca_component_name = "dfccl",
            MCA_BASE_MAKE_VERSION(component, DFCCL_VERSION_MAJOR, DFCCL_VERSION_MINOR, 0),
            .mca_open_component = dfccl_open,
            .mca_close_component = dfccl_close,
            .mca_register_component_params = dfccl_register,
        },
        .collm_data = {
            MCA_BASE_METADATA_PARAM_CHECKPOINT
        },
        .collm_init_query = mca_coll_dfccl_init_query,
        .collm_comm_query = mca_coll_dfccl_comm_query,
    },
    /* above coll/self (75), so that the engine carries size-1 communicators too */
    .priority     = 80,
    .enable       = true,
    .verbose      = 0,
    .host_buffers = MCA_COLL_DFCCL_HOST_BUFFERS_STOCK,
    .gpu          = true,
};

static int dfccl_register(void)
{
    mca_coll_dfccl_component_t *c = &mca_coll_dfccl_component;
    mca_base_component_t *v = &c->super.collm_version;
    static const mca_base_var_enum_value_t host_values[] = {
        { MCA_COLL_DFCCL_HOST_BUFFERS_STOCK, "stock" },
        { MCA_COLL_DFCCL_HOST_BUFFERS_ENGINE, "engine" },
        { 0, NULL }
    };
    mca_base_var_enum_t *host_enum;
    dfccl_config_t defaults;

    dfccl_config_init(&defaults);
    c->slot_bytes = defaults.slot_bytes;
    c->fifo_slots = defaults.fifo_slots;
    c->timeout    = defaults.timeout_sec;
    c->preempt        = defaults.preempt != 0;
    c->budget_head_ns = defaults.budget_head_ns;
    c->budget_ns      = defaults.budget_ns;
    c->budget_min_ns  = defaults.budget_min_ns;
    c->budget_max_ns  = defaults.budget_max_ns;
    c->default_priority = 0;
    c->gpu_channels   = defaults.gpu_channels;
    c->gpu_threads    = defaults.gpu_threads;
    c->gpu_slot_bytes = defaults.gpu_slot_bytes;
    c->gpu_fifo_slots = defaults.gpu_fifo_slots;
    c->gpu_idle_quit_ns  = defaults.gpu_idle_quit_ns;
    c->gpu_stuck_quit_ns = defaults.gpu_stuck_quit_ns;
    c->gpu_sync_legacy_stream = defaults.gpu_sync_legacy_stream != 0;
    c->gpu_direct_bytes = defaults.gpu_direct_bytes;
    c->gpu_ll_bytes = defaults.gpu_ll_bytes;
    c->gpu_direct_chunk_bytes = defaults.gpu_direct_chunk_bytes;
    c->gpu_stage_keep_bytes = defaults.gpu_stage_keep_bytes;
    c->gpu_poll_max_ns = defaults.gpu_poll_max_ns;
    c->gpu_ll_wait_ns = defaults.gpu_ll_wait_ns;
    c->gpu_ll_early_send = defaults.gpu_ll_early_send != 0;
    c->gpu_trace = defaults.gpu_trace != 0;
    c->gpu_fence_system = defaults.gpu_fence_system != 0;

    (void)mca_base_component_var_register(v, "priority",
        "Priority of coll/dfccl (above coll/self's 75 so that it also serves 1-rank communicators)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        &c->priority);
    (void)mca_base_component_var_register(v, "enable",
        "Enable coll/dfccl (false: the component declines every communicator)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
        &c->enable);
    (void)mca_base_component_var_register(v, "verbose",
        "Verbosity: 0 quiet, 1 engine set-up, 2 every carried call, 3 and the engine's own debug lines",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
        &c->verbose);
    mca_base_var_enum_create("coll_dfccl_host_buffers", host_values, &host_enum);
    (void)mca_base_component_var_register(v, "host_buffers",
        "Path of host-memory buffers: stock (Open MPI's own collectives, the default) or engine"
        " (the dfccl engine carries them; must be equal on all ranks)",
        MCA_BASE_VAR_TYPE_INT, host_enum, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &c->host_buffers);
    OBJ_RELEASE(host_enum);
    (void)mca_base_component_var_register(v, "gpu",
        "Offer the GPU backend for device buffers (false: device buffers take the stock path, or"
        " the host engine under host_buffers=engine, staged through host memory). Under"
        " host_buffers=engine the ranks agree on it when a communicator is created; otherwise it"
        " must be equal on all ranks",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
        &c->gpu);
    (void)mca_base_component_var_register(v, "slot_bytes",
        "Bytes per FIFO slot, the unit a primitive moves (multiple of 16, >= 64)",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &c->slot_bytes);
    (void)mca_base_component_var_register(v, "fifo_slots",
        "Slots per connection FIFO (>= 2); a chunk is half of them, so a sender runs one step ahead",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &c->fifo_slots);
    (void)mca_base_component_var_register(v, "timeout",
        "Seconds a collective may make no progress before it fails with a diagnosis of what it waits for",
        MCA_BASE_VAR_TYPE_DOUBLE, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &c->timeout);
    (void)mca_base_component_var_register(v, "preempt",
        "Preemptive scheduling: a collective waiting for a peer gives way to others, so programs"
        " that start collectives in different orders on different ranks complete (0: one at a"
        " time in submission order, which deadlocks on such programs)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &c->preempt);
    (void)mca_base_component_var_register(v, "budget_head_ns",
        "Nanoseconds the first collective of the global order may wait for a peer before the"
        " daemon tries others (long: it is what all ranks converge on)",
        MCA_BASE_VAR_TYPE_UINT64_T, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &c->budget_head_ns);
    (void)mca_base_component_var_register(v, "budget_ns",
        "Initial nanoseconds any other collective may wait per turn (adapts: progress doubles it,"
        " none halves it)",
        MCA_BASE_VAR_TYPE_UINT64_T, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &c->budget_ns);
    (void)mca_base_component_var_register(v, "budget_min_ns",
        "Lower bound of the adaptive wait budget (ns)",
        MCA_BASE_VAR_TYPE_UINT64_T, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &c->budget_min_ns);
    (void)mca_base_component_var_register(v, "budget_max_ns",
        "Upper bound of the adaptive wait budget (ns)",
        MCA_BASE_VAR_TYPE_UINT64_T, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &c->budget_max_ns);
    (void)mca_base_component_var_register(v, "default_priority",
        "Scheduling priority of collectives on communicators without the info key"
        " \"dfccl_priority\" (higher runs first when collectives compete)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &c->default_priority);
    (void)mca_base_component_var_register(v, "gpu_channels",
        "Blocks of the GPU daemon kernel; a large collective is cut into at most this many parts"
        " that move side by side (a communicator takes the fewest of its ranks'). 0: as many as"
        " let the kernels of all the job's ranks on the node be resident together on one GPU (on"
        " an H200 32 up to 4 ranks per node, 16 at 8; where every rank has a GPU of its own, 32"
        " may move large collectives faster); 0..32",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
        &c->gpu_channels);
    (void)mca_base_component_var_register(v, "gpu_threads",
        "Threads per block of the GPU daemon kernel (64..512, a multiple of 32)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &c->gpu_threads);
    (void)mca_base_component_var_register(v, "gpu_slot_bytes",
        "Bytes per slot of a GPU channel FIFO (device memory; multiple of 16, >= 1024)",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &c->gpu_slot_bytes);
    (void)mca_base_component_var_register(v, "gpu_fifo_slots",
        "Slots per GPU channel FIFO (>= 2)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &c->gpu_fifo_slots);
    (void)mca_base_component_var_register(v, "gpu_idle_quit_ns",
        "Nanoseconds the GPU daemon kernel stays without work before it leaves (the longest an"
        " application's cudaDeviceSynchronize waits for an idle daemon)",
        MCA_BASE_VAR_TYPE_UINT64_T, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
        &c->gpu_idle_quit_ns);
    (void)mca_base_component_var_register(v, "gpu_stuck_quit_ns",
        "Nanoseconds the GPU daemon kernel stays when nothing moves (peers late) before it"
        " leaves; the host launches it again while work is pending",
        MCA_BASE_VAR_TYPE_UINT64_T, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
        &c->gpu_stuck_quit_ns);
    (void)mca_base_component_var_register(v, "gpu_sync_legacy_stream",
        "Wait for work queued on CUDA's legacy default stream before a collective on device"
        " buffers reads its inputs (cudaMemcpy from pageable memory may return before its data"
        " has landed); a small (LL) collective that gpu_ll_early_send takes is queued first and"
        " held until the wait returned; work on other streams the application must synchronize"
        " itself",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
        &c->gpu_sync_legacy_stream);
    (void)mca_base_component_var_register(v, "gpu_direct_bytes",
        "GPU collectives whose bytes (whole vector) times (ranks - 1) reach this value read and"
        " write the peers' buffers directly, mapped by CUDA IPC (mappings cached per peer);"
        " smaller ones go through the channel FIFOs (the ring, whose fixed cost grows with the"
        " ranks); 0: never (must be equal on all ranks)",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &c->gpu_direct_bytes);
    (void)mca_base_component_var_register(v, "gpu_direct_chunk_bytes",
        "Bytes a GPU channel moves per turn in a direct collective; chunks are dealt to all"
        " ranks' channels in turn, so smaller chunks keep fewer memory pages in use at once"
        " (>= 4096)",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &c->gpu_direct_chunk_bytes);
    (void)mca_base_component_var_register(v, "gpu_ll_bytes",
        "GPU collectives whose contribution per rank is at most this many bytes take the"
        " low-latency one-shot: lines of 8 data bytes with their own flags, so no counters or"
        " fences (twice the bytes cross); larger ones up to 64 KiB take the one-shot through"
        " counters; 0: never; at most 16384 (must be equal on all ranks)",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_ALL_EQ,
        &c->gpu_ll_bytes);
    (void)mca_base_component_var_register(v, "gpu_stage_keep_bytes",
        "Bytes of idle device staging memory (host buffers carried by the GPU side under"
        " host_buffers=engine) kept for reuse; idle blocks beyond it are freed while the daemon"
        " kernel is out",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
        &c->gpu_stage_keep_bytes);
    (void)mca_base_component_var_register(v, "gpu_poll_max_ns",
        "Longest nap, in nanoseconds, of a GPU daemon block between passes that found nothing to"
        " move (half of it while collectives wait for peers); naps double from 32 ns up to it."
        " Smaller: new work and late peers seen sooner, more polling of host memory; 0: no naps",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
        &c->gpu_poll_max_ns);
    (void)mca_base_component_var_register(v, "gpu_ll_wait_ns",
        "Longest time, in nanoseconds, that one receive attempt of an LL collective (the"
        " smallest, gpu_ll_bytes) polls for its peers' lines before the daemon's scheduler looks"
        " for new work; the turn's budget (budget_ns) bounds it too. Smaller: new work seen"
        " sooner while an LL collective waits; larger: fewer retries when ranks arrive apart;"
        " 0: one look at the lines per attempt",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
        &c->gpu_ll_wait_ns);
    (void)mca_base_component_var_register(v, "gpu_ll_early_send",
        "An LL allreduce, allgather or reduce-scatter with equal blocks (gpu_ll_bytes) that"
        " reaches a GPU daemon kernel with nothing in hand is sent, from a tagged summary the"
        " kernel reads with the control words, and received (up to gpu_ll_wait_ns) within its"
        " admission, while the copy of its submission crosses the bus; false: send and receive"
        " follow the copy",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
        &c->gpu_ll_early_send);
    (void)mca_base_component_var_register(v, "gpu_trace",
        "Print one line per GPU collective to stderr with the microseconds from its post to each"
        " of its steps (published, seen and admitted by the daemon kernel, first and last move,"
        " finished, completed): a latency diagnostic",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
        &c->gpu_trace);
    (void)mca_base_component_var_register(v, "gpu_fence_system",
        "Order the one-shot inbox traffic between ranks on the same GPU with system-scope fences,"
        " as between GPUs (default: GPU scope, which the shared L2 cache makes sufficient on the"
        " GPUs tested; about 0.25 us less per fence)",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
        &c->gpu_fence_system);
    return OMPI_SUCCESS;
}

static int dfccl_open(void)
{
    mca_coll_dfccl_component_t *c = &mca_coll_dfccl_component;

    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->verbose);
    OBJ_CONSTRUCT(&c->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&c->requests, opal_free_list_t);
    OBJ_CONSTRUCT(&c->gpu_setup_lock, opal_mutex_t);
    c->gpu_setups = NULL;
    c->context = NULL;
    c->context_failed = false;
    mca_coll_dfccl_types_init();
    return OMPI_SUCCESS;
}

static int dfccl_close(void)
{
    mca_coll_dfccl_component_t *c = &mca_coll_dfccl_component;

    if (c->context != NULL) {
        opal_progress_unregister(mca_coll_dfccl_progress);
        dfccl_context_destroy(c->context);
        c->context = NULL;
    }
    OBJ_DESTRUCT(&c->requests);
    OBJ_DESTRUCT(&c->gpu_setup_lock);
    OBJ_DESTRUCT(&c->lock);
    opal_output_close(c->output);
    return OMPI_SUCCESS;
}

int mca_coll_dfccl_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    return OMPI_SUCCESS;
}

/* The engine context (daemon, queues) and the progress hook, on first use. */
int mca_coll_dfccl_context_get(dfccl_context_t **context_p)
{
    mca_coll_dfccl_component_t *c = &mca_coll_dfccl_component;
    dfccl_config_t config;
    dfccl_status_t status;
    int rc = OMPI_SUCCESS;

    OPAL_THREAD_LOCK(&c->lock);
    if (c->context == NULL && !c->context_failed) {
        dfccl_config_init(&config);
        config.slot_bytes  = c->slot_bytes;
        config.fifo_slots  = c->fifo_slots;
        config.timeout_sec = c->timeout;
        config.verbose     = c->verbose > 1 ? c->verbose - 1 : 0;
        config.preempt     = c->preempt;
        config.budget_head_ns = c->budget_head_ns;
        config.budget_ns      = c->budget_ns;
        config.budget_min_ns  = c->budget_min_ns;
        config.budget_max_ns  = c->budget_max_ns;
        config.gpu_channels   = c->gpu_channels;
        config.gpu_local_ranks = opal_process_info.num_local_peers >= 0
                                     ? (unsigned)opal_process_info.num_local_peers + 1 : 0;
        config.gpu_threads    = c->gpu_threads;
        config.gpu_slot_bytes = c->gpu_slot_bytes;
        config.gpu_fifo_slots = c->gpu_fifo_slots;
        config.gpu_idle_quit_ns  = c->gpu_idle_quit_ns;
        config.gpu_stuck_quit_ns = c->gpu_stuck_quit_ns;
        config.gpu_sync_legacy_stream = c->gpu_sync_legacy_stream;
        config.gpu_direct_bytes = c->gpu_direct_bytes;
        config.gpu_direct_chunk_bytes = c->gpu_direct_chunk_bytes;
        config.gpu_ll_bytes = c->gpu_ll_bytes;
        config.gpu_stage_keep_bytes = c->gpu_stage_keep_bytes;
        config.gpu_poll_max_ns = c->gpu_poll_max_ns;
        config.gpu_ll_wait_ns = c->gpu_ll_wait_ns;
        config.gpu_ll_early_send = c->gpu_ll_early_send;
        config.gpu_trace = c->gpu_trace;
        config.gpu_fence_system = c->gpu_fence_system;
        if (ompi_coll_base_nbc_request_t_class.cls_sizeof != sizeof(mca_coll_dfccl_nbc_request_t)) {
            /* the layout restated in coll_dfccl.h no longer matches this Open MPI */
            DFCCL_ERROR("Open MPI's nonblocking collective request is %zu bytes, dfccl was built"
                        " for %zu: collectives take the stock path",
                        ompi_coll_base_nbc_request_t_class.cls_sizeof,
                        sizeof(mca_coll_dfccl_nbc_request_t));
            c->context_failed = true;
            OPAL_THREAD_UNLOCK(&c->lock);
            return OMPI_ERROR;
        }
        opal_free_list_init(&c->requests, sizeof(mca_coll_dfccl_request_t),
                            opal_cache_line_size, OBJ_CLASS(mca_coll_dfccl_request_t),
                            0, 0, 8, -1, 8, NULL, 0, NULL, NULL, NULL);
        status = dfccl_context_create(&config, &c->context);
        if (status != DFCCL_OK) {
            DFCCL_ERROR("engine start failed (%s): collectives take the stock path",
                        dfccl_status_string(status));
            c->context_failed = true;
            OBJ_DESTRUCT(&c->requests);
            OBJ_CONSTRUCT(&c->requests, opal_free_list_t);
        } else {
            opal_progress_register(mca_coll_dfccl_progress);
            DFCCL_VERBOSE(1, "engine started (host backend, %s, FIFOs %u x %zu bytes, timeout %.0f s)",
                          c->preempt ? "preemptive" : "serial", c->fifo_slots, c->slot_bytes,
                          c->timeout);
        }
    }
    if (c->context == NULL) rc = OMPI_ERROR;
    *context_p = c->context;
    OPAL_THREAD_UNLOCK(&c->lock);
    return rc;
}

/* A waiting caller polling GPU completions alone yields the core after this
 * long: a small GPU collective completes within it without a system call,
 * and the proxy thread's work (mappings, relaunches) waits at most this. */
#define DFCCL_GPU_WAIT_YIELD_NS 20000ull

/* Per thread: when its polls began to find nothing while collectives were
 * in flight (0: the last poll found some, or nothing was in flight). */
static __thread uint64_t empty_since;

/* Progress hook: completes the MPI requests whose collectives finished. */
int mca_coll_dfccl_progress(void)
{
    dfccl_completion_t done[16];
    dfccl_context_t *ctx = mca_coll_dfccl_component.context;
    int n, i;

    if (ctx == NULL) return 0;
    if (mca_coll_dfccl_gpu_progress() > 0) return 1;
    n = dfccl_context_poll(ctx, done, 16);
    if (n == 0) {
        /* Waiting: let the engine's threads have the core. Ranks are often
         * bound to one core each, which the host daemon (or the GPU side's
         * proxy, which maps buffers and relaunches the kernel) then shares
         * with a caller spinning in MPI_Wait. A GPU collective needs no core
         * while its kernel runs, and a yield is a system call per poll: for
         * GPU work alone the caller yields only once it has waited a while. */
        uint64_t now;
        if (opal_atomic_add_fetch_32(&mca_coll_dfccl_component.host_in_flight, 0) > 0) {
            sched_yield();
            return 0;
        }
        if (opal_atomic_add_fetch_32(&mca_coll_dfccl_component.in_flight, 0) <= 0) {
            empty_since = 0;   /* the next GPU wait counts from its own start */
            return 0;
        }
        now = mca_coll_dfccl_now_ns();
        if (empty_since == 0) empty_since = now;
        if (now - empty_since >= DFCCL_GPU_WAIT_YIELD_NS) sched_yield();
        return 0;
    }
    empty_since = 0;
    opal_atomic_add_fetch_32(&mca_coll_dfccl_component.in_flight, -n);
    for (i = 0; i < n; i++) {
        mca_coll_dfccl_request_t *req = done[i].user;
        if (req->on_host) opal_atomic_add_fetch_32(&mca_coll_dfccl_component.host_in_flight, -1);
        req->super.super.req_status.MPI_ERROR = mca_coll_dfccl_request_error(done[i].status);
        /* a staged call's result reaches the caller's buffer before completion */
        if (req->super.super.req_status.MPI_ERROR == MPI_SUCCESS)
            req->super.super.req_status.MPI_ERROR = mca_coll_dfccl_stage_out(req);
        ompi_request_complete(&req->super.super, true);
        mca_coll_dfccl_request_release(req);   /* the engine's reference */
    }
    return n;
}
