/*
 * backend_ops.h - what a backend offers the engine: the table of operations that
 * the generic context (context.c), communicator set-up (comm.c) and posting
 * call, so that neither knows how the host or the GPU backend moves data.
 *
 * Set-up runs in two exchanges over the caller's bootstrap:
 *   begin    allocates this rank's side and fills its hello (what the peers
 *            need to connect to it); a failure travels in the hello, so
 *            every rank learns it
 *   connect  with every rank's hello: maps the peers; returns this rank's
 *            outcome, which the outcomes exchange spreads (or the
 *            addresses exchange, where the backend has one)
 *   finish   the outcome all ranks agreed on: the communicator is usable
 *            when it is DFCCL_OK, else finish frees what begin and connect
 *            took and later posts fail
 */
#ifndef DFCCL_BACKEND_OPS_H
#define DFCCL_BACKEND_OPS_H

#include "include/dfccl.h"

struct dfccl_coll;   /* internal.h */

typedef struct dfccl_backend_ops {
    const char *name;
    /* The memory its collectives work on (DFCCL_BUFFERS_HOST or _DEVICE);
     * calls whose buffers are elsewhere are staged (engine/stage.c). */
    dfccl_buffers_t memory;
    /* Optional: a block of at least `bytes` of that memory for staging,
     * and its return. NULL: host memory from the C library. */
    dfccl_status_t (*stage_alloc)(dfccl_context_t *ctx, size_t bytes, void **buf_p);
    void           (*stage_free)(dfccl_context_t *ctx, void *buf);
    /* Optional: copies between host and device memory, complete on return
     * (the backend that knows device memory offers it). */
    dfccl_status_t (*copy)(dfccl_context_t *ctx, void *dst, const void *src, size_t bytes);
    /* The context's part of the backend (its threads, queues, devices),
     * made with the context (*state, which the engine keeps for it) and
     * ended before the context goes; close waits for the backend's threads
     * and fails what is still pending. A NULL *state (nothing kept) is
     * never closed. */
    dfccl_status_t (*context_open)(dfccl_context_t *ctx, void **state);
    void           (*context_close)(dfccl_context_t *ctx, void *state);
    /* Optional (dfccl_context_poll): completions that need a look from the
     * polling thread (the GPU's without its proxy). */
    void           (*poll)(dfccl_context_t *ctx);
    size_t         (*hello_bytes)(const dfccl_comm_t *comm);
    dfccl_status_t (*begin)(dfccl_comm_t *comm, void *hello);
    dfccl_status_t (*connect)(dfccl_comm_t *comm, const void *hellos);
    /* Optional second exchange, for what connect learned is needed: bytes
     * per rank (0: none; the same on every rank, from what the hellos told
     * all alike), this rank's part (with connect's outcome, which travels
     * in it), and connecting with every rank's. */
    size_t         (*address_bytes)(const dfccl_comm_t *comm);
    void           (*address)(dfccl_comm_t *comm, dfccl_status_t connected, void *out);
    dfccl_status_t (*connect_addresses)(dfccl_comm_t *comm, const void *addresses);
    dfccl_status_t (*finish)(dfccl_comm_t *comm, dfccl_status_t agreed);
    /* The communicator's last reference went: frees the backend's part. */
    void           (*release)(dfccl_comm_t *comm);
    /* Checks and submits one collective; the communicator is set up. */
    dfccl_status_t (*post)(dfccl_comm_t *comm, const dfccl_coll_args_t *args);
    /* Optional (dfccl_coll_run): as post, but may run the collective to
     * its end on the caller's thread (DFCCL_OK; nothing is queued) instead
     * of posting it (DFCCL_INPROGRESS). NULL: every run is a post. */
    dfccl_status_t (*run)(dfccl_comm_t *comm, const dfccl_coll_args_t *args);
    /* Optional (prepared.c): prepare checks a collective's arguments and
     * builds the record every start copies (*tmpl_p, `bytes` long, freed
     * with free()); start submits one run of it, args giving the run's
     * user cookie and priority. A backend without them has each start post
     * the stored arguments. */
    dfccl_status_t (*prepare)(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                              struct dfccl_coll **tmpl_p, size_t *bytes_p);
    dfccl_status_t (*start)(dfccl_comm_t *comm, const struct dfccl_coll *tmpl, size_t bytes,
                            const dfccl_coll_args_t *args);
    /* Optional (dfccl_coll_elsewhere): the ranks agree that a call is
     * carried outside the engine. NULL: nothing to agree (the backend's
     * collectives never wait for one that a peer carried elsewhere). */
    dfccl_status_t (*outside)(dfccl_comm_t *comm, dfccl_coll_type_t type, uint64_t bytes);
} dfccl_backend_ops_t;

/* Each backend defines its table (backends/<name>/); the library gives the
 * engine the list (lib/library.c). */
extern const dfccl_backend_ops_t dfccl_host_backend;
extern const dfccl_backend_ops_t dfccl_gpu_backend;

#endif
