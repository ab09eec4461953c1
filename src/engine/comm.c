/*
 * comm.c - communicators: creation through the caller's non-blocking
 * bootstrap, and reference-counted teardown.
 *
 * Set-up is a state machine the caller advances (dfccl_comm_create_test):
 * the hellos exchange (each rank's connection details, from its backend's
 * begin), the backend's connect, then the outcomes exchange, so that every
 * rank learns every rank's result and all succeed or all fail alike. The
 * caller's exchanges only move bytes; deadlines and the protocol are ours.
 */
#include <stdlib.h>
#include <string.h>
#include "engine/backend_ops.h"
#include "util/clock.h"
#include "engine/internal.h"
#include "util/log.h"
#include "core/wait_policy.h"

/* A rank whose own outcome was OK keeps waiting for the others' this many
 * timeouts: failing alone would leave the ranks that heard from everyone
 * using a communicator this one gave up (a rank that never joins makes
 * another fail the hellos exchange, and its failed outcome reaches us). */
#define COMM_SETUP_MAX_EXTENSIONS 10

typedef enum { SETUP_HELLOS, SETUP_ADDRESSES, SETUP_OUTCOMES, SETUP_ENDED } setup_round_t;

struct dfccl_comm_setup {
    dfccl_bootstrap_t boot;
    setup_round_t     round;
    size_t            hello_bytes;
    char             *hellos;       /* size * hello_bytes, rank-ordered */
    size_t            address_bytes;
    char             *addresses;    /* size * address_bytes (backends with a second round) */
    int32_t          *outcomes;     /* size */
    void             *request;      /* the exchange under way, if any */
    uint64_t          deadline_ns;
    int               extensions;
};

/* A post that came during the set-up, with its own copy of the counts. */
typedef struct dfccl_queued_post {
    struct dfccl_queued_post *next;
    dfccl_coll_args_t         args;
    size_t                    counts[];
} dfccl_queued_post_t;

static const char *const setup_round_names[] = { "hellos", "addresses", "outcomes", "ended" };

static uint64_t setup_timeout_ns(const dfccl_comm_t *comm)
{
    return (uint64_t)(comm->context->config.timeout_sec * 1e9);
}

static void setup_free(dfccl_comm_setup_t *s)
{
    free(s->hellos);
    free(s->addresses);
    free(s->outcomes);
    free(s);
}

dfccl_status_t dfccl_comm_queue_post(dfccl_comm_t *comm, const dfccl_coll_args_t *args)
{
    dfccl_queued_post_t *q;
    size_t ncounts;

    if (__atomic_load_n(&comm->setup_status, __ATOMIC_ACQUIRE) != DFCCL_INPROGRESS &&
        __atomic_load_n(&comm->queued_left, __ATOMIC_ACQUIRE) == 0)
        return DFCCL_OK;
    ncounts = args->counts != NULL ? (size_t)comm->size : 0;
    q = malloc(sizeof(*q) + ncounts * sizeof(size_t));
    if (q == NULL) return DFCCL_ERR_NO_MEMORY;
    q->next = NULL;
    q->args = *args;
    if (ncounts > 0) {
        memcpy(q->counts, args->counts, ncounts * sizeof(size_t));
        q->args.counts = q->counts;
    }
    /* the set-up's end hands on what was queued under this lock: once it
     * is free again, nothing queued is left and the caller may post */
    pthread_mutex_lock(&comm->setup_lock);
    if (__atomic_load_n(&comm->setup_status, __ATOMIC_ACQUIRE) == DFCCL_INPROGRESS) {
        if (comm->queued_tail != NULL) comm->queued_tail->next = q;
        else comm->queued = q;
        comm->queued_tail = q;
        __atomic_add_fetch(&comm->queued_left, 1, __ATOMIC_RELEASE);
        q = NULL;
    }
    pthread_mutex_unlock(&comm->setup_lock);
    if (q == NULL) return DFCCL_INPROGRESS;
    free(q);
    return DFCCL_OK;
}

