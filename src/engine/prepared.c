/*
 * prepared.c - a collective prepared once and started many times (the
 * engine's side of MPI's persistent collectives and of the native API's
 * prepare/run): its arguments are checked and copied, and where the
 * backend can (backend_ops.h) its plan is built, once; each start only
 * takes the next place in the communicator's order and submits.
 */
#include <stdlib.h>
#include <string.h>
#include "engine/internal.h"
#include "engine/stage.h"
#include "util/log.h"

struct dfccl_prepared {
    dfccl_comm_t     *comm;     /* holds a reference */
    dfccl_coll_args_t args;     /* counts point at our copy */
    size_t           *counts;
    struct dfccl_coll *tmpl;         /* the backend's record, or NULL: each start posts args */
    size_t            tmpl_bytes;
    dfccl_stage_t    *stage;    /* buffers of another memory kind: staged (args on it) */
};

dfccl_status_t dfccl_coll_prepare(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                  dfccl_prepared_t **prepared_p)
{
    dfccl_prepared_t *p;
    dfccl_status_t status = DFCCL_OK;
    size_t total;

    if (comm == NULL || args == NULL || prepared_p == NULL) return DFCCL_ERR_INVALID_PARAM;
    if ((status = dfccl_comm_usable(comm)) != DFCCL_OK) return status;
    status = dfccl_coll_check_args(comm, args, &total);
    if (status != DFCCL_OK) return status;
    bool staged;
    if ((status = dfccl_stage_needed(comm, args, &staged)) != DFCCL_OK) return status;
    if ((p = calloc(1, sizeof(*p))) == NULL) return DFCCL_ERR_NO_MEMORY;
    p->args = *args;
    if (args->type == DFCCL_COLL_REDUCE_SCATTER) {
        p->counts = malloc(sizeof(size_t) * (size_t)comm->size);
        if (p->counts == NULL) {
            free(p);
            return DFCCL_ERR_NO_MEMORY;
        }
        memcpy(p->counts, args->counts, sizeof(size_t) * (size_t)comm->size);
        p->args.counts = p->counts;
    }
    if (staged) status = dfccl_stage_open(comm, &p->args, true, &p->args, &p->stage);
    if (status == DFCCL_OK && comm->ops->prepare != NULL)
        status = comm->ops->prepare(comm, &p->args, &p->tmpl, &p->tmpl_bytes);
    if (status != DFCCL_OK) {
        dfccl_stage_close(p->stage);
        free(p->counts);
        free(p);
        return status;
    }
    __atomic_add_fetch(&comm->refs, 1, __ATOMIC_ACQ_REL);
    p->comm = comm;
    *prepared_p = p;
    return DFCCL_OK;
}

dfccl_status_t dfccl_coll_start(dfccl_prepared_t *p, void *user)
{
    dfccl_coll_args_t args;
    dfccl_status_t status;

    if (p == NULL) return DFCCL_ERR_INVALID_PARAM;
    args = p->args;
    args.user = user;
    if (p->stage != NULL) {   /* the input in; the run completes through the stage */
        if ((status = dfccl_stage_start(p->stage, user)) != DFCCL_OK) return status;
        args.user = p->stage;
    }
    if (p->tmpl == NULL) status = p->comm->ops->post(p->comm, &args);
    else status = p->comm->ops->start(p->comm, p->tmpl, p->tmpl_bytes, &args);
    if (status != DFCCL_OK && p->stage != NULL) dfccl_stage_abandon(p->stage);
    return status;
}

void dfccl_coll_prepared_free(dfccl_prepared_t *p)
{
    if (p == NULL) return;
    free(p->tmpl);
    dfccl_stage_close(p->stage);
    free(p->counts);
    dfccl_comm_release(p->comm);
    free(p);
}
