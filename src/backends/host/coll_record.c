/*
 * coll_record.c - the host backend's record of a collective: this rank's
 * program for the host executor (a plan file that serves the call, else a
 * built-in algorithm), its peers mapped onto the communicator's
 * connections, and copies of prepared records.
 */
#include <stdlib.h>
#include <string.h>
#include "backends/host/host.h"
#include "engine/plan_file.h"
#include "util/log.h"

/* What a host collective's program may need on comm: steps, further
 * sends, dependencies. */
static void coll_caps(const dfccl_comm_t *comm, uint32_t *steps, uint32_t *more, uint32_t *deps)
{
    const dfccl_host_t *h = dfccl_comm_host(comm);
    uint32_t cap = dfccl_plan_max_steps(comm->size);

    *steps = h != NULL && h->plan_steps > cap ? h->plan_steps : cap;
    *more = h != NULL ? h->plan_more : 0;
    *deps = h != NULL ? h->plan_deps : 0;
}

/* The call's whole buffer in bytes, as plan files state their sizes. */
static uint64_t call_bytes(const dfccl_comm_t *comm, const dfccl_coll_args_t *args)
{
    uint64_t n = args->count;

    if (args->type == DFCCL_COLL_ALLGATHER) n *= (uint64_t)comm->size;
    if (args->type == DFCCL_COLL_REDUCE_SCATTER)
        for (int r = n = 0; r < comm->size; r++) n += args->counts[r];
    return n * dfccl_dtype_size(args->dtype);
}

/* The first plan file of the communicator that serves the call builds this
 * rank's program: the same one on every rank, since all ranks took the
 * same plans and the call is the same everywhere. *used is NULL when none
 * serves it (then the built-in algorithms do). */
static dfccl_status_t coll_plan_file(const dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                     const dfccl_plan_call_t *call, dfccl_plan_t *plan,
                                     const dfccl_plan_file_t **used)
{
    const dfccl_host_t *h = dfccl_comm_host(comm);
    uint64_t bytes = h->nplans > 0 ? call_bytes(comm, args) : 0;

    *used = NULL;
    for (int i = 0; i < h->nplans; i++) {
        dfccl_status_t status;
        if (dfccl_plan_file_type(h->plans[i]) != args->type ||
            !dfccl_plan_file_serves_bytes(h->plans[i], bytes))
            continue;
        status = dfccl_plan_file_build(h->plans[i], call, comm->rank, plan);
        if (status == DFCCL_ERR_UNSUPPORTED) continue;   /* e.g. in place, unequal counts */
        *used = h->plans[i];   /* also when it failed: the error names it */
        return status;
    }
    return DFCCL_OK;
}

/* Where a record's plan and executor state lie after its steps, in bytes
 * from its start, each on 8 bytes: the further send connections, the
 * dependencies, then the graph's arrays. */
static size_t coll_more_off(uint32_t nsteps)
{
    return sizeof(dfccl_coll_t) + nsteps * sizeof(dfccl_step_t);
}

static size_t coll_deps_off(uint32_t nsteps, uint32_t nmore)
{
    return coll_more_off(nsteps) + ((nmore + 7) & ~(size_t)7);
}

static size_t coll_graph_off(uint32_t nsteps, uint32_t nmore, uint32_t ndeps)
{
    return coll_deps_off(nsteps, nmore) + sizeof(uint32_t) * ((ndeps + 1) & ~(size_t)1);
}

static uint8_t *coll_more_conns(dfccl_coll_t *coll)
{
    return (uint8_t *)coll + coll_more_off(coll->exec.nsteps);
}

static uint32_t *coll_deps(dfccl_coll_t *coll)
{
    return (uint32_t *)((char *)coll + coll_deps_off(coll->exec.nsteps, coll->nmore));
}

static void *coll_graph_mem(dfccl_coll_t *coll)
{
    return (char *)coll + coll_graph_off(coll->exec.nsteps, coll->nmore, coll->ndeps);
}

