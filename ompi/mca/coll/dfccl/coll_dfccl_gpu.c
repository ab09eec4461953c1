/*
 * coll_dfccl_gpu.c - a communicator's GPU side: set up on its first call with
 * device buffers, without blocking.
 *
 * MPI programs may start their first collectives on several communicators in
 * different orders on different ranks; a blocking exchange inside the first
 * call would make such ranks wait for each other forever. So the first call
 * only starts the exchange (every rank sends its hello to every other rank,
 * all at once) and queues its collective; the progress hook finishes the
 * exchange (two rounds: hellos, then every rank's outcome) and posts what
 * was queued, in order. The outcome is agreed: all ranks use the GPU side or
 * none does. A rank that never joins (it passed host buffers, which take the
 * stock path by default) is named once the timeout passes.
 */
#include <stdlib.h>
#include <string.h>
#include "coll_dfccl.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "opal/runtime/opal_progress.h"

/* Tags at the far end of the collective tag space (hcoll's range, counted
 * from its other end): no stock collective or libnbc schedule uses them, so
 * the exchange never matches a collective running beside it. */
#define DFCCL_TAG_GPU_HELLO   (MCA_COLL_BASE_TAG_HCOLL_END + 1)
#define DFCCL_TAG_GPU_OUTCOME (MCA_COLL_BASE_TAG_HCOLL_END + 2)

typedef struct dfccl_pending {
    struct dfccl_pending *next;
    dfccl_coll_args_t     args;
    size_t               *counts;      /* owned copy for reduce-scatter */
} dfccl_pending_t;

struct mca_coll_dfccl_gpu_setup_t {
    mca_coll_dfccl_module_t *module;
    struct mca_coll_dfccl_gpu_setup_t *next;   /* component's list of set-ups in progress */
    int              round;          /* 1: hellos, 2: outcomes */
    bool             broken;         /* the exchange could not start */
    bool             abandoned;      /* requests were cancelled: their buffers stay */
    int              extensions;     /* round 2 deadlines passed while our outcome was OK */
    size_t           hello_bytes;
    char            *hellos;         /* size * hello_bytes, rank-ordered */
    int32_t         *outcomes;
    ompi_request_t **reqs;           /* 2 (size - 1): receives first */
    int              nreqs;
    double           deadline;
    dfccl_pending_t *pending, *pending_tail;
};

static int dfccl_gpu_post_round(mca_coll_dfccl_gpu_setup_t *s, char *blocks, size_t bytes, int tag)
{
    ompi_communicator_t *comm = s->module->comm;
    int size = ompi_comm_size(comm), me = ompi_comm_rank(comm), n = 0;

    for (int p = 0; p < size; p++) {
        if (p == me) continue;
        if (MCA_PML_CALL(irecv(blocks + (size_t)p * bytes, (int)bytes, MPI_BYTE, p, tag, comm,
                               &s->reqs[n++])) != OMPI_SUCCESS)
            return OMPI_ERROR;
    }
    for (int p = 0; p < size; p++) {
        if (p == me) continue;
        if (MCA_PML_CALL(isend(blocks + (size_t)me * bytes, (int)bytes, MPI_BYTE, p, tag,
                               MCA_PML_BASE_SEND_STANDARD, comm, &s->reqs[n++])) != OMPI_SUCCESS)
            return OMPI_ERROR;
    }
    s->nreqs = n;
    return OMPI_SUCCESS;
}

/* A send cannot be cancelled and a matched receive may not be: the PML may
 * still use their buffers, which therefore stay allocated (a few bytes per
 * rank, only on this failure path). */
static void dfccl_gpu_cancel_requests(mca_coll_dfccl_gpu_setup_t *s)
{
    s->abandoned = true;
    for (int i = 0; i < 2 * (ompi_comm_size(s->module->comm) - 1); i++) {
        if (s->reqs[i] == MPI_REQUEST_NULL || s->reqs[i] == NULL) continue;
        ompi_request_cancel(s->reqs[i]);
        ompi_request_free(&s->reqs[i]);
    }
}

/* Completes a queued collective's request that will never run. */
static void dfccl_gpu_fail_request(mca_coll_dfccl_request_t *req, dfccl_status_t status)
{
    opal_atomic_add_fetch_32(&mca_coll_dfccl_component.in_flight, -1);
    req->super.super.req_status.MPI_ERROR = mca_coll_dfccl_request_error(status);
    ompi_request_complete(&req->super.super, true);
    mca_coll_dfccl_request_release(req);   /* the engine's reference */
}