/* Hands what was queued during the set-up to the backend, in order, or
 * completes it with the set-up's failure (a post that fails completes with
 * its own); the set-up lock is held. */
static void setup_hand_on_queued(dfccl_comm_t *comm, dfccl_status_t outcome)
{
    dfccl_queued_post_t *q = comm->queued;

    while (q != NULL) {
        dfccl_queued_post_t *next = q->next;
        dfccl_status_t status = outcome;
        if (status == DFCCL_OK) status = comm->ops->post(comm, &q->args);
        if (status != DFCCL_OK) {
            dfccl_call_t call = { 0 };
            dfccl_call_init(&call, &q->args, 0);
            call.comm = comm;
            dfccl_info("comm %#llx: %s queued during the set-up fails: %s",
                       (unsigned long long)comm->key, dfccl_coll_type_name(q->args.type),
                       dfccl_status_string(status));
            dfccl_coll_complete(comm->context, &call, status);
        }
        free(q);
        q = next;
    }
    comm->queued = comm->queued_tail = NULL;
    __atomic_store_n(&comm->queued_left, 0, __ATOMIC_RELEASE);
}

/* Ends the set-up with the outcome every rank agreed on (or this rank's own,
 * when the exchanges failed: the peers then fail by their own deadlines). */
static dfccl_status_t setup_end(dfccl_comm_t *comm, dfccl_status_t outcome)
{
    dfccl_comm_setup_t *s = comm->setup;

    if (s->request != NULL) {
        if (s->boot.allgather_cancel != NULL) s->boot.allgather_cancel(s->boot.arg, s->request);
        s->request = NULL;
    }
    s->round = SETUP_ENDED;
    outcome = comm->ops->finish(comm, outcome);
    if (outcome == DFCCL_OK) {
        dfccl_stats_add_comm();
        dfccl_debug("comm %#llx: rank %d of %d connected (%s backend)",
                    (unsigned long long)comm->key, comm->rank, comm->size, comm->ops->name);
    } else {
        dfccl_info("comm %#llx: creation failed on rank %d: %s", (unsigned long long)comm->key,
                   comm->rank, dfccl_status_string(outcome));
    }
    comm->setup = NULL;
    setup_free(s);
    /* published before the queued posts are handed on (a backend's post
     * wants a usable communicator); posts that come meanwhile wait for the
     * lock, so none overtakes a queued one */
    pthread_mutex_lock(&comm->setup_lock);
    __atomic_store_n(&comm->setup_status, outcome, __ATOMIC_RELEASE);
    setup_hand_on_queued(comm, outcome);
    pthread_mutex_unlock(&comm->setup_lock);
    return outcome;
}

/* Starts one exchange of `bytes` per rank from buf + rank * bytes into buf. */
static dfccl_status_t setup_exchange(dfccl_comm_t *comm, void *buf, size_t bytes)
{
    dfccl_comm_setup_t *s = comm->setup;

    s->deadline_ns = dfccl_now_ns() + setup_timeout_ns(comm);
    s->extensions = 0;
    if (comm->size == 1) return DFCCL_OK;   /* our own block is all there is */
    if (s->boot.allgather_start(s->boot.arg, (char *)buf + (size_t)comm->rank * bytes, buf, bytes,
                                &s->request) != 0) {
        s->request = NULL;
        dfccl_error("comm %#llx: rank %d could not start the set-up's %s exchange",
                    (unsigned long long)comm->key, comm->rank, setup_round_names[s->round]);
        return DFCCL_ERR_BOOTSTRAP;
    }
    return DFCCL_OK;
}

static dfccl_status_t setup_outcomes_start(dfccl_comm_t *comm, dfccl_status_t mine)
{
    dfccl_comm_setup_t *s = comm->setup;

    s->round = SETUP_OUTCOMES;
    s->outcomes[comm->rank] = (int32_t)mine;
    if (setup_exchange(comm, s->outcomes, sizeof(int32_t)) != DFCCL_OK)
        return setup_end(comm, DFCCL_ERR_BOOTSTRAP);
    return DFCCL_INPROGRESS;
}

