/*
 * coll_dfccl_stage.c - a call whose buffers are not of the memory kind its
 * path carries: under coll_dfccl_host_buffers=engine every rank of a
 * communicator takes the same path whatever its own buffers are (the GPU
 * side when every rank offered it at creation, else the host engine), so a
 * rank passing host buffers where its peers pass device buffers (or the
 * reverse) copies its input into memory of the path's kind, and the result
 * back out before the request completes.
 *
 * The staged call keeps the caller's in-place setting (MPI has all ranks
 * agree on it, and the path's algorithm may depend on it).
 */
#include <stdlib.h>
#include "coll_dfccl.h"

#define DFCCL_STAGE_ALIGN 16   /* the engine's vector movers want 16-byte aligned parts */

static size_t dfccl_stage_align(size_t bytes)
{
    return (bytes + DFCCL_STAGE_ALIGN - 1) & ~(size_t)(DFCCL_STAGE_ALIGN - 1);
}

int mca_coll_dfccl_stage_setup(mca_coll_dfccl_request_t *req, dfccl_coll_args_t *args, int rank,
                               int size, bool on_device)
{
    dfccl_context_t *ctx = mca_coll_dfccl_component.context;
    size_t esize = dfccl_dtype_size(args->dtype), in_bytes, out_bytes, block, out_at = 0;
    size_t in_at = 0, result_bytes, bytes;
    bool in_place = args->sendbuf == DFCCL_IN_PLACE;
    const char *in = in_place ? args->recvbuf : args->sendbuf;
    dfccl_status_t status;
    char *stage = NULL;

    /* out_bytes: the receive buffer the path works on; in_bytes: the input
     * to copy in (our block only for allgather); result: what goes back */
    switch (args->type) {
    case DFCCL_COLL_ALLREDUCE:
        in_bytes = out_bytes = result_bytes = args->count * esize;
        break;
    case DFCCL_COLL_ALLGATHER:
        block = args->count * esize;
        in_bytes = block;
        out_bytes = result_bytes = (size_t)size * block;
        if (in_place) {   /* our block of the receive buffer, to the same place */
            in_at = (size_t)rank * block;
            in += in_at;
        }
        break;
    default:   /* reduce-scatter: the whole input in, our block out */
        in_bytes = 0;
        for (int r = 0; r < size; r++) in_bytes += args->counts[r] * esize;
        result_bytes = args->counts[rank] * esize;
        out_bytes = in_place ? in_bytes : result_bytes;
        break;
    }
    /* in place stays in place: the path's algorithm may depend on it, and it
     * must be the one the other ranks chose */
    if (!in_place) out_at = dfccl_stage_align(in_bytes);
    bytes = out_at + out_bytes;
    if (ctx == NULL) return OMPI_ERR_NOT_AVAILABLE;
    if (on_device) {
        status = dfccl_gpu_stage_alloc(ctx, bytes, (void **)&stage);
    } else {
        stage = malloc(bytes > 0 ? bytes : 1);
        status = stage != NULL ? DFCCL_OK : DFCCL_ERR_NO_MEMORY;
    }
    if (status != DFCCL_OK) {
        DFCCL_ERROR("%s on comm %s: cannot stage %zu bytes of %s buffers in %s memory: %s",
                    dfccl_coll_type_name(args->type), req->comm->c_name, bytes,
                    on_device ? "host" : "device", on_device ? "device" : "host",
                    dfccl_status_string(status));
        return mca_coll_dfccl_request_error(status);
    }
    req->stage_buf = stage;
    req->stage_on_device = on_device;
    req->stage_in_src = in;
    req->stage_in_dst = stage + in_at;
    req->stage_in_bytes = in_bytes;
    req->stage_user_out = args->recvbuf;
    req->stage_out = stage + out_at;   /* in-place reduce-scatter: our block comes first */
    req->stage_out_bytes = result_bytes;
    if (!in_place) args->sendbuf = stage;
    args->recvbuf = stage + out_at;
    return OMPI_SUCCESS;
}

int mca_coll_dfccl_stage_in(mca_coll_dfccl_request_t *req, dfccl_coll_args_t *args, int rank,
                            int size, bool on_device)
{
    int rc = mca_coll_dfccl_stage_setup(req, args, rank, size, on_device);

    if (rc == OMPI_SUCCESS && (rc = mca_coll_dfccl_stage_copy_in(req)) != OMPI_SUCCESS)
        mca_coll_dfccl_stage_drop(req);
    return rc;
}

/*
 * Allgather of a non-contiguous layout (a strided vector, say) on the host
 * engine: MPI matches type signatures, so a rank describing its data that
 * way must take the route of its peers that describe it contiguously. Its
 * block is packed (MPI_Pack: the signature's byte stream) into host
 * memory, the engine gathers the packed blocks, and each is unpacked into
 * the caller's buffer before the request completes.
 */
