/*
 * none.c - the GPU backend's entry points in a build without CUDA
 * (configure found no nvcc, or --without-cuda): GPU communicators cannot be
 * created, and callers keep device buffers on their own path.
 */
#include <stdio.h>
#include <string.h>
#include "internal.h"

int dfccl_gpu_available(char *why, size_t why_len)
{
    if (why && why_len) snprintf(why, why_len, "dfccl was built without CUDA");
    return 0;
}

size_t dfccl_gpu_hello_bytes(void) { return sizeof(int32_t); }
int dfccl_gpu_max_ranks(void) { return 0; }

dfccl_status_t dfccl_gpu_comm_begin(dfccl_context_t *context, const dfccl_comm_params_t *params,
                                    dfccl_comm_t **comm_p, void *hello)
{
    int32_t status = DFCCL_ERR_UNSUPPORTED;
    (void)context;
    (void)params;
    memcpy(hello, &status, sizeof(status));
    *comm_p = NULL;
    return DFCCL_ERR_UNSUPPORTED;
}

dfccl_status_t dfccl_gpu_comm_connect(dfccl_comm_t *comm, const void *hellos)
{
    (void)comm;
    (void)hellos;
    return DFCCL_ERR_UNSUPPORTED;
}

dfccl_status_t dfccl_gpu_comm_finish(dfccl_comm_t *comm, dfccl_status_t agreed)
{
    (void)comm;
    (void)agreed;
    return DFCCL_ERR_UNSUPPORTED;
}

dfccl_status_t dfccl_gpu_comm_create(dfccl_context_t *context, const dfccl_comm_params_t *params,
                                     dfccl_comm_t **comm_p)
{
    (void)context;
    (void)params;
    *comm_p = NULL;
    return DFCCL_ERR_UNSUPPORTED;
}

dfccl_status_t dfccl_gpu_submit(dfccl_coll_t *coll, const dfccl_coll_args_t *args)
{
    (void)coll;
    (void)args;
    return DFCCL_ERR_UNSUPPORTED;
}

void dfccl_gpu_comm_release(dfccl_comm_t *comm) { (void)comm; }
void dfccl_gpu_destroy(dfccl_context_t *context) { (void)context; }
void dfccl_gpu_poll(dfccl_context_t *context) { (void)context; }

dfccl_status_t dfccl_gpu_stage_alloc(dfccl_context_t *context, size_t bytes, void **buf_p)
{
    (void)context;
    (void)bytes;
    *buf_p = NULL;
    return DFCCL_ERR_UNSUPPORTED;
}

void dfccl_gpu_stage_free(dfccl_context_t *context, void *buf)
{
    (void)context;
    (void)buf;
}

dfccl_status_t dfccl_gpu_copy(dfccl_context_t *context, void *dst, const void *src, size_t bytes)
{
    (void)context;
    (void)dst;
    (void)src;
    return bytes == 0 ? DFCCL_OK : DFCCL_ERR_UNSUPPORTED;
}
