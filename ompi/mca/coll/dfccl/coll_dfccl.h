/*
 * coll_dfccl.h - Open MPI collective component that hands Allreduce,
 * Allgather and Reduce_scatter(_block), blocking, nonblocking and
 * persistent, to the dfccl engine, and everything it does not carry to the
 * component below it.
 */
#ifndef MCA_COLL_DFCCL_H
#define MCA_COLL_DFCCL_H

#include "ompi_config.h"
#include <stdint.h>
#include <time.h>
#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/coll.h"
/* not ompi/op/op.h: distributions ship it without the Fortran header it includes;
 * predefined ops are recognised by their handles instead */
#include "ompi/request/request.h"
#include "opal/class/opal_free_list.h"
#include "opal/threads/mutex.h"
#include "include/dfccl.h"
#include "ompi/mca/coll/base/coll_tags.h"

BEGIN_C_DECLS

/* Which path host buffers take (device buffers arrive with the CUDA backend). */
enum {
    MCA_COLL_DFCCL_HOST_BUFFERS_STOCK  = 0,  /* stock Open MPI path: host-only programs pay nothing */
    MCA_COLL_DFCCL_HOST_BUFFERS_ENGINE = 1   /* the engine carries host buffers too */
};

/* The storage of an MCA parameter of each kind of the knob tables. */
#define MCA_COLL_DFCCL_TYPE_SIZE     size_t
#define MCA_COLL_DFCCL_TYPE_UNSIGNED unsigned int
#define MCA_COLL_DFCCL_TYPE_U32      unsigned int
#define MCA_COLL_DFCCL_TYPE_U64      uint64_t
#define MCA_COLL_DFCCL_TYPE_DOUBLE   double
#define MCA_COLL_DFCCL_TYPE_INT      int
#define MCA_COLL_DFCCL_TYPE_BOOL     bool
#define MCA_COLL_DFCCL_TYPE_STRING   char *

typedef struct mca_coll_dfccl_component_t {
    mca_coll_base_component_2_0_0_t super;

    /* MCA parameters: the component's own (coll_dfccl_knobs.def), then the
     * engine's (dfccl_knobs.def), each field named as its parameter */
#define MCA_COLL_DFCCL_KNOB(name, kind, ...) MCA_COLL_DFCCL_TYPE_##kind name;
#include "coll_dfccl_knobs.def"
#define DFCCL_KNOB(field, mca, kind, ...) MCA_COLL_DFCCL_TYPE_##kind mca;
#define DFCCL_KNOB_FROM_CALLER(...)
#include "include/dfccl_knobs.def"

    int              output;          /* opal_output stream for verbose messages */
    opal_mutex_t     lock;            /* guards lazy creation of the engine */
    dfccl_context_t *context;         /* NULL until the first carried call */
    bool             context_failed;
    opal_free_list_t requests;
    int32_t          in_flight;       /* collectives posted and not yet completed */
    int32_t          host_in_flight;  /* those on the host side, whose daemon threads may
                                         need the core of a rank that waits */
    opal_mutex_t     setup_lock;      /* guards setups and their pending lists */
    struct mca_coll_dfccl_setup_t *setups;   /* background set-ups in progress */
} mca_coll_dfccl_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_dfccl_component_t mca_coll_dfccl_component;

/* Lazy state of a communicator's engine side; decided identically on all ranks. */
typedef enum {
    MCA_COLL_DFCCL_ENGINE_UNSET = 0,
    MCA_COLL_DFCCL_ENGINE_SETUP,      /* background set-up exchange in progress */
    MCA_COLL_DFCCL_ENGINE_READY,
    MCA_COLL_DFCCL_ENGINE_FAILED      /* every call falls back from now on */
} mca_coll_dfccl_engine_state_t;

typedef struct mca_coll_dfccl_setup_t mca_coll_dfccl_setup_t;
struct mca_coll_dfccl_module_t;

/* Tags of the engine's set-up exchanges, at the far end of the collective
 * tag space (hcoll's range, counted from its other end): no stock
 * collective or libnbc schedule uses them, so an exchange never matches a
 * collective running beside it. */