static void dfccl_gpu_setup_free(mca_coll_dfccl_gpu_setup_t *s)
{
    if (!s->abandoned) {
        free(s->hellos);
        free(s->outcomes);
    }
    free(s->reqs);
    free(s);
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
    dfccl_gpu_setup_free(s);
}

/* Round 1 did not complete in time: name who is missing, then (the caller)
 * tell every peer that this rank fails the set-up (round 2 with outcome
 * TIMEOUT), so that every rank that completes round 2 agrees on failure.
 * Returns false when no memory is left for the outcomes. */
static bool dfccl_gpu_round1_timeout(mca_coll_dfccl_gpu_setup_t *s)
{
    mca_coll_dfccl_module_t *m = s->module;
    int size = ompi_comm_size(m->comm), me = ompi_comm_rank(m->comm);

    for (int i = 0, p = 0; p < size; p++) {
        if (p == me) continue;
        if (s->reqs[i] != MPI_REQUEST_NULL && !REQUEST_COMPLETE(s->reqs[i]))
            DFCCL_ERROR("rank %d of comm %s: rank %d never joined the GPU set-up of this"
                        " communicator within %.0f s: did it pass host buffers, which take the"
                        " stock path (coll_dfccl_host_buffers=stock)?", me, m->comm->c_name, p,
                        mca_coll_dfccl_component.timeout);
        i++;
    }
    dfccl_gpu_cancel_requests(s);
    /* the old buffers stay with the PML (see the cancel); round 2 gets new ones */
    s->hellos = NULL;
    s->outcomes = calloc((size_t)size, sizeof(int32_t));
    s->abandoned = false;
    if (s->outcomes == NULL) {
        s->abandoned = true;
        return false;
    }
    return true;
}

