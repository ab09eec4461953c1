/*
 * library.c - libdfccl as its layers joined: the engine with every backend
 * this build has. The engine knows backends only through their tables
 * (engine/backend_ops.h); this is the one place that names them, so a new
 * backend adds its table here and touches no generic file.
 */
#include "engine/internal.h"

static const dfccl_backend_ops_t *const library_backends[DFCCL_BACKEND_COUNT] = {
    [DFCCL_BACKEND_HOST] = &dfccl_host_backend,
    [DFCCL_BACKEND_GPU]  = &dfccl_gpu_backend,
};

dfccl_status_t dfccl_context_create(const dfccl_config_t *config, dfccl_context_t **context_p)
{
    return dfccl_context_open(config, library_backends, context_p);
}
