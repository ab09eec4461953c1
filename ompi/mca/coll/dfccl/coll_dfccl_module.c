/*
 * coll_dfccl_module.c - per-communicator module: selection, saving the
 * functions of the components below (our fallback), and the engine's
 * communicator, created on the first call the engine carries.
 */
#include <stdlib.h>
#include <string.h>
#include "coll_dfccl.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "opal/runtime/opal_progress.h"

static void dfccl_module_construct(mca_coll_dfccl_module_t *m)
{
    m->comm = NULL;
    m->engine_comm = NULL;
    m->engine_state = MCA_COLL_DFCCL_ENGINE_UNSET;
    m->all_local = false;
    m->gpu_agreed = false;
    m->stage_agreed = false;
    m->priority = 0;
    m->priority_known = false;
    m->gpu.comm = NULL;
    m->gpu.state = MCA_COLL_DFCCL_ENGINE_UNSET;
    m->gpu.setup = NULL;
    m->persist_inits = 0;
#define DFCCL_CLEAR_PREV(api) m->previous_##api = NULL; m->previous_##api##_module = NULL;
    MCA_COLL_DFCCL_CARRIED(DFCCL_CLEAR_PREV)
    MCA_COLL_DFCCL_CARRIED_INIT(DFCCL_CLEAR_PREV)
#undef DFCCL_CLEAR_PREV
}

static void dfccl_module_destruct(mca_coll_dfccl_module_t *m)
{
    /* local: the engine frees the FIFOs once in-flight collectives are done */
    if (m->engine_comm != NULL) dfccl_comm_destroy(m->engine_comm);
    m->engine_comm = NULL;
    mca_coll_dfccl_side_fini(&m->gpu);
#define DFCCL_RELEASE_PREV(api) \
    if (m->previous_##api##_module != NULL) OBJ_RELEASE(m->previous_##api##_module);
    MCA_COLL_DFCCL_CARRIED(DFCCL_RELEASE_PREV)
    MCA_COLL_DFCCL_CARRIED_INIT(DFCCL_RELEASE_PREV)
#undef DFCCL_RELEASE_PREV
}

OBJ_CLASS_INSTANCE(mca_coll_dfccl_module_t, mca_coll_base_module_t, dfccl_module_construct,
                   dfccl_module_destruct);

/* At enable time comm->c_coll holds the lower-priority components' functions. */
static int dfccl_module_enable(mca_coll_base_module_t *module, ompi_communicator_t *comm)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;

#define DFCCL_SAVE_PREV(api)                                                         \
    if (comm->c_coll->coll_##api == NULL || comm->c_coll->coll_##api##_module == NULL) { \
        DFCCL_VERBOSE(1, "no component below provides " #api " on comm %s",           \
                      comm->c_name);                                                 \
        return OMPI_ERROR;                                                            \
    }                                                                                \
    m->previous_##api = comm->c_coll->coll_##api;                                    \
    m->previous_##api##_module = comm->c_coll->coll_##api##_module;                  \
    OBJ_RETAIN(m->previous_##api##_module);
    MCA_COLL_DFCCL_CARRIED(DFCCL_SAVE_PREV)
#undef DFCCL_SAVE_PREV
    /* the persistent forms: without them below us, a call we do not carry
     * fails with a message (mca_coll_dfccl_*_init) */
#define DFCCL_SAVE_PREV_INIT(api)                                                    \
    if (comm->c_coll->coll_##api != NULL && comm->c_coll->coll_##api##_module != NULL) { \
        m->previous_##api = comm->c_coll->coll_##api;                                \
        m->previous_##api##_module = comm->c_coll->coll_##api##_module;              \
        OBJ_RETAIN(m->previous_##api##_module);                                      \
    }
    MCA_COLL_DFCCL_CARRIED_INIT(DFCCL_SAVE_PREV_INIT)
#undef DFCCL_SAVE_PREV_INIT
    m->comm = comm;
    mca_coll_dfccl_bootstrap_init(&m->engine_boot, m, DFCCL_TAG_ENGINE_SETUP, "engine", "");
    mca_coll_dfccl_side_init(&m->gpu, m, DFCCL_TAG_GPU_SETUP, "GPU side",
                             ": did it pass host buffers, which take the stock path"
                             " (coll_dfccl_host_buffers=stock)?");
    /* Whether the communicator spans nodes: the same answer on every rank,
     * as every rank sees the same set of nodes. */
    m->all_local = true;
    for (int i = 0; i < ompi_comm_size(comm); i++) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(comm, i);
        if (proc == NULL || !OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags)) m->all_local = false;
    }
    /* When host buffers go to the engine, set it up now, while the ranks
     * create the communicator together: doing it at the first nonblocking
     * call would put a blocking exchange there, and ranks that start
     * collectives on several communicators in different orders would wait
     * for each other. The same exchange agrees whether every rank offers
     * the GPU side. A failure only means the stock path (agreed by all). */
    if (mca_coll_dfccl_component.host_buffers == MCA_COLL_DFCCL_HOST_BUFFERS_ENGINE)
        (void)mca_coll_dfccl_module_engine_ready(m);
    return OMPI_SUCCESS;
}