/* Advances one set-up; returns 1 when it has ended. */
static int dfccl_gpu_setup_advance(mca_coll_dfccl_gpu_setup_t *s)
{
    mca_coll_dfccl_module_t *m = s->module;
    int size = ompi_comm_size(m->comm), me = ompi_comm_rank(m->comm), done = 0;

    if (s->broken) {
        dfccl_gpu_setup_end(s, DFCCL_ERR_BOOTSTRAP);
        return 1;
    }
    if (s->nreqs > 0 &&
        (ompi_request_test_all(s->nreqs, s->reqs, &done, MPI_STATUSES_IGNORE) != OMPI_SUCCESS)) {
        DFCCL_ERROR("comm %s: GPU set-up exchange failed", m->comm->c_name);
        dfccl_gpu_cancel_requests(s);
        dfccl_gpu_setup_end(s, DFCCL_ERR_BOOTSTRAP);
        return 1;
    }
    if (s->nreqs > 0 && !done) {
        if (MPI_Wtime() < s->deadline) return 0;
        if (s->round == 1) {
            if (!dfccl_gpu_round1_timeout(s)) {
                dfccl_gpu_setup_end(s, DFCCL_ERR_NO_MEMORY);
                return 1;
            }
            s->outcomes[me] = DFCCL_ERR_TIMEOUT;
            goto round2;
        }
        /* Round 2: our outcome is out. If it said OK, failing alone now
         * would leave the peers that hear from everyone using the GPU side
         * while we do not: keep waiting, saying so, for a few more timeouts
         * (a peer that never joined makes another rank fail round 1, and its
         * TIMEOUT outcome reaches us). */
        if (s->outcomes[me] == DFCCL_OK && ++s->extensions < 10) {
            DFCCL_ERROR("rank %d of comm %s: still waiting for the GPU set-up outcome of some"
                        " peers after %.0f s", me, m->comm->c_name,
                        s->extensions * mca_coll_dfccl_component.timeout);
            s->deadline = MPI_Wtime() + mca_coll_dfccl_component.timeout;
            return 0;
        }
        dfccl_gpu_cancel_requests(s);
        dfccl_gpu_setup_end(s, DFCCL_ERR_TIMEOUT);
        return 1;
    }
    if (s->round == 1) {
        dfccl_status_t mine = m->gpu_comm ? dfccl_gpu_comm_connect(m->gpu_comm, s->hellos)
                                          : DFCCL_ERR_UNSUPPORTED;
        s->outcomes[me] = (int32_t)mine;
round2:
        s->deadline = MPI_Wtime() + mca_coll_dfccl_component.timeout;
        s->round = 2;
        s->nreqs = 0;
        if (size > 1 && dfccl_gpu_post_round(s, (char *)s->outcomes, sizeof(int32_t),
                                             DFCCL_TAG_GPU_OUTCOME) != OMPI_SUCCESS) {
            dfccl_gpu_cancel_requests(s);
            dfccl_gpu_setup_end(s, DFCCL_ERR_BOOTSTRAP);
            return 1;
        }
        return 0;
    }
    dfccl_status_t worst = DFCCL_OK;
    for (int p = 0; p < size; p++)
        if (s->outcomes[p] != DFCCL_OK) worst = (dfccl_status_t)s->outcomes[p];
    if (m->gpu_comm != NULL) dfccl_gpu_comm_finish(m->gpu_comm, worst);
    if (worst != DFCCL_OK)
        DFCCL_VERBOSE(1, "comm %s: GPU side not usable on every rank (%s)", m->comm->c_name,
                      dfccl_status_string(worst));
    dfccl_gpu_setup_end(s, worst);
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

static int dfccl_gpu_setup_start(mca_coll_dfccl_module_t *m)
{
    mca_coll_dfccl_component_t *c = &mca_coll_dfccl_component;
    ompi_communicator_t *comm = m->comm;
    int size = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    mca_coll_dfccl_gpu_setup_t *s = calloc(1, sizeof(*s));
    dfccl_context_t *ctx = NULL;
    dfccl_comm_params_t params;

    if (s == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
    s->module = m;
    s->hello_bytes = dfccl_gpu_hello_bytes();
    s->hellos = calloc((size_t)size, s->hello_bytes);
    s->outcomes = calloc((size_t)size, sizeof(int32_t));
    s->reqs = calloc((size_t)(2 * size), sizeof(ompi_request_t *));
    if (s->hellos == NULL || s->outcomes == NULL || s->reqs == NULL) {
        dfccl_gpu_setup_free(s);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (int i = 0; i < 2 * size; i++) s->reqs[i] = MPI_REQUEST_NULL;
    s->deadline = MPI_Wtime() + c->timeout;
    s->round = 1;
    params.rank = me;
    params.size = size;
    params.key = ompi_comm_get_cid(comm);
    params.allgather = NULL;
    params.allgather_arg = NULL;
    /* a failure here still travels in the hello, so every rank learns it */
    if (mca_coll_dfccl_context_get(&ctx) != OMPI_SUCCESS ||
        dfccl_gpu_comm_begin(ctx, &params, &m->gpu_comm, s->hellos + (size_t)me * s->hello_bytes) !=
            DFCCL_OK) {
        int32_t failed = DFCCL_ERR_SYSTEM;
        m->gpu_comm = NULL;
        memcpy(s->hellos + (size_t)me * s->hello_bytes, &failed, sizeof(failed));
    }
    m->gpu_setup = s;
    m->gpu_state = MCA_COLL_DFCCL_ENGINE_SETUP;
    if (size > 1 && dfccl_gpu_post_round(s, s->hellos, s->hello_bytes, DFCCL_TAG_GPU_HELLO) !=
                        OMPI_SUCCESS) {
        DFCCL_ERROR("comm %s: GPU set-up exchange could not start", comm->c_name);
        dfccl_gpu_cancel_requests(s);
        s->nreqs = 0;
        s->broken = true;   /* peers find out through their own timeout and its diagnosis */
    }
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
int mca_coll_dfccl_gpu_submit(mca_coll_dfccl_module_t *m, dfccl_coll_args_t *args,
                              mca_coll_dfccl_request_t *req, bool *posted)
{
    dfccl_pending_t *p;
    int rc;

    *posted = false;
    /* after a failed set-up every rank fails every device call on this
     * communicator alike: a fallback taken from some call on, which ranks
     * would reach at different calls, could pair different collectives */
    if (m->gpu_state == MCA_COLL_DFCCL_ENGINE_FAILED) return OMPI_ERROR;
    if (m->gpu_state == MCA_COLL_DFCCL_ENGINE_UNSET) {
        rc = dfccl_gpu_setup_start(m);
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
        return mca_coll_dfccl_gpu_submit(m, args, req, posted);
    }
    *posted = true;
    return OMPI_SUCCESS;
}

/* Module destruction: a set-up still running is abandoned. */
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
        dfccl_gpu_cancel_requests(m->gpu_setup);
        dfccl_gpu_setup_end(m->gpu_setup, DFCCL_ERR_SHUTDOWN);
    }
    if (m->gpu_comm != NULL) dfccl_comm_destroy(m->gpu_comm);
    m->gpu_comm = NULL;
}
