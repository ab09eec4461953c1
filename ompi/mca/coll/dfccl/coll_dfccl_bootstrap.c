/*
 * coll_dfccl_bootstrap.c - the engine's bootstrap over Open MPI's PML: a
 * non-blocking allgather that only moves bytes (the engine runs its set-up
 * protocols over it).
 *
 * Every rank posts a receive from every other rank and sends its block to
 * each, all at once, so that no rank's exchange waits for another's step.
 * The blocks live in memory of our own: after a cancel the PML may still
 * use them (a send cannot be cancelled, a matched receive may not be), so
 * they stay allocated then (a few bytes per rank, on that failure path).
 */
#include <stdlib.h>
#include <string.h>
#include "coll_dfccl.h"
#include "ompi/mca/pml/pml.h"
#include "opal/runtime/opal_progress.h"

typedef struct {
    char            *blocks;   /* size * bytes, rank-ordered */
    void            *recv;     /* the engine's buffer, filled on completion */
    size_t           bytes;
    int              size;
    int              nreqs;    /* receives first, then sends */
    ompi_request_t **reqs;
} dfccl_exchange_t;

static void dfccl_exchange_free(dfccl_exchange_t *x, bool blocks_too)
{
    if (blocks_too) free(x->blocks);
    free(x->reqs);
    free(x);
}

static void dfccl_exchange_cancel_requests(dfccl_exchange_t *x)
{
    for (int i = 0; i < x->nreqs; i++) {
        if (x->reqs[i] == MPI_REQUEST_NULL || x->reqs[i] == NULL) continue;
        ompi_request_cancel(x->reqs[i]);
        ompi_request_free(&x->reqs[i]);
    }
}

static int dfccl_exchange_start(void *arg, const void *send, void *recv, size_t bytes,
                                void **request_p)
{
    mca_coll_dfccl_bootstrap_t *b = arg;
    ompi_communicator_t *comm = b->module->comm;
    int size = ompi_comm_size(comm), me = ompi_comm_rank(comm), n = 0;
    dfccl_exchange_t *x;

    if (bytes > (size_t)INT32_MAX) return -1;
    x = calloc(1, sizeof(*x));
    if (x == NULL) return -1;
    x->blocks = calloc((size_t)size, bytes);
    x->reqs = calloc((size_t)(2 * size), sizeof(ompi_request_t *));
    if (x->blocks == NULL || x->reqs == NULL) {
        dfccl_exchange_free(x, true);
        return -1;
    }
    x->recv = recv;
    x->bytes = bytes;
    x->size = size;
    memcpy(x->blocks + (size_t)me * bytes, send, bytes);
    for (int p = 0; p < size; p++) {
        if (p == me) continue;
        x->reqs[n] = MPI_REQUEST_NULL;
        if (MCA_PML_CALL(irecv(x->blocks + (size_t)p * bytes, (int)bytes, MPI_BYTE, p, b->tag, comm,
                               &x->reqs[n])) != OMPI_SUCCESS)
            goto err_posted;
        x->nreqs = ++n;
    }
    for (int p = 0; p < size; p++) {
        if (p == me) continue;
        x->reqs[n] = MPI_REQUEST_NULL;
        if (MCA_PML_CALL(isend(x->blocks + (size_t)me * bytes, (int)bytes, MPI_BYTE, p, b->tag,
                               MCA_PML_BASE_SEND_STANDARD, comm, &x->reqs[n])) != OMPI_SUCCESS)
            goto err_posted;
        x->nreqs = ++n;
    }
    *request_p = x;
    return 0;

err_posted:
    dfccl_exchange_cancel_requests(x);
    dfccl_exchange_free(x, x->nreqs == 0);
    return -1;
}

static int dfccl_exchange_test(void *arg, void *request)
{
    dfccl_exchange_t *x = request;
    int done = 0;

    (void)arg;
    if (ompi_request_test_all(x->nreqs, x->reqs, &done, MPI_STATUSES_IGNORE) != OMPI_SUCCESS) {
        dfccl_exchange_cancel_requests(x);
        dfccl_exchange_free(x, false);
        return -1;
    }
    if (!done) {
        opal_progress();
        return 0;
    }
    memcpy(x->recv, x->blocks, (size_t)x->size * x->bytes);
    dfccl_exchange_free(x, true);
    return 1;
}

/* The engine gave up on the exchange: name the ranks we never heard from. */
static void dfccl_exchange_cancel(void *arg, void *request)
{
    mca_coll_dfccl_bootstrap_t *b = arg;
    dfccl_exchange_t *x = request;
    ompi_communicator_t *comm = b->module->comm;
    int me = ompi_comm_rank(comm);

    for (int i = 0, p = 0; i < x->nreqs / 2; i++, p++) {
        if (p == me) p++;
        if (x->reqs[i] != MPI_REQUEST_NULL && !REQUEST_COMPLETE(x->reqs[i]))
            DFCCL_ERROR("rank %d of comm %s: rank %d never joined the %s set-up of this"
                        " communicator within %.0f s%s", me, comm->c_name, p, b->what,
                        mca_coll_dfccl_component.timeout, b->hint);
    }
    dfccl_exchange_cancel_requests(x);
    dfccl_exchange_free(x, false);
}

void mca_coll_dfccl_bootstrap_init(mca_coll_dfccl_bootstrap_t *b, mca_coll_dfccl_module_t *m,
                                   int tag, const char *what, const char *hint)
{
    b->module = m;
    b->tag = tag;
    b->what = what;
    b->hint = hint;
}

dfccl_bootstrap_t mca_coll_dfccl_bootstrap_of(mca_coll_dfccl_bootstrap_t *b)
{
    dfccl_bootstrap_t boot = { dfccl_exchange_start, dfccl_exchange_test, dfccl_exchange_cancel, b };
    return boot;
}

int mca_coll_dfccl_bootstrap_allgather(mca_coll_dfccl_bootstrap_t *b, const void *send, void *recv,
                                       size_t bytes)
{
    double deadline = MPI_Wtime() + mca_coll_dfccl_component.timeout;
    void *x = NULL;
    int done;

    if (ompi_comm_size(b->module->comm) == 1) {
        memcpy(recv, send, bytes);
        return 0;
    }
    if (dfccl_exchange_start(b, send, recv, bytes, &x) != 0) return -1;
    while ((done = dfccl_exchange_test(b, x)) == 0) {
        if (MPI_Wtime() > deadline) {
            dfccl_exchange_cancel(b, x);
            return -1;
        }
    }
    return done == 1 ? 0 : -1;
}