int mca_coll_dfccl_pack_setup(mca_coll_dfccl_request_t *req, dfccl_coll_args_t *args,
                              const mca_coll_dfccl_pack_t *pack, int rank, int size)
{
    size_t block = args->count, out_at = dfccl_stage_align(block);
    char *stage = malloc(out_at + block * (size_t)size + 1);

    if (stage == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
    req->stage_buf = stage;
    req->stage_on_device = false;
    req->stage_user_out = pack->rbuf;
    req->stage_out = stage + out_at;
    req->stage_out_bytes = block;
    req->stage_in_dst = stage;
    req->stage_in_bytes = block;
    OBJ_RETAIN(pack->rdtype);
    req->pack_dtype = pack->rdtype;
    req->pack_count = pack->rcount;
    req->pack_blocks = size;
    req->pack_rank = rank;
    req->pack_send = pack->sbuf;
    req->pack_send_count = pack->scount;
    req->pack_send_dtype = NULL;
    if (pack->sbuf != MPI_IN_PLACE) {
        OBJ_RETAIN(pack->sdtype);
        req->pack_send_dtype = pack->sdtype;
    }
    args->sendbuf = stage;
    args->recvbuf = stage + out_at;
    return OMPI_SUCCESS;
}

/* MPI_Pack of this rank's block: from the send buffer, or in place from
 * its block of the receive buffer. */
static int dfccl_pack_copy_in(mca_coll_dfccl_request_t *req)
{
    ptrdiff_t lb, extent;
    int position = 0, rc;

    if (req->pack_send == MPI_IN_PLACE) {
        ompi_datatype_get_extent(req->pack_dtype, &lb, &extent);
        rc = MPI_Pack((char *)req->stage_user_out + (ptrdiff_t)req->pack_rank * req->pack_count *
                          extent,
                      req->pack_count, req->pack_dtype, req->stage_in_dst,
                      (int)req->stage_in_bytes, &position, MPI_COMM_SELF);
    } else {
        rc = MPI_Pack(req->pack_send, req->pack_send_count, req->pack_send_dtype,
                      req->stage_in_dst, (int)req->stage_in_bytes, &position, MPI_COMM_SELF);
    }
    if (rc != MPI_SUCCESS) return rc;
    return (size_t)position == req->stage_in_bytes ? MPI_SUCCESS : MPI_ERR_TRUNCATE;
}

int mca_coll_dfccl_stage_copy_in(mca_coll_dfccl_request_t *req)
{
    if (req->stage_buf == NULL) return OMPI_SUCCESS;
    if (req->pack_dtype != NULL) return dfccl_pack_copy_in(req);
    return mca_coll_dfccl_request_error(dfccl_gpu_copy(mca_coll_dfccl_component.context,
                                                       req->stage_in_dst, req->stage_in_src,
                                                       req->stage_in_bytes));
}

int mca_coll_dfccl_pack_in(mca_coll_dfccl_request_t *req, dfccl_coll_args_t *args,
                           const mca_coll_dfccl_pack_t *pack, int rank, int size)
{
    int rc = mca_coll_dfccl_pack_setup(req, args, pack, rank, size);

    if (rc == OMPI_SUCCESS && (rc = mca_coll_dfccl_stage_copy_in(req)) != OMPI_SUCCESS)
        mca_coll_dfccl_stage_drop(req);
    return rc;
}

static int dfccl_unpack_out(mca_coll_dfccl_request_t *req)
{
    ptrdiff_t lb, extent;

    ompi_datatype_get_extent(req->pack_dtype, &lb, &extent);
    for (int i = 0; i < req->pack_blocks; i++) {
        int position = 0;
        int rc = MPI_Unpack((const char *)req->stage_out + (size_t)i * req->stage_out_bytes,
                            (int)req->stage_out_bytes, &position,
                            (char *)req->stage_user_out + (ptrdiff_t)i * req->pack_count * extent,
                            req->pack_count, req->pack_dtype, MPI_COMM_SELF);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
}

int mca_coll_dfccl_stage_out(mca_coll_dfccl_request_t *req)
{
    if (req->stage_buf == NULL) return MPI_SUCCESS;
    if (req->pack_dtype != NULL) return dfccl_unpack_out(req);
    return dfccl_gpu_copy(mca_coll_dfccl_component.context, req->stage_user_out, req->stage_out,
                          req->stage_out_bytes) == DFCCL_OK ? MPI_SUCCESS : MPI_ERR_OTHER;
}

void mca_coll_dfccl_stage_drop(mca_coll_dfccl_request_t *req)
{
    if (req->pack_dtype != NULL) {
        OBJ_RELEASE(req->pack_dtype);
        req->pack_dtype = NULL;
    }
    if (req->pack_send_dtype != NULL) {
        OBJ_RELEASE(req->pack_send_dtype);
        req->pack_send_dtype = NULL;
    }
    if (req->stage_buf == NULL) return;
    if (req->stage_on_device)
        dfccl_gpu_stage_free(mca_coll_dfccl_component.context, req->stage_buf);
    else
        free(req->stage_buf);
    req->stage_buf = NULL;
}