/* Points the executor at the record's own plan and state. */
static void coll_point(dfccl_coll_t *coll)
{
    coll->exec.steps = coll->steps;
    if (coll->oneshot) return;   /* no plan */
    coll->exec.more_conns = coll_more_conns(coll);
    coll->exec.deps = coll_deps(coll);
    coll->exec.graph = &coll->graph;
    dfccl_exec_graph_rebase(&coll->graph, coll_graph_mem(coll), coll->exec.nsteps);
}

/* The algorithm for the call and this rank's program of it (in plan). */
static dfccl_status_t coll_plan(dfccl_comm_t *comm, const dfccl_coll_args_t *args, int in_place,
                                dfccl_plan_t *plan, dfccl_algo_t *algo,
                                const dfccl_plan_file_t **file)
{
    const dfccl_config_t *cfg = &comm->context->config;
    const dfccl_host_t *h = dfccl_comm_host(comm);
    dfccl_plan_call_t call = { args->type, in_place, args->count, args->counts };
    dfccl_status_t status;

    status = coll_plan_file(comm, args, &call, plan, file);
    if (*file == NULL) {
        *algo = dfccl_plan_choose(&call, &h->topo, dfccl_dtype_size(args->dtype),
                                  (dfccl_algo_t)cfg->algorithm, cfg->rd_max_bytes);
        status = dfccl_plan_build(*algo, &call, &h->topo, comm->rank, plan);
    }
    return status;
}

/* The plan's peers mapped onto the communicator's connections. */
static dfccl_status_t coll_connect(dfccl_comm_t *comm, const dfccl_plan_t *plan, dfccl_coll_t *coll)
{
    const dfccl_host_t *h = dfccl_comm_host(comm);
    uint8_t *more = coll_more_conns(coll);

    for (uint32_t i = 0; i < plan->nsteps; i++) {
        dfccl_step_t *s = &coll->steps[i];
        const dfccl_step_peers_t *p = &plan->peers[i];
        if (s->recv) {
            int c = h->recv_conn[p->recv];
            if (c < 0) return DFCCL_ERR_INVALID_PARAM;
            s->recv_conn = (uint8_t)c;
            if (h->links[p->recv] != NULL) coll->crosses = 1;
        }
        for (uint32_t k = 0; k < s->send; k++) {
            int peer = k == 0 ? p->send : plan->more_peers[s->more_at + k - 1];
            int c = h->send_conn[peer];
            if (c < 0) return DFCCL_ERR_INVALID_PARAM;
            if (k == 0) s->send_conn = (uint8_t)c;
            else more[s->more_at + k - 1] = (uint8_t)c;
            if (h->links[peer] != NULL) coll->crosses = 1;
        }
    }
    return DFCCL_OK;
}

/* The record for a built plan: steps, connections, dependencies, and the
 * executor's state ready to run. */
