/*
 * coll_dfccl_memory.c - is a buffer GPU memory? Asked of the CUDA driver
 * found at run time, so the component loads and works where there is no
 * driver. Device buffers go to the GPU side (coll_dfccl_colls.c's route).
 * The few bytes of the calls that build communicators are copied here too
 * (coll_dfccl_construction.c): those calls never enter the engine.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* dl_iterate_phdr */
#endif
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include "coll_dfccl.h"

/* From the CUDA driver API (cuda.h), which the component does not need to
 * build. cuPointerGetAttributes (plural) answers "no type" for host memory
 * the driver does not know instead of failing, so tools that report failed
 * driver calls (compute-sanitizer) stay quiet. */
typedef int (*dfccl_cu_pointer_get_attributes_fn)(unsigned int count, int *attributes, void **data,
                                                  unsigned long long ptr);
typedef int (*dfccl_cu_pointer_get_attribute_fn)(void *data, int attribute,
                                                 unsigned long long ptr);
typedef int (*dfccl_cu_ctx_push_fn)(void *context);
typedef int (*dfccl_cu_ctx_pop_fn)(void **context);
typedef int (*dfccl_cu_memcpy_fn)(unsigned long long dst, unsigned long long src, size_t bytes);
typedef int (*dfccl_cu_stream_sync_fn)(void *stream);
#define DFCCL_CU_SUCCESS                       0
#define DFCCL_CU_POINTER_ATTRIBUTE_CONTEXT     1
#define DFCCL_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define DFCCL_CU_MEMORYTYPE_DEVICE             2
#define DFCCL_CU_STREAM_LEGACY                 ((void *)0x1)

static dfccl_cu_pointer_get_attributes_fn cu_pointer_get_attributes;
/* for copies: looked up with the query */
static struct {
    dfccl_cu_pointer_get_attribute_fn pointer_get_attribute;
    dfccl_cu_ctx_push_fn              ctx_push;
    dfccl_cu_ctx_pop_fn               ctx_pop;
    dfccl_cu_memcpy_fn                memcpy;
    dfccl_cu_stream_sync_fn           stream_sync;
} cu_copy;
/* The process's count of shared-object loads when the driver was last
 * looked for and not found (0: never looked, or the count is unknown). */
static unsigned long long driver_missing_at_loads;

/* dl_iterate_phdr callback: the loader's count of loads so far (dlpi_adds,
 * the same in every entry), read from the first entry; 0 when the C library
 * does not say. */
static int count_loads(struct dl_phdr_info *info, size_t size, void *arg)
{
    *(unsigned long long *)arg =
        size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds)
            ? (unsigned long long)info->dlpi_adds : 0;
    return 1;
}

/* The driver's query, once the application loaded the driver; NULL
 * before. */
static dfccl_cu_pointer_get_attributes_fn driver_query(void)
{
    if (cu_pointer_get_attributes == NULL) {
        /* Only a driver the application already loaded can have made device
         * memory (RTLD_NOLOAD: host-only programs never load it through us);
         * it may be loaded after MPI_Init, so look again until found, but
         * only once the process has loaded something since the last look:
         * a look (dlopen) takes tens of microseconds, longer than a small
         * collective. */
        unsigned long long loads = 0;
        dl_iterate_phdr(count_loads, &loads);
        if (loads != 0 && loads == __atomic_load_n(&driver_missing_at_loads, __ATOMIC_RELAXED))
            return NULL;
        void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (driver == NULL) {
            __atomic_store_n(&driver_missing_at_loads, loads, __ATOMIC_RELAXED);
            return NULL;
        }
        cu_copy.pointer_get_attribute =
            (dfccl_cu_pointer_get_attribute_fn)dlsym(driver, "cuPointerGetAttribute");
        cu_copy.ctx_push = (dfccl_cu_ctx_push_fn)dlsym(driver, "cuCtxPushCurrent_v2");
        cu_copy.ctx_pop = (dfccl_cu_ctx_pop_fn)dlsym(driver, "cuCtxPopCurrent_v2");
        cu_copy.memcpy = (dfccl_cu_memcpy_fn)dlsym(driver, "cuMemcpy");
        cu_copy.stream_sync = (dfccl_cu_stream_sync_fn)dlsym(driver, "cuStreamSynchronize");
        cu_pointer_get_attributes =
            (dfccl_cu_pointer_get_attributes_fn)dlsym(driver, "cuPointerGetAttributes");
        if (cu_pointer_get_attributes == NULL) return NULL;
        DFCCL_VERBOSE(1, "CUDA driver found: device buffers are recognised");
    }
    return cu_pointer_get_attributes;
}

static bool memory_is_device(dfccl_cu_pointer_get_attributes_fn query, const void *buf)
{
    int memory_type = 0, attribute = DFCCL_CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
    void *data = &memory_type;

    if (buf == NULL || buf == MPI_IN_PLACE) return false;
    /* host memory the driver does not know: memory type 0, not device */
    return query(1, &attribute, &data, (unsigned long long)(uintptr_t)buf) == DFCCL_CU_SUCCESS &&
           memory_type == DFCCL_CU_MEMORYTYPE_DEVICE;
}

void mca_coll_dfccl_memory_kinds(const void *sbuf, const void *rbuf, bool *send_dev,
                                 bool *recv_dev)
{
    /* one look for the driver per call: the look takes the loader's lock */
    dfccl_cu_pointer_get_attributes_fn query = driver_query();

    *send_dev = query != NULL && memory_is_device(query, sbuf);
    *recv_dev = query != NULL && memory_is_device(query, rbuf);
}

int mca_coll_dfccl_memory_copy(void *dst, const void *src, size_t bytes, bool dst_dev)
{
    void *context = NULL, *popped = NULL;
    unsigned long long device_ptr = (unsigned long long)(uintptr_t)(dst_dev ? dst : src);
    int rc;

    if (driver_query() == NULL || cu_copy.pointer_get_attribute == NULL ||
        cu_copy.ctx_push == NULL || cu_copy.ctx_pop == NULL || cu_copy.memcpy == NULL ||
        cu_copy.stream_sync == NULL)
        return OMPI_ERR_NOT_AVAILABLE;
    /* the calling thread need not have the buffer's context current:
     * push it for the copy. cuMemcpy (unified addressing) takes both
     * directions. Into device memory from pageable memory it returns once
     * the bytes are staged, before they land, on the legacy default stream:
     * a caller reading the result on a stream of its own that does not wait
     * for that one would read what was there before (at 40 ranks a
     * 1-element result read back unwritten), so the copy waits for that
     * stream after it. The daemon kernel runs on a stream that stream does
     * not wait for. */
    if (cu_copy.pointer_get_attribute(&context, DFCCL_CU_POINTER_ATTRIBUTE_CONTEXT, device_ptr) !=
            DFCCL_CU_SUCCESS ||
        cu_copy.ctx_push(context) != DFCCL_CU_SUCCESS)
        return OMPI_ERROR;
    rc = cu_copy.memcpy((unsigned long long)(uintptr_t)dst, (unsigned long long)(uintptr_t)src,
                        bytes);
    if (rc == DFCCL_CU_SUCCESS && dst_dev) rc = cu_copy.stream_sync(DFCCL_CU_STREAM_LEGACY);
    cu_copy.ctx_pop(&popped);
    return rc == DFCCL_CU_SUCCESS ? OMPI_SUCCESS : OMPI_ERROR;
}
