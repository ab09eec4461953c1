/*
 * coll_dfccl_gpu.c - a communicator's GPU side: set up on its first call with
 * device buffers, without blocking.
 *
 * MPI programs may start their first collectives on several communicators in
 * different orders on different ranks; a blocking exchange inside the first
 * call would make such ranks wait for each other forever. So the first call
 * only starts the engine's set-up (dfccl_comm_create_start, over the
 * non-blocking bootstrap) and queues its collective; the progress hook
 * advances the set-up (dfccl_comm_create_test) and posts what was queued,
 * in order. The engine agrees the outcome: all ranks use the GPU side or
 * none does. A rank that never joins (it passed host buffers, which take
 * the stock path by default) is named once the timeout passes.
 */
#include <stdlib.h>
#include <string.h>
#include "coll_dfccl.h"
#include "opal/runtime/opal_progress.h"

typedef struct dfccl_pending {
    struct dfccl_pending *next;
    dfccl_coll_args_t     args;
    size_t               *counts;      /* owned copy for reduce-scatter */
} dfccl_pending_t;

struct mca_coll_dfccl_gpu_setup_t {
    mca_coll_dfccl_module_t *module;
    struct mca_coll_dfccl_gpu_setup_t *next;   /* component's list of set-ups in progress */
    dfccl_pending_t *pending, *pending_tail;
};

/* Completes a queued collective's request that will never run. */
static void dfccl_gpu_fail_request(mca_coll_dfccl_request_t *req, dfccl_status_t status)
{
    opal_atomic_add_fetch_32(&mca_coll_dfccl_component.in_flight, -1);
    req->super.super.req_status.MPI_ERROR = mca_coll_dfccl_request_error(status);
    ompi_request_complete(&req->super.super, true);
    mca_coll_dfccl_request_release(req);   /* the engine's reference */
}

/* The set-up ended (agreed outcome, the same on every rank): post or fail
 * what was queued, in order, and only then publish the state, so that a call
 * on another thread cannot overtake the queued ones. Called with the set-up
 * lock held (or from the module's destruction, with nothing concurrent). */
static void dfccl_gpu_setup_end(mca_coll_dfccl_gpu_setup_t *s, dfccl_status_t outcome)
{
    mca_coll_dfccl_module_t *m = s->module;
    dfccl_pending_t *p = s->pending;

    if (outcome == DFCCL_OK)
        DFCCL_VERBOSE(1, "comm %s (cid %u, %d ranks): GPU side ready", m->comm->c_name,
                      ompi_comm_get_cid(m->comm), ompi_comm_size(m->comm));
    else if (outcome != DFCCL_ERR_SHUTDOWN)
        DFCCL_ERROR("comm %s: GPU set-up failed (%s): its collectives on device buffers fail"
                    " with MPI_ERR_OTHER", m->comm->c_name, dfccl_status_string(outcome));
    while (p != NULL) {
        dfccl_pending_t *next = p->next;
        dfccl_status_t status = outcome;
        if (status == DFCCL_OK) {
            p->args.counts = p->counts;
            status = dfccl_coll_post(m->gpu_comm, &p->args);
            if (status != DFCCL_OK)
                DFCCL_ERROR("%s on comm %s not posted to the GPU: %s",
                            dfccl_coll_type_name(p->args.type), m->comm->c_name,
                            dfccl_status_string(status));
        }
        if (status != DFCCL_OK) dfccl_gpu_fail_request(p->args.user, DFCCL_ERR_SYSTEM);
        free(p->counts);
        free(p);
        p = next;
    }
    m->gpu_setup = NULL;
    opal_atomic_wmb();
    m->gpu_state = outcome == DFCCL_OK ? MCA_COLL_DFCCL_ENGINE_READY : MCA_COLL_DFCCL_ENGINE_FAILED;
    free(s);
}

/* Advances one set-up; returns 1 when it has ended. */
static int dfccl_gpu_setup_advance(mca_coll_dfccl_gpu_setup_t *s)
{
    mca_coll_dfccl_module_t *m = s->module;
    dfccl_status_t status = m->gpu_comm != NULL ? dfccl_comm_create_test(m->gpu_comm)
                                                : DFCCL_ERR_BOOTSTRAP;

    if (status == DFCCL_INPROGRESS) return 0;
    dfccl_gpu_setup_end(s, status);
    return 1;
}

/* Progress hook part: advances every set-up in progress. */
int mca_coll_dfccl_gpu_progress(void)
{
    mca_coll_dfccl_component_t *c = &mca_coll_dfccl_component;
    mca_coll_dfccl_gpu_setup_t **link;
    int ended = 0;

    static int32_t driving = 0;
    int32_t idle = 0;

    if (c->gpu_setups == NULL) return 0;
    /* Testing the exchange's requests runs opal_progress, which calls this
     * hook again: one driver at a time (another thread, or an outer frame). */
    if (!opal_atomic_compare_exchange_strong_32(&driving, &idle, 1)) return 0;
    OPAL_THREAD_LOCK(&c->gpu_setup_lock);
    link = &c->gpu_setups;
    while (*link != NULL) {
        mca_coll_dfccl_gpu_setup_t *s = *link, *next = s->next;
        if (dfccl_gpu_setup_advance(s)) {   /* ended: s is freed */
            *link = next;
            ended++;
        } else {
            link = &s->next;
        }
    }
    OPAL_THREAD_UNLOCK(&c->gpu_setup_lock);
    opal_atomic_wmb();
    driving = 0;
    return ended;
}