#define DFCCL_TAG_GPU_SETUP    (MCA_COLL_BASE_TAG_HCOLL_END + 1)
#define DFCCL_TAG_ENGINE_SETUP (MCA_COLL_BASE_TAG_HCOLL_END + 2)
/* the set-up of a persistent request's channel: one tag per request (its
 * init ordinal), so that set-ups running side by side never match each
 * other's messages; 2^20 requests alive at once on one communicator */
#define DFCCL_TAG_CHANNEL(ordinal) \
    (MCA_COLL_BASE_TAG_HCOLL_END + 16 + (int)((ordinal) & 0xfffff))

/* The engine's bootstrap on one communicator (coll_dfccl_bootstrap.c): its
 * tag, and what a missing rank's message says. */
typedef struct {
    struct mca_coll_dfccl_module_t *module;
    int                             tag;
    const char                     *what;   /* "engine", "GPU" */
    const char                     *hint;   /* appended to "rank R never joined ..." */
} mca_coll_dfccl_bootstrap_t;

/* An engine communicator set up in the background over the module's
 * communicator (coll_dfccl_setup.c): the GPU side, or a persistent
 * request's channel. */
typedef struct mca_coll_dfccl_side_t {
    dfccl_comm_t                 *comm;
    mca_coll_dfccl_engine_state_t state;
    mca_coll_dfccl_setup_t       *setup;   /* while SETUP */
    mca_coll_dfccl_bootstrap_t    boot;
    const char                   *label;   /* "GPU side", "persistent channel" */
} mca_coll_dfccl_side_t;

/* The collectives dfccl carries: X(name) for each, as Open MPI's coll
 * module names its function (coll_<name>); the persistent forms apart,
 * since a component below us may not offer them. */
#define MCA_COLL_DFCCL_CARRIED(X)                                                   \
    X(allreduce) X(allgather) X(reduce_scatter) X(reduce_scatter_block)             \
    X(iallreduce) X(iallgather) X(ireduce_scatter) X(ireduce_scatter_block)
#define MCA_COLL_DFCCL_CARRIED_INIT(X)                                              \
    X(allreduce_init) X(allgather_init) X(reduce_scatter_init) X(reduce_scatter_block_init)

typedef struct mca_coll_dfccl_module_t {
    mca_coll_base_module_t super;
    ompi_communicator_t   *comm;
    dfccl_comm_t          *engine_comm;
    mca_coll_dfccl_engine_state_t engine_state;
    mca_coll_dfccl_bootstrap_t engine_boot;
    /* GPU side, for device buffers: set up on the first such call */
    bool                   all_local;   /* every rank on this node */
    bool                   gpu_agreed;  /* host_buffers=engine: every rank offered the GPU
                                           side when the communicator was created, so every
                                           carried call takes it, staged where needed */
    bool                   stage_agreed;  /* ... and every rank can stage device buffers
                                             through host memory (built with CUDA) */
    int                    priority;        /* mca_coll_dfccl_priority_of's answer ... */
    bool                   priority_known;  /* ... once asked */
    mca_coll_dfccl_side_t  gpu;
    uint64_t               persist_inits;   /* MPIX_*_init calls of the carried kinds so far */

    /* the functions of the components below us, for everything we do not carry */
#define MCA_COLL_DFCCL_PREVIOUS(api)                    \
    mca_coll_base_module_##api##_fn_t previous_##api;   \
    mca_coll_base_module_t           *previous_##api##_module;
    MCA_COLL_DFCCL_CARRIED(MCA_COLL_DFCCL_PREVIOUS)
    MCA_COLL_DFCCL_CARRIED_INIT(MCA_COLL_DFCCL_PREVIOUS)
#undef MCA_COLL_DFCCL_PREVIOUS
} mca_coll_dfccl_module_t;

OBJ_CLASS_DECLARATION(mca_coll_dfccl_module_t);

/* Open MPI 4.1 takes every request a nonblocking collective returns for an
 * ompi_coll_base_nbc_request_t: after the call it retains non-predefined
 * datatypes and user ops in the fields that type adds to ompi_request_t
 * (ompi_coll_base_retain_datatypes), so our requests begin with one. Its
 * header (coll/base/coll_base_util.h) includes op.h, which distributions
 * ship without the Fortran header it needs: the layout is restated here,
 * and the class is Open MPI's own. */