static dfccl_status_t coll_record(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                  const dfccl_plan_t *plan, size_t total, dfccl_coll_t **coll_p)
{
    const dfccl_config_t *cfg = &comm->context->config;
    const dfccl_host_t *h = dfccl_comm_host(comm);
    int in_place = args->sendbuf == DFCCL_IN_PLACE;
    size_t bytes = coll_graph_off(plan->nsteps, plan->nmore, plan->ndeps) +
                   dfccl_exec_graph_bytes(plan->steps, plan->nsteps, (uint32_t)h->nrecv,
                                          (uint32_t)h->nsend);
    dfccl_coll_t *coll = calloc(1, bytes);
    dfccl_exec_t *x;

    if (coll == NULL) return DFCCL_ERR_NO_MEMORY;
    coll->bytes = bytes;
    coll->nmore = plan->nmore;
    coll->ndeps = plan->ndeps;
    coll->exec.nsteps = plan->nsteps;
    memcpy(coll->steps, plan->steps, plan->nsteps * sizeof(dfccl_step_t));
    memcpy(coll_deps(coll), plan->deps, plan->ndeps * sizeof(uint32_t));
    if (coll_connect(comm, plan, coll) != DFCCL_OK) {
        free(coll);
        return DFCCL_ERR_INVALID_PARAM;
    }
    dfccl_call_init(&coll->call, args, total);
    coll->budget_ns  = cfg->budget_ns;
    x = &coll->exec;
    coll_point(coll);
    x->sendbuf     = in_place ? NULL : (char *)args->sendbuf;
    x->recvbuf     = (char *)args->recvbuf;
    x->dtype       = args->dtype;
    x->op          = args->op;
    x->esize       = dfccl_dtype_size(args->dtype);
    x->slice_elems = cfg->slot_bytes / x->esize;
    x->chunk_elems = dfccl_plan_chunk_elems(cfg->slot_bytes, cfg->fifo_slots, x->esize);
    x->recv_fifo   = h->recv_fifos;
    x->send_fifo   = h->send_fifos;
    dfccl_exec_graph_init(x, &coll->graph, coll_graph_mem(coll), (uint32_t)h->nrecv,
                          (uint32_t)h->nsend);
    *coll_p = coll;
    return DFCCL_OK;
}

dfccl_status_t dfccl_coll_new(dfccl_comm_t *comm, const dfccl_coll_args_t *args, size_t total,
                              dfccl_coll_t **coll_p)
{
    uint32_t max_steps, max_more, max_deps;
    int in_place = args->sendbuf == DFCCL_IN_PLACE;
    const dfccl_plan_file_t *file = NULL;
    dfccl_algo_t algo = DFCCL_ALGO_RING;
    dfccl_plan_t plan = { 0 };
    dfccl_status_t status = DFCCL_ERR_NO_MEMORY;
    void *mem;

    coll_caps(comm, &max_steps, &max_more, &max_deps);
    mem = malloc((sizeof(dfccl_step_t) + sizeof(dfccl_step_peers_t)) * max_steps +
                 sizeof(int32_t) * max_more + sizeof(uint32_t) * max_deps + 8);
    if (mem != NULL) {
        plan.steps = mem;
        plan.peers = (dfccl_step_peers_t *)(plan.steps + max_steps);
        plan.more_peers = (int32_t *)(plan.peers + max_steps);
        plan.deps = (uint32_t *)(plan.more_peers + max_more);
        plan.cap = max_steps;
        plan.more_cap = max_more;
        plan.deps_cap = max_deps;
        status = coll_plan(comm, args, in_place, &plan, &algo, &file);
        if (status == DFCCL_OK) status = coll_record(comm, args, &plan, total, coll_p);
    }
    free(mem);
    if (status == DFCCL_OK) {
        (*coll_p)->algo = algo;
        if (file != NULL) {
            (*coll_p)->plan_name = dfccl_plan_file_name(file);
            dfccl_debug("comm %#llx: %s of %zu elements runs plan file %s",
                        (unsigned long long)comm->key, dfccl_coll_type_name(args->type),
                        (*coll_p)->total_count, dfccl_plan_file_name(file));
        }
    } else if (status != DFCCL_ERR_NO_MEMORY) {
        /* an algorithm that names a peer without a connection: a bug */
        dfccl_error("comm %#llx: rank %d cannot run the %s plan of %s: %s",
                    (unsigned long long)comm->key, comm->rank,
                    file != NULL ? dfccl_plan_file_name(file) : dfccl_algo_name(algo),
                    dfccl_coll_type_name(args->type), dfccl_status_string(status));
    }
    return status;
}

dfccl_coll_t *dfccl_coll_from_template(const dfccl_coll_t *tmpl, size_t bytes,
                                       const dfccl_coll_args_t *args)
{
    dfccl_coll_t *coll = malloc(bytes);

    if (coll == NULL) return NULL;
    memcpy(coll, tmpl, bytes);
    coll_point(coll);
    coll->user       = args->user;
    coll->priority   = args->priority;
    return coll;
}
