/* perf_device.c - CUDA runtime calls of dfccl_perf, or stubs in a build without CUDA. */
#include "tools/perf/perf_device.h"

#include <stdio.h>
#include <stdlib.h>

static char last_error[256] = "no CUDA error";

const char *perf_device_error(void) { return last_error; }

#ifdef DFCCL_PERF_HAVE_CUDA
#include <cuda_runtime_api.h>

/* Records a failed call as "cudaMalloc: out of memory"; returns -1 for the caller to pass on. */
static int failed(const char *what, cudaError_t status)
{
    snprintf(last_error, sizeof last_error, "%s: %s", what, cudaGetErrorString(status));
    return -1;
}

bool perf_device_built(void) { return true; }

int perf_device_select(int local_rank, int *device, char *error, size_t len)
{
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess || count == 0) {
        snprintf(error, len, "no usable CUDA device (cudaGetDeviceCount: %s)",
                 status != cudaSuccess ? cudaGetErrorString(status) : "0 devices");
        return -1;
    }
    *device = local_rank % count;
    status = cudaSetDevice(*device);
    if (status == cudaSuccess)
        status = cudaFree(NULL);  /* creates the context now, not inside the first timed call */
    if (status != cudaSuccess) {
        snprintf(error, len, "cannot use CUDA device %d of %d: %s", *device, count,
                 cudaGetErrorString(status));
        return -1;
    }
    return 0;
}

void perf_device_describe(char *out, size_t len)
{
    int device = 0;
    struct cudaDeviceProp prop;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
        snprintf(out, len, "unknown device");
        return;
    }
    snprintf(out, len, "%s (sm_%d%d, %zu GiB)", prop.name, prop.major, prop.minor,
             prop.totalGlobalMem >> 30);
}

/*
 * Whole 2 MiB pages, as a caching allocator (PyTorch's, CuPy's) hands out
 * large blocks: with allocations one element longer than 256 MiB, a bare
 * kernel's allreduce over 8 ranks' buffers took 1936 us instead of 1090,
 * and dfccl's likewise (2290 against 1195 us on an H200). The sweep's slack
 * element would otherwise make every large row measure that effect.
 */
#define PERF_DEVICE_GRANULE ((size_t)2 << 20)

void *perf_device_alloc(size_t bytes)
{
    void *buf = NULL;
    size_t whole = (bytes + PERF_DEVICE_GRANULE - 1) / PERF_DEVICE_GRANULE * PERF_DEVICE_GRANULE;
    cudaError_t status = cudaMalloc(&buf, whole >= bytes ? whole : bytes);
    if (status != cudaSuccess) {
        failed("cudaMalloc", status);
        return NULL;
    }
    return buf;
}

void perf_device_free(void *buf)
{
    if (buf)
        cudaFree(buf);
}

void *perf_device_alloc_pinned(size_t bytes)
{
    void *buf = NULL;
    cudaError_t status = cudaMallocHost(&buf, bytes);
    if (status != cudaSuccess) {
        failed("cudaMallocHost", status);
        return NULL;
    }
    return buf;
}

void perf_device_free_pinned(void *buf)
{
    if (buf)
        cudaFreeHost(buf);
}

int perf_device_upload(void *device_dst, const void *host_src, size_t bytes)
{
    cudaError_t status = cudaMemcpy(device_dst, host_src, bytes, cudaMemcpyHostToDevice);
    return status == cudaSuccess ? 0 : failed("cudaMemcpy to the device", status);
}

int perf_device_download(void *host_dst, const void *device_src, size_t bytes)
{
    cudaError_t status = cudaMemcpy(host_dst, device_src, bytes, cudaMemcpyDeviceToHost);
    return status == cudaSuccess ? 0 : failed("cudaMemcpy from the device", status);
}

int perf_device_poison(void *device_buf, size_t bytes)
{
    cudaError_t status = cudaMemset(device_buf, 0xff, bytes);
    if (status == cudaSuccess)
        status = cudaDeviceSynchronize();
    return status == cudaSuccess ? 0 : failed("cudaMemset", status);
}