static int dfccl_gpu_setup_start(mca_coll_dfccl_module_t *m, dfccl_context_t *ctx)
{
    mca_coll_dfccl_component_t *c = &mca_coll_dfccl_component;
    ompi_communicator_t *comm = m->comm;
    mca_coll_dfccl_gpu_setup_t *s = calloc(1, sizeof(*s));
    dfccl_comm_params_t params;
    dfccl_status_t status;

    if (s == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
    s->module = m;
    memset(&params, 0, sizeof(params));
    params.rank = ompi_comm_rank(comm);
    params.size = ompi_comm_size(comm);
    params.key = ompi_comm_get_cid(comm);
    params.backend = DFCCL_BACKEND_GPU;
    params.bootstrap = mca_coll_dfccl_bootstrap_of(&m->gpu_boot);
    params.node = mca_coll_dfccl_node_label();   /* as the host engine's communicators */
    /* the GPU side's own failures travel in the set-up, so every rank
     * learns them; failing to start it leaves the peers to their timeout */
    m->gpu_comm = NULL;
    status = dfccl_comm_create_start(ctx, &params, &m->gpu_comm);
    if (status != DFCCL_OK) {
        DFCCL_ERROR("comm %s: GPU set-up could not start: %s", comm->c_name,
                    dfccl_status_string(status));
        m->gpu_comm = NULL;
    }
    m->gpu_setup = s;
    m->gpu_state = MCA_COLL_DFCCL_ENGINE_SETUP;
    OPAL_THREAD_LOCK(&c->gpu_setup_lock);
    s->next = c->gpu_setups;
    c->gpu_setups = s;
    OPAL_THREAD_UNLOCK(&c->gpu_setup_lock);
    DFCCL_VERBOSE(1, "comm %s: GPU set-up started", comm->c_name);
    return OMPI_SUCCESS;
}

/*
 * Hands a collective on device buffers to the GPU side: queued while the
 * set-up runs, posted once it is ready. The request carries the outcome.
 * Returns OMPI_ERR_NOT_SUPPORTED (take the stock path) only when the GPU side
 * failed on this communicator, which all ranks agreed.
 */
int mca_coll_dfccl_gpu_submit(mca_coll_dfccl_module_t *m, dfccl_context_t *ctx,
                              dfccl_coll_args_t *args, mca_coll_dfccl_request_t *req,
                              bool *posted)
{
    dfccl_pending_t *p;
    int rc;

    *posted = false;
    /* after a failed set-up every rank fails every device call on this
     * communicator alike: a fallback taken from some call on, which ranks
     * would reach at different calls, could pair different collectives */
    if (m->gpu_state == MCA_COLL_DFCCL_ENGINE_FAILED) return OMPI_ERROR;
    if (m->gpu_state == MCA_COLL_DFCCL_ENGINE_UNSET) {
        rc = dfccl_gpu_setup_start(m, ctx);
        if (rc != OMPI_SUCCESS) return rc;
    }
    args->user = req;
    if (m->gpu_state == MCA_COLL_DFCCL_ENGINE_READY) {
        opal_atomic_rmb();   /* pairs with the set-up's publication */
        dfccl_status_t status = dfccl_coll_post(m->gpu_comm, args);
        if (status != DFCCL_OK) {
            DFCCL_ERROR("%s on comm %s not posted to the GPU: %s", dfccl_coll_type_name(args->type),
                        m->comm->c_name, dfccl_status_string(status));
            return mca_coll_dfccl_request_error(status);
        }
        *posted = true;
        return OMPI_SUCCESS;
    }
    /* set-up in progress (this call may have ended it already, on one rank) */
    p = calloc(1, sizeof(*p));
    if (p == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
    p->args = *args;
    if (args->type == DFCCL_COLL_REDUCE_SCATTER) {
        size_t n = (size_t)ompi_comm_size(m->comm);
        p->counts = malloc(n * sizeof(size_t));
        if (p->counts == NULL) {
            free(p);
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        memcpy(p->counts, args->counts, n * sizeof(size_t));
    }
    OPAL_THREAD_LOCK(&mca_coll_dfccl_component.gpu_setup_lock);
    if (m->gpu_state == MCA_COLL_DFCCL_ENGINE_SETUP) {
        mca_coll_dfccl_gpu_setup_t *s = m->gpu_setup;
        if (s->pending_tail) s->pending_tail->next = p;
        else s->pending = p;
        s->pending_tail = p;
        p = NULL;
    }
    OPAL_THREAD_UNLOCK(&mca_coll_dfccl_component.gpu_setup_lock);
    if (p != NULL) {
        /* the set-up ended between our check and the lock */
        free(p->counts);
        free(p);
        return mca_coll_dfccl_gpu_submit(m, ctx, args, req, posted);
    }
    *posted = true;
    return OMPI_SUCCESS;
}

/* Module destruction: a set-up still running is abandoned (the engine
 * cancels its exchange when the communicator is destroyed). */
void mca_coll_dfccl_gpu_module_fini(mca_coll_dfccl_module_t *m)
{
    mca_coll_dfccl_component_t *c = &mca_coll_dfccl_component;

    if (m->gpu_setup != NULL) {
        mca_coll_dfccl_gpu_setup_t **link;
        OPAL_THREAD_LOCK(&c->gpu_setup_lock);
        for (link = &c->gpu_setups; *link != NULL; link = &(*link)->next) {
            if (*link == m->gpu_setup) {
                *link = m->gpu_setup->next;
                break;
            }
        }
        OPAL_THREAD_UNLOCK(&c->gpu_setup_lock);
        dfccl_gpu_setup_end(m->gpu_setup, DFCCL_ERR_SHUTDOWN);
    }
    if (m->gpu_comm != NULL) dfccl_comm_destroy(m->gpu_comm);
    m->gpu_comm = NULL;
}
