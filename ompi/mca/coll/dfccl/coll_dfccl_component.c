/*
 * coll_dfccl_component.c - MCA parameters, open/close, and the process-wide
 * engine context, created on the first call the engine carries so that a
 * program that never uses it pays nothing (no thread, no progress hook).
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
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
    /* the parameters' defaults are set where they are registered */
};

static const mca_base_var_enum_value_t mca_coll_dfccl_host_buffers_values[] = {
    { MCA_COLL_DFCCL_HOST_BUFFERS_STOCK, "stock" },
    { MCA_COLL_DFCCL_HOST_BUFFERS_ENGINE, "engine" },
    { 0, NULL }
};

/* Engine knobs whose values have names (the engine takes the numbers,
 * which the parameter still accepts). */
static const mca_base_var_enum_value_t mca_coll_dfccl_algorithm_values[] = {
    { 0, "ring" },
    { 1, "hierarchical" },
    { 2, "recursive_doubling" },
    { 3, "auto" },
    { 0, NULL }
};

static const mca_base_var_enum_value_t mca_coll_dfccl_net_protocol_values[] = {
    { 0, "tagged" },
    { 1, "rma" },
    { 0, NULL }
};

static const mca_base_var_enum_value_t mca_coll_dfccl_gpu_net_memory_values[] = {
    { 0, "auto" },
    { 1, "host" },
    { 0, NULL }
};

static const mca_base_var_enum_value_t *dfccl_engine_knob_values(const char *name)
{
    if (strcmp(name, "algorithm") == 0) return mca_coll_dfccl_algorithm_values;
    if (strcmp(name, "net_protocol") == 0) return mca_coll_dfccl_net_protocol_values;
    if (strcmp(name, "gpu_net_memory") == 0) return mca_coll_dfccl_gpu_net_memory_values;
    return NULL;
}

/* The MCA type of each kind of the knob tables. */
#define DFCCL_VAR_TYPE_SIZE     MCA_BASE_VAR_TYPE_SIZE_T
#define DFCCL_VAR_TYPE_UNSIGNED MCA_BASE_VAR_TYPE_UNSIGNED_INT
#define DFCCL_VAR_TYPE_U32      MCA_BASE_VAR_TYPE_UNSIGNED_INT
#define DFCCL_VAR_TYPE_U64      MCA_BASE_VAR_TYPE_UINT64_T
#define DFCCL_VAR_TYPE_DOUBLE   MCA_BASE_VAR_TYPE_DOUBLE
#define DFCCL_VAR_TYPE_INT      MCA_BASE_VAR_TYPE_INT
#define DFCCL_VAR_TYPE_BOOL     MCA_BASE_VAR_TYPE_BOOL
#define DFCCL_VAR_TYPE_STRING   MCA_BASE_VAR_TYPE_STRING

/* One parameter, coll_dfccl_<name>; storage holds its default. */
static void dfccl_register_knob(const char *name, const char *help, mca_base_var_type_t type,
                                const mca_base_var_enum_value_t *values,
                                mca_base_var_info_lvl_t level, mca_base_var_scope_t scope,
                                void *storage)
{
    mca_base_component_t *v = &mca_coll_dfccl_component.super.collm_version;
    mca_base_var_enum_t *values_enum = NULL;
    char enum_name[64];

    if (values != NULL) {
        snprintf(enum_name, sizeof(enum_name), "coll_dfccl_%s", name);
        mca_base_var_enum_create(enum_name, values, &values_enum);
    }
    (void)mca_base_component_var_register(v, name, help, type, values_enum, 0, 0, level, scope,
                                          storage);
    if (values_enum != NULL) OBJ_RELEASE(values_enum);
}

/* Both knob tables: the component's own first, then the engine's, whose
 * defaults come from the engine library this process runs with. */