int perf_device_synchronize(void)
{
    cudaError_t status = cudaDeviceSynchronize();
    return status == cudaSuccess ? 0 : failed("cudaDeviceSynchronize", status);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double perf_device_copy_bandwidth(size_t bytes, int repetitions)
{
    enum { MAX_REPETITIONS = 64 };
    double ms[MAX_REPETITIONS];
    if (repetitions < 1 || repetitions > MAX_REPETITIONS)
        repetitions = 5;
    void *src = perf_device_alloc(bytes), *dst = perf_device_alloc(bytes);
    cudaEvent_t start = NULL, stop = NULL;
    cudaError_t status = src && dst ? cudaSuccess : cudaErrorMemoryAllocation;
    if (status == cudaSuccess)
        status = cudaEventCreate(&start);
    if (status == cudaSuccess)
        status = cudaEventCreate(&stop);
    /* touched once so that the timed copies measure memory, not first-use mapping */
    if (status == cudaSuccess)
        status = cudaMemset(src, 1, bytes);
    if (status == cudaSuccess)
        status = cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice);
    for (int i = 0; i < repetitions && status == cudaSuccess; i++) {
        float elapsed = 0.0f;
        status = cudaEventRecord(start, 0);
        if (status == cudaSuccess)
            status = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, 0);
        if (status == cudaSuccess)
            status = cudaEventRecord(stop, 0);
        if (status == cudaSuccess)
            status = cudaEventSynchronize(stop);
        if (status == cudaSuccess)
            status = cudaEventElapsedTime(&elapsed, start, stop);
        ms[i] = elapsed;
    }
    if (status != cudaSuccess)
        failed("measuring the device copy bandwidth", status);
    if (start)
        cudaEventDestroy(start);
    if (stop)
        cudaEventDestroy(stop);
    perf_device_free(src);
    perf_device_free(dst);
    if (status != cudaSuccess)
        return -1.0;
    qsort(ms, (size_t)repetitions, sizeof ms[0], compare_doubles);
    double median_ms = repetitions % 2 ? ms[repetitions / 2]
                                       : 0.5 * (ms[repetitions / 2 - 1] + ms[repetitions / 2]);
    return median_ms > 0.0 ? 2.0 * (double)bytes / (median_ms * 1e-3) / 1e9 : -1.0;
}

#else /* built without CUDA: --memory host only; perf_options refuses the others */

static void *not_built(void)
{
    snprintf(last_error, sizeof last_error, "dfccl_perf was built without CUDA");
    return NULL;
}

bool perf_device_built(void) { return false; }

int perf_device_select(int local_rank, int *device, char *error, size_t len)
{
    (void)local_rank;
    *device = -1;
    snprintf(error, len, "dfccl_perf was built without CUDA");
    return -1;
}

void perf_device_describe(char *out, size_t len) { snprintf(out, len, "none"); }
void *perf_device_alloc(size_t bytes) { (void)bytes; return not_built(); }
void perf_device_free(void *buf) { (void)buf; }
void *perf_device_alloc_pinned(size_t bytes) { (void)bytes; return not_built(); }
void perf_device_free_pinned(void *buf) { (void)buf; }

int perf_device_upload(void *device_dst, const void *host_src, size_t bytes)
{
    (void)device_dst, (void)host_src, (void)bytes;
    not_built();
    return -1;
}

int perf_device_download(void *host_dst, const void *device_src, size_t bytes)
{
    (void)host_dst, (void)device_src, (void)bytes;
    not_built();
    return -1;
}

int perf_device_poison(void *device_buf, size_t bytes)
{
    (void)device_buf, (void)bytes;
    not_built();
    return -1;
}

int perf_device_synchronize(void)
{
    not_built();
    return -1;
}

double perf_device_copy_bandwidth(size_t bytes, int repetitions)
{
    (void)bytes, (void)repetitions;
    not_built();
    return -1.0;
}

#endif
