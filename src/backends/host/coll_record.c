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

/* Steps a host collective's program may need on comm. */
static uint32_t coll_max_steps(const dfccl_comm_t *comm)
{
    uint32_t cap = dfccl_plan_max_steps(comm->size);
    return dfccl_comm_host(comm) != NULL && dfccl_comm_host(comm)->plan_steps > cap ? dfccl_comm_host(comm)->plan_steps : cap;
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

/* The algorithm for the call and this rank's program of it, its peers
 * mapped onto the communicator's connections. */
static dfccl_status_t coll_plan(dfccl_comm_t *comm, const dfccl_coll_args_t *args, int in_place,
                                dfccl_coll_t *coll)
{
    const dfccl_config_t *cfg = &comm->context->config;
    const dfccl_host_t *h = dfccl_comm_host(comm);
    dfccl_plan_call_t call = { args->type, in_place, args->count, args->counts };
    uint32_t cap = coll_max_steps(comm);
    dfccl_step_peers_t peers_buf[64], *peers = peers_buf;
    const dfccl_plan_file_t *file;
    dfccl_plan_t plan;
    dfccl_status_t status;

    if (cap > 64 && (peers = malloc(sizeof(*peers) * cap)) == NULL) return DFCCL_ERR_NO_MEMORY;
    plan = (dfccl_plan_t){ coll->steps, peers, 0, cap, 0 };
    status = coll_plan_file(comm, args, &call, &plan, &file);
    if (file == NULL) {
        coll->algo = dfccl_plan_choose(&call, &h->topo, dfccl_dtype_size(args->dtype),
                                       (dfccl_algo_t)cfg->algorithm, cfg->rd_max_bytes);
        status = dfccl_plan_build(coll->algo, &call, &h->topo, comm->rank, &plan);
    }
    for (uint32_t i = 0; status == DFCCL_OK && i < plan.nsteps; i++) {
        dfccl_step_t *s = &coll->steps[i];
        if (s->recv) {
            int c = h->recv_conn[peers[i].recv];
            if (c < 0) status = DFCCL_ERR_INVALID_PARAM;
            else s->recv_conn = (uint8_t)c;
            if (c >= 0 && h->links[peers[i].recv] != NULL) coll->crosses = 1;
        }
        for (uint8_t k = 0; k < s->send && status == DFCCL_OK; k++) {
            int c = h->send_conn[peers[i].send[k]];
            if (c < 0) status = DFCCL_ERR_INVALID_PARAM;
            else s->send_conn[k] = (uint8_t)c;
            if (c >= 0 && h->links[peers[i].send[k]] != NULL) coll->crosses = 1;
        }
    }
    if (status != DFCCL_OK)   /* an algorithm that names a peer without a connection: a bug */
        dfccl_error("comm %#llx: rank %d cannot run the %s plan of %s: %s",
                    (unsigned long long)comm->key, comm->rank,
                    file != NULL ? dfccl_plan_file_name(file) : dfccl_algo_name(coll->algo),
                    dfccl_coll_type_name(args->type), dfccl_status_string(status));
    coll->exec.nsteps = plan.nsteps;
    if (status == DFCCL_OK && file != NULL) {
        coll->plan_name = dfccl_plan_file_name(file);
        dfccl_debug("comm %#llx: %s of %zu elements runs plan file %s",
                    (unsigned long long)comm->key, dfccl_coll_type_name(args->type),
                    coll->total_count, dfccl_plan_file_name(file));
    }
    if (peers != peers_buf) free(peers);
    return status;
}

dfccl_status_t dfccl_coll_new(dfccl_comm_t *comm, const dfccl_coll_args_t *args, size_t total,
                              dfccl_coll_t **coll_p)
{
    const dfccl_config_t *cfg = &comm->context->config;
    uint32_t max_steps = coll_max_steps(comm);
    int in_place = args->sendbuf == DFCCL_IN_PLACE;
    dfccl_coll_t *coll;
    dfccl_status_t status;

    coll = calloc(1, sizeof(*coll) + max_steps * sizeof(dfccl_step_t));
    if (coll == NULL) return DFCCL_ERR_NO_MEMORY;
    dfccl_call_init(&coll->call, args, total);
    status = coll_plan(comm, args, in_place, coll);
    if (status != DFCCL_OK) {
        free(coll);
        return status;
    }
    coll->budget_ns   = cfg->budget_ns;
    coll->exec.steps       = coll->steps;
    coll->exec.sendbuf     = in_place ? NULL : (char *)args->sendbuf;
    coll->exec.recvbuf     = (char *)args->recvbuf;
    coll->exec.dtype       = args->dtype;
    coll->exec.op          = args->op;
    coll->exec.esize       = dfccl_dtype_size(args->dtype);
    coll->exec.slice_elems = cfg->slot_bytes / coll->exec.esize;
    coll->exec.chunk_elems = dfccl_plan_chunk_elems(cfg->slot_bytes, cfg->fifo_slots,
                                                    coll->exec.esize);
    coll->exec.nrounds     = dfccl_exec_part_rounds(&coll->exec);
    coll->exec.recv_fifo   = dfccl_comm_host(comm)->recv_fifos;
    coll->exec.send_fifo   = dfccl_comm_host(comm)->send_fifos;
    *coll_p = coll;
    return DFCCL_OK;
}

dfccl_coll_t *dfccl_coll_from_template(const dfccl_coll_t *tmpl, size_t bytes,
                                       const dfccl_coll_args_t *args)
{
    dfccl_coll_t *coll = malloc(bytes);

    if (coll == NULL) return NULL;
    memcpy(coll, tmpl, bytes);
    coll->exec.steps = coll->steps;
    coll->user       = args->user;
    coll->priority   = args->priority;
    return coll;
}
