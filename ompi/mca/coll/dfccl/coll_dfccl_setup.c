/*
 * coll_dfccl_setup.c - engine communicators set up in the background: a
 * communicator's GPU side (on its first call with device buffers) and the
 * private channel of each persistent request (at its init).
 *
 * MPI programs may start their first collectives on several communicators,
 * or initialise persistent collectives, in different orders on different
 * ranks; a blocking exchange inside such a call would make those ranks wait
 * for each other forever. So the call only starts the engine's set-up
 * (dfccl_comm_create_start, over the non-blocking bootstrap) and posts its
 * collective, which the engine queues until the set-up ends; the progress
 * hook advances every set-up (dfccl_comm_create_test). The engine agrees
 * the outcome: all ranks use the new communicator or none does. A rank
 * that never joins is named once the timeout passes.
 */
#include <stdlib.h>
#include <string.h>
#include "coll_dfccl.h"
#include "opal/runtime/opal_progress.h"

struct mca_coll_dfccl_setup_t {
    mca_coll_dfccl_side_t           *side;
    struct mca_coll_dfccl_setup_t   *next;   /* component's list of set-ups in progress */
};

static const char *dfccl_side_comm_name(const mca_coll_dfccl_side_t *side)
{
    return side->boot.module->comm->c_name;
}

/* The set-up ended (agreed outcome, the same on every rank): the engine
 * has handed on (or failed) the collectives posted meanwhile, in order;
 * publish the state. Called with the set-up lock held (or from the side's
 * end, with nothing concurrent). */
static void dfccl_setup_end(mca_coll_dfccl_setup_t *s, dfccl_status_t outcome)
{
    mca_coll_dfccl_side_t *side = s->side;

    if (outcome == DFCCL_OK)
        DFCCL_VERBOSE(1, "comm %s: %s ready", dfccl_side_comm_name(side), side->label);
    else if (outcome != DFCCL_ERR_SHUTDOWN)
        DFCCL_ERROR("comm %s: set-up of the %s failed (%s): its collectives fail with"
                    " MPI_ERR_OTHER", dfccl_side_comm_name(side), side->label,
                    dfccl_status_string(outcome));
    side->setup = NULL;
    opal_atomic_wmb();
    side->state = outcome == DFCCL_OK ? MCA_COLL_DFCCL_ENGINE_READY : MCA_COLL_DFCCL_ENGINE_FAILED;
    free(s);
}

/* Advances one set-up; returns 1 when it has ended. */
static int dfccl_setup_advance(mca_coll_dfccl_setup_t *s)
{
    mca_coll_dfccl_side_t *side = s->side;
    dfccl_status_t status = side->comm != NULL ? dfccl_comm_create_test(side->comm)
                                               : DFCCL_ERR_BOOTSTRAP;

    if (status == DFCCL_INPROGRESS) return 0;
    dfccl_setup_end(s, status);
    return 1;
}

/* Progress hook part: advances every set-up in progress. */
int mca_coll_dfccl_setup_progress(void)
{
    mca_coll_dfccl_component_t *c = &mca_coll_dfccl_component;
    mca_coll_dfccl_setup_t **link;
    int ended = 0;

    static int32_t driving = 0;
    int32_t idle = 0;

    if (c->setups == NULL) return 0;
    /* Testing the exchange's requests runs opal_progress, which calls this
     * hook again: one driver at a time (another thread, or an outer frame). */
    if (!opal_atomic_compare_exchange_strong_32(&driving, &idle, 1)) return 0;
    OPAL_THREAD_LOCK(&c->setup_lock);
    link = &c->setups;
    while (*link != NULL) {
        mca_coll_dfccl_setup_t *s = *link, *next = s->next;
        if (dfccl_setup_advance(s)) {   /* ended: s is freed */
            *link = next;
            ended++;
        } else {
            link = &s->next;
        }
    }
    OPAL_THREAD_UNLOCK(&c->setup_lock);
    opal_atomic_wmb();
    driving = 0;
    return ended;
}

void mca_coll_dfccl_side_init(mca_coll_dfccl_side_t *side, mca_coll_dfccl_module_t *m, int tag,
                              const char *label, const char *hint)
{
    side->comm = NULL;
    side->state = MCA_COLL_DFCCL_ENGINE_UNSET;
    side->setup = NULL;
    side->label = label;
    mca_coll_dfccl_bootstrap_init(&side->boot, m, tag, label, hint);
}

