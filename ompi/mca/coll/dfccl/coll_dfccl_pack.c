/*
 * coll_dfccl_pack.c - allgather of a non-contiguous layout (a strided
 * vector, say) on the host engine: MPI matches type signatures, so a rank
 * describing its data that way must take the route of its peers that
 * describe it contiguously. Its block is packed (MPI_Pack: the signature's
 * byte stream) into host memory, the engine gathers the packed blocks, and
 * each is unpacked into the caller's buffer before the request completes.
 *
 * (Buffers of another memory kind than the path's are the engine's to
 * stage: dfccl_coll_args_t.buffers.)
 */
#include <stdlib.h>
#include "coll_dfccl.h"

#define DFCCL_PACK_ALIGN 16   /* the engine's vector movers want 16-byte aligned parts */

static size_t dfccl_pack_align(size_t bytes)
{
    return (bytes + DFCCL_PACK_ALIGN - 1) & ~(size_t)(DFCCL_PACK_ALIGN - 1);
}

int mca_coll_dfccl_pack_setup(mca_coll_dfccl_request_t *req, dfccl_coll_args_t *args,
                              const mca_coll_dfccl_pack_t *pack, int rank, int size)
{
    size_t block = args->count, out_at = dfccl_pack_align(block);
    char *mem = malloc(out_at + block * (size_t)size + 1);

    if (mem == NULL) return OMPI_ERR_OUT_OF_RESOURCE;
    req->pack_buf = mem;
    req->pack_user_out = pack->rbuf;
    req->pack_out = mem + out_at;
    req->pack_block_bytes = block;
    req->pack_in = mem;
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
    args->sendbuf = mem;
    args->recvbuf = mem + out_at;
    return OMPI_SUCCESS;
}

/* MPI_Pack of this rank's block: from the send buffer, or in place from
 * its block of the receive buffer. */
static int dfccl_pack_block_in(mca_coll_dfccl_request_t *req)
{
    ptrdiff_t lb, extent;
    int position = 0, rc;

    if (req->pack_send == MPI_IN_PLACE) {
        ompi_datatype_get_extent(req->pack_dtype, &lb, &extent);
        rc = MPI_Pack((char *)req->pack_user_out + (ptrdiff_t)req->pack_rank * req->pack_count *
                          extent,
                      req->pack_count, req->pack_dtype, req->pack_in,
                      (int)req->pack_block_bytes, &position, MPI_COMM_SELF);
    } else {
        rc = MPI_Pack(req->pack_send, req->pack_send_count, req->pack_send_dtype,
                      req->pack_in, (int)req->pack_block_bytes, &position, MPI_COMM_SELF);
    }
    if (rc != MPI_SUCCESS) return rc;
    return (size_t)position == req->pack_block_bytes ? MPI_SUCCESS : MPI_ERR_TRUNCATE;
}

int mca_coll_dfccl_pack_copy_in(mca_coll_dfccl_request_t *req)
{
    if (req->pack_dtype == NULL) return OMPI_SUCCESS;
    return dfccl_pack_block_in(req);
}

int mca_coll_dfccl_pack_in(mca_coll_dfccl_request_t *req, dfccl_coll_args_t *args,
                           const mca_coll_dfccl_pack_t *pack, int rank, int size)
{
    int rc = mca_coll_dfccl_pack_setup(req, args, pack, rank, size);

    if (rc == OMPI_SUCCESS && (rc = mca_coll_dfccl_pack_copy_in(req)) != OMPI_SUCCESS)
        mca_coll_dfccl_pack_drop(req);
    return rc;
}

static int dfccl_unpack_out(mca_coll_dfccl_request_t *req)
{
    ptrdiff_t lb, extent;

    ompi_datatype_get_extent(req->pack_dtype, &lb, &extent);
    for (int i = 0; i < req->pack_blocks; i++) {
        int position = 0;
        int rc = MPI_Unpack((const char *)req->pack_out + (size_t)i * req->pack_block_bytes,
                            (int)req->pack_block_bytes, &position,
                            (char *)req->pack_user_out + (ptrdiff_t)i * req->pack_count * extent,
                            req->pack_count, req->pack_dtype, MPI_COMM_SELF);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
}

int mca_coll_dfccl_pack_out(mca_coll_dfccl_request_t *req)
{
    if (req->pack_dtype == NULL) return MPI_SUCCESS;
    return dfccl_unpack_out(req);
}

void mca_coll_dfccl_pack_drop(mca_coll_dfccl_request_t *req)
{
    if (req->pack_dtype != NULL) {
        OBJ_RELEASE(req->pack_dtype);
        req->pack_dtype = NULL;
    }
    if (req->pack_send_dtype != NULL) {
        OBJ_RELEASE(req->pack_send_dtype);
        req->pack_send_dtype = NULL;
    }
    free(req->pack_buf);
    req->pack_buf = NULL;
}