typedef struct {
    ompi_request_t super;
    union {
        ompi_request_complete_fn_t req_complete_cb;
        ompi_request_free_fn_t     req_free;
    } cb;
    void *req_complete_cb_data;
    union {
        opal_object_t *objs[2];
    } data;
} mca_coll_dfccl_nbc_request_t;
OMPI_DECLSPEC extern opal_class_t ompi_coll_base_nbc_request_t_class;

/* An MPI request completed by the progress hook from the engine's
 * completion queue. */
typedef struct mca_coll_dfccl_request_t {
    mca_coll_dfccl_nbc_request_t super;
    ompi_communicator_t *comm;        /* retained while the collective runs */
    bool                 on_host;     /* posted to the host side (counted in host_in_flight) */
    int32_t              refs;        /* the engine's and the caller's: the last one
                                         to let go returns the request */
    /* packing (allgather of a non-contiguous layout, coll_dfccl_pack.c):
     * this rank's block is packed at each start into pack_in, the blocks
     * arrive packed at pack_out and are unpacked into the caller's buffer */
    void                *pack_buf;        /* NULL: not packed */
    void                *pack_user_out;   /* the caller's receive buffer */
    const void          *pack_out;
    void                *pack_in;
    size_t               pack_block_bytes;
    ompi_datatype_t     *pack_dtype;      /* retained; NULL: not packed */
    int                  pack_count;      /* elements per rank's block */
    int                  pack_blocks;     /* ranks */
    int                  pack_rank;
    const void          *pack_send;       /* MPI_IN_PLACE or the send buffer */
    int                  pack_send_count;
    ompi_datatype_t     *pack_send_dtype; /* retained; NULL in place */
    /* persistent collectives (coll_dfccl_persist.c): the call prepared at
     * init, which each MPI_Start submits */
    struct mca_coll_dfccl_persist_t *persist;   /* NULL: not persistent */
} mca_coll_dfccl_request_t;

/* What an allgather of a non-contiguous layout needs to be carried as bytes
 * (mca_coll_dfccl_pack_in). */
typedef struct {
    const void      *sbuf;     /* MPI_IN_PLACE or the caller's send buffer */
    int              scount;
    ompi_datatype_t *sdtype;
    void            *rbuf;
    int              rcount;
    ompi_datatype_t *rdtype;
} mca_coll_dfccl_pack_t;

OBJ_CLASS_DECLARATION(mca_coll_dfccl_request_t);

#define DFCCL_VERBOSE(level, ...) \
    opal_output_verbose((level), mca_coll_dfccl_component.output, "coll:dfccl: " __VA_ARGS__)
#define DFCCL_ERROR(...) \
    opal_output(0, "coll:dfccl: " __VA_ARGS__)

/* component */
int  mca_coll_dfccl_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_dfccl_comm_query(ompi_communicator_t *comm, int *priority);
int  mca_coll_dfccl_context_get(dfccl_context_t **context_p);
int  mca_coll_dfccl_progress(void);

/* Monotonic nanoseconds, for the bounds of the component's waits. */
static inline uint64_t mca_coll_dfccl_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* types: MPI (datatype, op) -> engine; false when the engine does not carry it */
bool mca_coll_dfccl_map_reduction(ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  dfccl_dtype_t *engine_dtype, dfccl_op_t *engine_op);
bool mca_coll_dfccl_map_gather_type(ompi_datatype_t *dtype, int count, size_t *bytes,
                                    ptrdiff_t *offset);
void mca_coll_dfccl_types_init(void);

/* memory kinds of a call's buffers: true for CUDA device memory (the driver
 * is asked if loaded); MPI_IN_PLACE and NULL are not device memory */
void mca_coll_dfccl_memory_kinds(const void *sbuf, const void *rbuf, bool *send_dev,
                                 bool *recv_dev);
/* Copies between host memory and the device memory (dst_dev: dst is the
 * device buffer, else src) through the CUDA driver; complete on return. */
int  mca_coll_dfccl_memory_copy(void *dst, const void *src, size_t bytes, bool dst_dev);