int mca_coll_dfccl_side_start(mca_coll_dfccl_side_t *side, dfccl_context_t *ctx,
                              dfccl_backend_t backend, uint64_t key)
{
    mca_coll_dfccl_component_t *c = &mca_coll_dfccl_component;
    ompi_communicator_t *comm = side->boot.module->comm;
    mca_coll_dfccl_setup_t *s = calloc(1, sizeof(*s));
    dfccl_comm_params_t params;
    dfccl_status_t status;

    if (s == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
    s->side = side;
    memset(&params, 0, sizeof(params));
    params.rank = ompi_comm_rank(comm);
    params.size = ompi_comm_size(comm);
    params.key = key;
    params.backend = backend;
    params.bootstrap = mca_coll_dfccl_bootstrap_of(&side->boot);
    params.node = mca_coll_dfccl_node_label();   /* as the host engine's communicators */
    /* the engine's own failures travel in the set-up, so every rank learns
     * them; failing to start it leaves the peers to their timeout */
    side->comm = NULL;
    status = dfccl_comm_create_start(ctx, &params, &side->comm);
    if (status != DFCCL_OK) {
        DFCCL_ERROR("comm %s: set-up of the %s could not start: %s", comm->c_name, side->label,
                    dfccl_status_string(status));
        side->comm = NULL;
    }
    side->setup = s;
    side->state = MCA_COLL_DFCCL_ENGINE_SETUP;
    OPAL_THREAD_LOCK(&c->setup_lock);
    s->next = c->setups;
    c->setups = s;
    OPAL_THREAD_UNLOCK(&c->setup_lock);
    DFCCL_VERBOSE(1, "comm %s: set-up of the %s started", comm->c_name, side->label);
    return OMPI_SUCCESS;
}

/*
 * Hands a collective to a side whose set-up has started: the engine queues
 * it while the set-up runs and posts it once it is ready (a prepared call
 * is started instead, which only a ready side has). The request carries
 * the outcome. OMPI_ERROR when the set-up failed, which all ranks agreed.
 */
int mca_coll_dfccl_side_submit(mca_coll_dfccl_side_t *side, dfccl_coll_args_t *args,
                               dfccl_prepared_t *prepared, bool *posted)
{
    dfccl_status_t status;

    *posted = false;
    /* after a failed set-up every rank fails every call on this side
     * alike: a fallback taken from some call on, which ranks would reach at
     * different calls, could pair different collectives */
    if (side->state == MCA_COLL_DFCCL_ENGINE_FAILED || side->state == MCA_COLL_DFCCL_ENGINE_UNSET ||
        side->comm == NULL)   /* its set-up could not start: it fails at the next progress */
        return OMPI_ERROR;
    opal_atomic_rmb();   /* pairs with the set-up's publication */
    status = prepared != NULL && side->state == MCA_COLL_DFCCL_ENGINE_READY
                 ? dfccl_coll_start(prepared, args->user)
                 : dfccl_coll_post(side->comm, args);
    if (status != DFCCL_OK) {
        DFCCL_ERROR("%s on comm %s not posted to the %s: %s", dfccl_coll_type_name(args->type),
                    dfccl_side_comm_name(side), side->label, dfccl_status_string(status));
        return mca_coll_dfccl_request_error(status);
    }
    *posted = true;
    return OMPI_SUCCESS;
}

/* The side's end (module destruction, persistent request freed): a set-up
 * still running is abandoned (the engine cancels its exchange when the
 * communicator is destroyed); the communicator goes once its collectives
 * have ended. */
void mca_coll_dfccl_side_fini(mca_coll_dfccl_side_t *side)
{
    mca_coll_dfccl_component_t *c = &mca_coll_dfccl_component;

    if (side->setup != NULL) {
        mca_coll_dfccl_setup_t **link;
        OPAL_THREAD_LOCK(&c->setup_lock);
        for (link = &c->setups; *link != NULL; link = &(*link)->next) {
            if (*link == side->setup) {
                *link = side->setup->next;
                break;
            }
        }
        OPAL_THREAD_UNLOCK(&c->setup_lock);
        dfccl_setup_end(side->setup, DFCCL_ERR_SHUTDOWN);
    }
    if (side->comm != NULL) dfccl_comm_destroy(side->comm);
    side->comm = NULL;
}