/*
 * "--mca coll dfccl" (or any include list without components for the other
 * collectives) leaves Open MPI with nothing for barrier, bcast, the I-forms...
 * Say which list works instead of letting selection fail obscurely.
 */
static bool dfccl_selection_is_incomplete(void)
{
    const char *sel = ompi_coll_base_framework.framework_selection;
    bool blocking = false, nonblocking = false;
    char *list, *tok, *save = NULL;

    if (sel == NULL || sel[0] == '\0' || sel[0] == '^') return false;
    list = strdup(sel);
    if (list == NULL) return false;
    for (tok = strtok_r(list, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(tok, "basic") == 0) blocking = true;
        if (strcmp(tok, "libnbc") == 0) nonblocking = true;
    }
    free(list);
    return !(blocking && nonblocking);
}

mca_coll_base_module_t *mca_coll_dfccl_comm_query(ompi_communicator_t *comm, int *priority)
{
    mca_coll_dfccl_component_t *c = &mca_coll_dfccl_component;
    static bool warned = false;
    mca_coll_dfccl_module_t *m;

    *priority = 0;
    if (!c->enable) return NULL;
    if (OMPI_COMM_IS_INTER(comm)) return NULL;   /* the stock path serves intercommunicators */
    if (dfccl_selection_is_incomplete()) {
        if (!warned && ompi_comm_rank(&ompi_mpi_comm_world.comm) == 0)
            opal_output(0, "coll:dfccl: \"--mca coll %s\" leaves Open MPI without components for"
                        " the collectives dfccl does not carry (it carries Allreduce, Allgather,"
                        " Reduce_scatter and Reduce_scatter_block, and their I-forms). Use"
                        " \"--mca coll dfccl,tuned,libnbc,basic,self\", or leave \"coll\" unset:"
                        " dfccl is selected by its priority.",
                        ompi_coll_base_framework.framework_selection);
        warned = true;
        return NULL;
    }
    m = OBJ_NEW(mca_coll_dfccl_module_t);
    if (m == NULL) return NULL;
    m->super.coll_module_enable = dfccl_module_enable;
#define DFCCL_OFFER(api) m->super.coll_##api = mca_coll_dfccl_##api;
    MCA_COLL_DFCCL_CARRIED(DFCCL_OFFER)
    MCA_COLL_DFCCL_CARRIED_INIT(DFCCL_OFFER)
#undef DFCCL_OFFER
    *priority = c->priority;
    return &m->super;
}

bool mca_coll_dfccl_gpu_reaches(const mca_coll_dfccl_module_t *m)
{
    static int net = -1;
    char why[160] = "";

    /* across nodes the engine runs the GPU side's ring over its network
     * transport (built with UCX or not: the same build on every rank),
     * the algorithms that map peers' memory on one node only */
    if (m->all_local) return true;
    if (net < 0) {
        net = dfccl_net_available(why, sizeof(why));
        if (!net) DFCCL_VERBOSE(1, "no GPU side on communicators that span nodes: %s", why);
    }
    return net == 1;
}

/* Whether this rank offers the GPU side on a communicator: asked of CUDA
 * once per process (it initialises the driver, which only host_buffers=
 * engine does at communicator creation: see the caller). */
static bool dfccl_gpu_offered(const mca_coll_dfccl_module_t *m)
{
    static int available = -1;
    char why[160] = "";

    /* the GPU side always schedules preemptively: a process that asks for
     * serial scheduling (coll_dfccl_preempt=0, a diagnostic) keeps the host
     * engine */
    if (!mca_coll_dfccl_component.gpu || !mca_coll_dfccl_component.preempt ||
        !mca_coll_dfccl_gpu_reaches(m))
        return false;
    if (available < 0) {
        available = dfccl_gpu_available(why, sizeof(why));
        if (!available) DFCCL_VERBOSE(1, "no GPU side in this process: %s", why);
    }
    return available == 1;
}

/* This process's node as Open MPI sees it: 1 + the lowest rank of
 * MPI_COMM_WORLD on it (the same on every rank of the node, different on
 * the others). Asked once: it walks the world's processes. */