/* The current exchange is past its deadline. */
static dfccl_status_t setup_late(dfccl_comm_t *comm)
{
    dfccl_comm_setup_t *s = comm->setup;
    double waited = comm->context->config.timeout_sec * (s->extensions + 1);

    if (s->round == SETUP_HELLOS || s->round == SETUP_ADDRESSES) {
        /* tell every peer that we fail, so that those that hear from all
         * agree on failure with us */
        dfccl_error("rank %d of comm %#llx: the set-up's %s exchange did not end within"
                    " %.0f s: some rank never joined it", comm->rank,
                    (unsigned long long)comm->key, setup_round_names[s->round], waited);
        if (s->boot.allgather_cancel != NULL) s->boot.allgather_cancel(s->boot.arg, s->request);
        s->request = NULL;
        return setup_outcomes_start(comm, DFCCL_ERR_TIMEOUT);
    }
    if (s->outcomes[comm->rank] == DFCCL_OK && ++s->extensions < COMM_SETUP_MAX_EXTENSIONS) {
        dfccl_error("rank %d of comm %#llx: still waiting for the set-up outcome of some peers"
                    " after %.0f s", comm->rank, (unsigned long long)comm->key, waited);
        s->deadline_ns = dfccl_now_ns() + setup_timeout_ns(comm);
        return DFCCL_INPROGRESS;
    }
    return setup_end(comm, DFCCL_ERR_TIMEOUT);
}

dfccl_status_t dfccl_comm_create_test(dfccl_comm_t *comm)
{
    dfccl_comm_setup_t *s;
    int done = 1;

    if (comm == NULL) return DFCCL_ERR_INVALID_PARAM;
    s = comm->setup;
    if (s == NULL) return __atomic_load_n(&comm->setup_status, __ATOMIC_ACQUIRE);
    if (s->request != NULL) {
        done = s->boot.allgather_test(s->boot.arg, s->request);
        if (done < 0) {
            s->request = NULL;
            dfccl_error("comm %#llx: rank %d: the set-up's %s exchange failed",
                        (unsigned long long)comm->key, comm->rank, setup_round_names[s->round]);
            return setup_end(comm, DFCCL_ERR_BOOTSTRAP);
        }
        if (done == 0) return dfccl_now_ns() > s->deadline_ns ? setup_late(comm) : DFCCL_INPROGRESS;
        s->request = NULL;
    }
    if (s->round == SETUP_HELLOS) {
        dfccl_status_t connected = comm->ops->connect(comm, s->hellos);
        s->address_bytes = comm->ops->address_bytes != NULL ? comm->ops->address_bytes(comm) : 0;
        if (s->address_bytes == 0) return setup_outcomes_start(comm, connected);
        s->addresses = calloc((size_t)comm->size, s->address_bytes);
        if (s->addresses == NULL) return setup_outcomes_start(comm, DFCCL_ERR_NO_MEMORY);
        s->round = SETUP_ADDRESSES;
        comm->ops->address(comm, connected, s->addresses + (size_t)comm->rank * s->address_bytes);
        if (setup_exchange(comm, s->addresses, s->address_bytes) != DFCCL_OK)
            return setup_end(comm, DFCCL_ERR_BOOTSTRAP);
        return DFCCL_INPROGRESS;
    }
    if (s->round == SETUP_ADDRESSES)
        return setup_outcomes_start(comm, comm->ops->connect_addresses(comm, s->addresses));
    dfccl_status_t worst = DFCCL_OK;
    for (int r = 0; r < comm->size; r++)
        if (s->outcomes[r] != DFCCL_OK) worst = (dfccl_status_t)s->outcomes[r];
    return setup_end(comm, worst);
}

static int comm_params_valid(const dfccl_comm_params_t *p)
{
    if (p->size < 1 || p->rank < 0 || p->rank >= p->size) return 0;
    if ((unsigned)p->backend >= DFCCL_BACKEND_COUNT) return 0;
    return p->size == 1 || (p->bootstrap.allgather_start != NULL &&
                            p->bootstrap.allgather_test != NULL);
}