/* requests */
mca_coll_dfccl_request_t *mca_coll_dfccl_request_get(ompi_communicator_t *comm);
void mca_coll_dfccl_request_release(mca_coll_dfccl_request_t *req);
/* The side a call without a channel runs on: the communicator's GPU side;
 * NULL: the host engine communicator (engine_comm). */
static inline mca_coll_dfccl_side_t *mca_coll_dfccl_device_side(mca_coll_dfccl_module_t *m,
                                                                bool on_gpu)
{
    return on_gpu ? &m->gpu : NULL;
}

/* Submits args (args->user: req) on the communicator's host engine or GPU
 * side, or on a persistent request's own channel (channel not NULL), a
 * prepared call when prepared is not NULL; counts it in flight.
 * OMPI_SUCCESS, or nothing was posted: an MPI error. The engine's
 * reference on req is the caller's to take. */
int  mca_coll_dfccl_submit(struct mca_coll_dfccl_module_t *m, bool on_gpu,
                           mca_coll_dfccl_side_t *channel, dfccl_coll_args_t *args,
                           dfccl_prepared_t *prepared, mca_coll_dfccl_request_t *req);
/* A blocking call on the host engine (args->user: req): runs it at once on
 * this thread where the engine can (*done; the engine then keeps no
 * reference on req), else posts it as submit does. */
int  mca_coll_dfccl_run_host(struct mca_coll_dfccl_module_t *m, dfccl_coll_args_t *args,
                             mca_coll_dfccl_request_t *req, bool *done);
/* Scheduling priority of a communicator's calls: its info key
 * "dfccl_priority", else coll_dfccl_default_priority; read at the first
 * call that asks (an info lookup per call costs more than a small
 * collective on the host engine) */
int  mca_coll_dfccl_priority_of(struct mca_coll_dfccl_module_t *m);
/* persistent collectives (coll_dfccl_persist.c): prepares a call routed to
 * the engine and returns its inactive persistent request; persist_drop
 * frees what it prepared (request release) */
int  mca_coll_dfccl_persist_init(struct mca_coll_dfccl_module_t *m, bool on_gpu,
                                 const mca_coll_dfccl_pack_t *pack, dfccl_coll_args_t *args,
                                 struct ompi_info_t *info, uint64_t ordinal,
                                 ompi_request_t **request);
void mca_coll_dfccl_persist_drop(mca_coll_dfccl_request_t *req);
/* types: an engine status as an MPI error */
int  mca_coll_dfccl_request_error(dfccl_status_t status);

/* packing (coll_dfccl_pack.c): the memory and the pointers, once
 * (pack_setup); the packing of this rank's block, at each start
 * (pack_copy_in); both at once (pack_in); the unpacking of every block
 * before completion (pack_out); the memory back (pack_drop, at the
 * request's release) */
int  mca_coll_dfccl_pack_setup(mca_coll_dfccl_request_t *req, dfccl_coll_args_t *args,
                               const mca_coll_dfccl_pack_t *pack, int rank, int size);
int  mca_coll_dfccl_pack_copy_in(mca_coll_dfccl_request_t *req);
int  mca_coll_dfccl_pack_out(mca_coll_dfccl_request_t *req);
void mca_coll_dfccl_pack_drop(mca_coll_dfccl_request_t *req);
int  mca_coll_dfccl_pack_in(mca_coll_dfccl_request_t *req, dfccl_coll_args_t *args,
                            const mca_coll_dfccl_pack_t *pack, int rank, int size);

/* bootstrap (coll_dfccl_bootstrap.c): the engine's non-blocking exchange
 * over the PML; a blocking allgather of the same kind for the component's
 * own agreements (0, or -1 after the timeout or a failure) */
void mca_coll_dfccl_bootstrap_init(mca_coll_dfccl_bootstrap_t *b, struct mca_coll_dfccl_module_t *m,
                                   int tag, const char *what, const char *hint);
dfccl_bootstrap_t mca_coll_dfccl_bootstrap_of(mca_coll_dfccl_bootstrap_t *b);
int mca_coll_dfccl_bootstrap_allgather(mca_coll_dfccl_bootstrap_t *b, const void *send, void *recv,
                                       size_t bytes);