uint64_t mca_coll_dfccl_node_label(void)
{
    static uint64_t label = 0;
    ompi_communicator_t *world = &ompi_mpi_comm_world.comm;

    if (label != 0) return label;
    label = 1 + (uint64_t)ompi_comm_rank(world);
    for (int i = 0; i < ompi_comm_rank(world); i++) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(world, i);
        if (proc != NULL && OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags)) {
            label = 1 + (uint64_t)i;
            break;
        }
    }
    return label;
}

/*
 * The engine's communicator: created when the communicator is (host buffers
 * to the engine), else on the first carried call. Either way all ranks
 * arrive here together; each step agrees on its outcome so that all ranks
 * carry on, or all fall back. The first exchange also agrees on the GPU
 * side: with host buffers going to the engine, the path of a call may not
 * depend on the memory kind of one rank's buffers, so every call on a
 * communicator whose ranks all offer the GPU side takes it.
 */
int mca_coll_dfccl_module_engine_ready(mca_coll_dfccl_module_t *m)
{
    dfccl_context_t *ctx = NULL;
    dfccl_comm_params_t params;
    dfccl_status_t status;
    int size = ompi_comm_size(m->comm), ok, *all, i;

    if (m->engine_state == MCA_COLL_DFCCL_ENGINE_READY) return OMPI_SUCCESS;
    if (m->engine_state == MCA_COLL_DFCCL_ENGINE_FAILED) return OMPI_ERROR;

    /* bit 0: the engine runs here; bit 1: the GPU side is offered here;
     * bit 2: device buffers can be staged here (built with CUDA) */
    ok = mca_coll_dfccl_context_get(&ctx) == OMPI_SUCCESS;
    if (ok && dfccl_gpu_offered(m)) ok |= 2;
    if (dfccl_gpu_built()) ok |= 4;
    all = malloc(sizeof(int) * (size_t)size);
    if (all == NULL || mca_coll_dfccl_bootstrap_allgather(&m->engine_boot, &ok, all, sizeof(int)) != 0) {
        free(all);
        DFCCL_ERROR("engine set-up exchange failed on comm %s", m->comm->c_name);
        m->engine_state = MCA_COLL_DFCCL_ENGINE_FAILED;
        return OMPI_ERROR;
    }
    for (i = 0; i < size; i++) ok &= all[i];
    free(all);
    m->gpu_agreed = (ok & 3) == 3;
    m->stage_agreed = (ok & 4) != 0;
    DFCCL_VERBOSE(1, "comm %s: %s", m->comm->c_name,
                  m->gpu_agreed ? "every rank offers the GPU side: carried calls take it (host"
                                  " buffers staged)"
                                : "not every rank offers the GPU side: carried calls take the"
                                  " host engine (device buffers staged)");
    if (!(ok & 1)) {
        DFCCL_VERBOSE(1, "comm %s: the engine is not running on every rank: stock path",
                      m->comm->c_name);
        m->engine_state = MCA_COLL_DFCCL_ENGINE_FAILED;
        return OMPI_ERROR;
    }
    /* ranks on several nodes need the network transport; every rank sees
     * the same nodes and the same build, so all decide alike */
    if (!m->all_local) {
        char why[160];
        if (!dfccl_net_available(why, sizeof(why))) {
            DFCCL_VERBOSE(1, "comm %s spans nodes: stock path (%s)", m->comm->c_name, why);
            m->engine_state = MCA_COLL_DFCCL_ENGINE_FAILED;
            return OMPI_ERROR;
        }
    }
    memset(&params, 0, sizeof(params));
    params.rank = ompi_comm_rank(m->comm);
    params.size = size;
    params.key = ompi_comm_get_cid(m->comm);
    params.backend = DFCCL_BACKEND_HOST;
    params.bootstrap = mca_coll_dfccl_bootstrap_of(&m->engine_boot);
    params.node = mca_coll_dfccl_node_label();
    status = dfccl_comm_create(ctx, &params, &m->engine_comm);
    if (status != DFCCL_OK) {
        DFCCL_ERROR("comm %s: engine communicator not created (%s): stock path",
                    m->comm->c_name, dfccl_status_string(status));
        m->engine_state = MCA_COLL_DFCCL_ENGINE_FAILED;
        return OMPI_ERROR;
    }
    DFCCL_VERBOSE(1, "comm %s (cid %u, %d ranks): engine ready", m->comm->c_name,
                  ompi_comm_get_cid(m->comm), size);
    m->engine_state = MCA_COLL_DFCCL_ENGINE_READY;
    return OMPI_SUCCESS;
}