dfccl_status_t dfccl_comm_create_start(dfccl_context_t *context, const dfccl_comm_params_t *params,
                                       dfccl_comm_t **comm_p)
{
    dfccl_comm_t *comm;
    dfccl_comm_setup_t *s;

    if (context == NULL || params == NULL || comm_p == NULL || !comm_params_valid(params))
        return DFCCL_ERR_INVALID_PARAM;
    comm = calloc(1, sizeof(*comm));
    s = calloc(1, sizeof(*s));
    if (comm == NULL || s == NULL) goto err_memory;
    comm->context = context;
    comm->rank    = params->rank;
    comm->size    = params->size;
    comm->key     = params->key;
    comm->node_label = params->node;
    comm->refs    = 1;
    comm->ops     = context->backends[params->backend];
    comm->setup   = s;
    comm->setup_status = DFCCL_INPROGRESS;
    pthread_mutex_init(&comm->setup_lock, NULL);
    s->boot = params->bootstrap;
    s->round = SETUP_HELLOS;
    s->hello_bytes = comm->ops->hello_bytes(comm);
    s->hellos = calloc((size_t)comm->size, s->hello_bytes);
    s->outcomes = calloc((size_t)comm->size, sizeof(int32_t));
    if (s->hellos == NULL || s->outcomes == NULL) goto err_memory;
    /* a failure here travels in the hello: every rank learns it */
    comm->ops->begin(comm, s->hellos + (size_t)comm->rank * s->hello_bytes);
    if (setup_exchange(comm, s->hellos, s->hello_bytes) != DFCCL_OK)
        setup_end(comm, DFCCL_ERR_BOOTSTRAP);   /* the peers fail by their deadlines */
    *comm_p = comm;
    return DFCCL_OK;

err_memory:
    if (s != NULL) setup_free(s);
    free(comm);
    return DFCCL_ERR_NO_MEMORY;
}

dfccl_status_t dfccl_comm_create(dfccl_context_t *context, const dfccl_comm_params_t *params,
                                 dfccl_comm_t **comm_p)
{
    dfccl_comm_t *comm;
    dfccl_status_t status;
    uint64_t start = dfccl_now_ns();

    if (comm_p == NULL) return DFCCL_ERR_INVALID_PARAM;
    status = dfccl_comm_create_start(context, params, &comm);
    if (status != DFCCL_OK) return status;
    while ((status = dfccl_comm_create_test(comm)) == DFCCL_INPROGRESS)
        dfccl_wait_pause(dfccl_now_ns() - start);
    if (status != DFCCL_OK) {
        dfccl_comm_destroy(comm);
        return status;
    }
    *comm_p = comm;
    return DFCCL_OK;
}

void dfccl_comm_release(dfccl_comm_t *comm)
{
    if (__atomic_sub_fetch(&comm->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    comm->ops->release(comm);
    pthread_mutex_destroy(&comm->setup_lock);
    free(comm);
}

void dfccl_comm_destroy(dfccl_comm_t *comm)
{
    if (comm == NULL) return;
    /* a set-up still under way is abandoned: its exchange cancelled, what
     * the backend took freed */
    if (comm->setup != NULL) setup_end(comm, DFCCL_ERR_SHUTDOWN);
    /* collectives still queued hold their own references and finish first */
    dfccl_comm_release(comm);
}

dfccl_status_t dfccl_comm_usable(const dfccl_comm_t *comm)
{
    if (comm->setup_status == DFCCL_OK) return DFCCL_OK;
    /* still setting up, or its set-up failed */
    return comm->setup_status == DFCCL_INPROGRESS ? DFCCL_ERR_INVALID_PARAM : comm->setup_status;
}

int dfccl_comm_rank(const dfccl_comm_t *comm) { return comm->rank; }
int dfccl_comm_size(const dfccl_comm_t *comm) { return comm->size; }
