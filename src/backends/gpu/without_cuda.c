/*
 * none.c - the GPU backend's entry points in a build without CUDA
 * (configure found no nvcc, or --without-cuda): GPU communicators cannot be
 * created, and callers keep device buffers on their own path.
 */
#include <stdio.h>
#include <string.h>
#include "engine/internal.h"

int dfccl_gpu_available(char *why, size_t why_len)
{
    if (why && why_len) snprintf(why, why_len, "dfccl was built without CUDA");
    return 0;
}

int dfccl_gpu_built(void) { return 0; }

static size_t none_hello_bytes(const dfccl_comm_t *comm)
{
    (void)comm;
    return sizeof(int32_t);
}

/* The hello says so, and every rank's set-up fails alike. */
static dfccl_status_t none_begin(dfccl_comm_t *comm, void *hello)
{
    int32_t status = DFCCL_ERR_UNSUPPORTED;
    (void)comm;
    memcpy(hello, &status, sizeof(status));
    return DFCCL_ERR_UNSUPPORTED;
}

static dfccl_status_t none_connect(dfccl_comm_t *comm, const void *hellos)
{
    (void)comm;
    (void)hellos;
    return DFCCL_ERR_UNSUPPORTED;
}

static dfccl_status_t none_finish(dfccl_comm_t *comm, dfccl_status_t agreed)
{
    (void)comm;
    return agreed == DFCCL_OK ? DFCCL_ERR_UNSUPPORTED : agreed;
}

static void none_release(dfccl_comm_t *comm) { (void)comm; }

static dfccl_status_t none_post(dfccl_comm_t *comm, const dfccl_coll_args_t *args)
{
    (void)comm;
    (void)args;
    return DFCCL_ERR_UNSUPPORTED;
}

/* nothing to keep per context: GPU communicators are refused at begin */
static dfccl_status_t none_context_open(dfccl_context_t *ctx, void **state)
{
    (void)ctx;
    *state = NULL;
    return DFCCL_OK;
}

static void none_context_close(dfccl_context_t *ctx, void *state)
{
    (void)ctx;
    (void)state;
}

const dfccl_backend_ops_t dfccl_gpu_backend = {
    .name        = "gpu (not built)",
    .memory      = DFCCL_BUFFERS_DEVICE,   /* staging to or from it is refused: no copy */
    .context_open  = none_context_open,
    .context_close = none_context_close,
    .hello_bytes = none_hello_bytes,
    .begin       = none_begin,
    .connect     = none_connect,
    .finish      = none_finish,
    .release     = none_release,
    .post        = none_post,
};

dfccl_status_t dfccl_coll_post_stream(dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                      void *stream)
{
    (void)comm;
    (void)args;
    (void)stream;
    return DFCCL_ERR_UNSUPPORTED;
}