static int dfccl_register(void)
{
    mca_coll_dfccl_component_t *c = &mca_coll_dfccl_component;
    dfccl_config_t defaults;

#define MCA_COLL_DFCCL_KNOB(name, kind, def, level, scope, values, help, reason)          \
    c->name = (def);                                                                     \
    dfccl_register_knob(#name, help ". Default " reason, DFCCL_VAR_TYPE_##kind, values,   \
                        OPAL_INFO_LVL_##level, MCA_BASE_VAR_SCOPE_##scope, &c->name);
#include "coll_dfccl_knobs.def"

    dfccl_config_init(&defaults);
#define DFCCL_KNOB(field, mca, kind, def, min, max, multiple, group, level, scope, help, reason) \
    c->mca = (MCA_COLL_DFCCL_TYPE_##kind)defaults.field;                                        \
    dfccl_register_knob(#mca, help ". Default " reason, DFCCL_VAR_TYPE_##kind,                  \
                        dfccl_engine_knob_values(#mca),                                         \
                        OPAL_INFO_LVL_##level, MCA_BASE_VAR_SCOPE_##scope, &c->mca);
#define DFCCL_KNOB_FROM_CALLER(...)
#include "include/dfccl_knobs.def"
    return OMPI_SUCCESS;
}

static int dfccl_open(void)
{
    mca_coll_dfccl_component_t *c = &mca_coll_dfccl_component;

    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->verbose);
    OBJ_CONSTRUCT(&c->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&c->requests, opal_free_list_t);
    OBJ_CONSTRUCT(&c->setup_lock, opal_mutex_t);
    c->setups = NULL;
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
    OBJ_DESTRUCT(&c->setup_lock);
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
#define DFCCL_KNOB(field, mca, ...) config.field = c->mca;
#define DFCCL_KNOB_FROM_CALLER(...)
#include "include/dfccl_knobs.def"
        /* the knobs without parameters of their own */
        config.verbose = c->verbose > 1 ? c->verbose - 1 : 0;
        config.gpu_local_ranks = opal_process_info.num_local_peers >= 0
                                     ? (unsigned)opal_process_info.num_local_peers + 1 : 0;
        {
            /* more of the job's ranks on this node than online cores (the
             * context starts during MPI_Init, before Open MPI sets its own
             * yield_when_idle from the same fact) */
            long cores = sysconf(_SC_NPROCESSORS_ONLN);
            config.oversubscribed = opal_progress_yield_when_idle ||
                                    (opal_process_info.num_local_peers >= 0 && cores > 0 &&
                                     opal_process_info.num_local_peers + 1 > cores);
        }
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
            DFCCL_ERROR("engine start failed (%s): collectives take the stock path%s",
                        dfccl_status_string(status),
                        status == DFCCL_ERR_INVALID_PARAM
                            ? " (a knob the engine names above is the parameter coll_dfccl_<knob>;"
                              " timeout_sec is coll_dfccl_timeout)" : "");
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
    if (mca_coll_dfccl_setup_progress() > 0) return 1;
    n = dfccl_context_poll(ctx, done, 16);
    if (n == 0) {
        /* Waiting: let the engine's threads have the core. Ranks are often
         * bound to one core each, which the host daemon (or the GPU side's
         * proxy, which maps buffers and relaunches the kernel) then shares
         * with a caller spinning in MPI_Wait. A GPU collective needs no core
         * while its kernel runs, and a yield is a system call per poll: for
         * GPU work alone the caller yields only once it has waited a while. */
        uint64_t now = mca_coll_dfccl_now_ns();
        if (opal_atomic_add_fetch_32(&mca_coll_dfccl_component.host_in_flight, 0) > 0) {
            /* Host work: run the engine's scheduler on this thread, which
             * waits anyway (no hand-off to the daemon thread, no wake-up);
             * it ends at a completion or after a while, for Open MPI's own
             * progress. Where another thread drives, or driving is off: */
            int driven = dfccl_context_drive(ctx, DFCCL_WAIT_CALLER_DRIVE_NS);
            if (driven >= 0) return driven > 0 ? mca_coll_dfccl_progress() : 0;
            /* after a short spin, sleep on the completion queue
             * (woken by the daemon's completion) instead of yielding in a
             * loop. A thread that only yields never sleeps; with ranks
             * outnumbering cores the scheduler then left whole peer
             * processes without a core for seconds, and every rank waiting
             * on them stalled until a watchdog broke the communicator. */
            if (empty_since == 0) empty_since = now;
            if (now - empty_since < DFCCL_WAIT_CALLER_SPIN_NS) sched_yield();
            else dfccl_context_wait(ctx, DFCCL_WAIT_CALLER_SLEEP_NS);
            return 0;
        }
        if (opal_atomic_add_fetch_32(&mca_coll_dfccl_component.in_flight, 0) <= 0) {
            empty_since = 0;   /* the next GPU wait counts from its own start */
            return 0;
        }
        if (empty_since == 0) empty_since = now;
        if (now - empty_since >= DFCCL_WAIT_CALLER_GPU_YIELD_NS) sched_yield();
        return 0;
    }
    empty_since = 0;
    opal_atomic_add_fetch_32(&mca_coll_dfccl_component.in_flight, -n);
    for (i = 0; i < n; i++) {
        mca_coll_dfccl_request_t *req = done[i].user;
        if (req->on_host) opal_atomic_add_fetch_32(&mca_coll_dfccl_component.host_in_flight, -1);
        req->super.super.req_status.MPI_ERROR = mca_coll_dfccl_request_error(done[i].status);
        /* a packed call's result reaches the caller's buffer before completion */
        if (req->super.super.req_status.MPI_ERROR == MPI_SUCCESS)
            req->super.super.req_status.MPI_ERROR = mca_coll_dfccl_pack_out(req);
        ompi_request_complete(&req->super.super, true);
        mca_coll_dfccl_request_release(req);   /* the engine's reference */
    }
    return n;
}