/* background set-ups (coll_dfccl_setup.c): side_start begins the set-up
 * of an engine communicator over the side's bootstrap; side_submit queues
 * a call until it ends (posted: the request will carry the outcome), or
 * posts it (a prepared one is started) once it is ready; the progress hook
 * advances every set-up; side_fini abandons a set-up and destroys the
 * communicator (local) */
void mca_coll_dfccl_side_init(mca_coll_dfccl_side_t *side, mca_coll_dfccl_module_t *m, int tag,
                              const char *label, const char *hint);
int  mca_coll_dfccl_side_start(mca_coll_dfccl_side_t *side, dfccl_context_t *ctx,
                               dfccl_backend_t backend, uint64_t key);
int  mca_coll_dfccl_side_submit(mca_coll_dfccl_side_t *side, dfccl_coll_args_t *args,
                                dfccl_prepared_t *prepared, bool *posted);
int  mca_coll_dfccl_setup_progress(void);
void mca_coll_dfccl_side_fini(mca_coll_dfccl_side_t *side);

/* Open MPI's communicator construction (coll_dfccl_construction.c): whether
 * a nonblocking allreduce has its signature, and that call on the stock
 * path, device buffers staged through host memory */
bool mca_coll_dfccl_is_construction_call(int count, ompi_datatype_t *dtype, struct ompi_op_t *op);
int  mca_coll_dfccl_construction_iallreduce(mca_coll_dfccl_module_t *m, const void *sbuf,
                                            void *rbuf, struct ompi_op_t *op,
                                            ompi_communicator_t *comm, ompi_request_t **request);

/* module: engine communicator on first use; OMPI_SUCCESS or fall back */
int  mca_coll_dfccl_module_engine_ready(mca_coll_dfccl_module_t *m);
/* module: whether the GPU side can join the communicator's ranks (on this
 * node, or across nodes through the engine's network transport), alike on
 * every rank */
bool mca_coll_dfccl_gpu_reaches(const mca_coll_dfccl_module_t *m);
/* module: this process's node, for the engine's communicators */
uint64_t mca_coll_dfccl_node_label(void);

/* collectives */
int mca_coll_dfccl_allreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                             struct ompi_op_t *op, ompi_communicator_t *comm,
                             mca_coll_base_module_t *module);
int mca_coll_dfccl_iallreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                              struct ompi_op_t *op, ompi_communicator_t *comm, ompi_request_t **request,
                              mca_coll_base_module_t *module);
int mca_coll_dfccl_allgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                             int rcount, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                             mca_coll_base_module_t *module);
int mca_coll_dfccl_iallgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                              int rcount, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                              ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_dfccl_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                  ompi_datatype_t *dtype, struct ompi_op_t *op, ompi_communicator_t *comm,
                                  mca_coll_base_module_t *module);
int mca_coll_dfccl_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                   ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   ompi_communicator_t *comm, ompi_request_t **request,
                                   mca_coll_base_module_t *module);
int mca_coll_dfccl_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                        ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_dfccl_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                         ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         ompi_communicator_t *comm, ompi_request_t **request,
                                         mca_coll_base_module_t *module);

int mca_coll_dfccl_allreduce_init(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                                  struct ompi_op_t *op, ompi_communicator_t *comm,
                                  struct ompi_info_t *info, ompi_request_t **request,
                                  mca_coll_base_module_t *module);
int mca_coll_dfccl_allgather_init(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf,
                                  int rcount, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                                  struct ompi_info_t *info, ompi_request_t **request,
                                  mca_coll_base_module_t *module);
int mca_coll_dfccl_reduce_scatter_init(const void *sbuf, void *rbuf, const int *rcounts,
                                       ompi_datatype_t *dtype, struct ompi_op_t *op,
                                       ompi_communicator_t *comm, struct ompi_info_t *info,
                                       ompi_request_t **request, mca_coll_base_module_t *module);
int mca_coll_dfccl_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount,
                                             ompi_datatype_t *dtype, struct ompi_op_t *op,
                                             ompi_communicator_t *comm, struct ompi_info_t *info,
                                             ompi_request_t **request,
                                             mca_coll_base_module_t *module);

END_C_DECLS

#endif
