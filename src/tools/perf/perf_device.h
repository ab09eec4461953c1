/*
 * perf_device.h - the few CUDA runtime calls dfccl_perf needs for
 * --memory device|staged: device choice, allocation, copies and the device
 * copy bandwidth behind the floor column. Built against the CUDA runtime
 * only when configure found it (DFCCL_PERF_HAVE_CUDA); otherwise every call
 * fails and perf_device_built() says why.
 */
#ifndef DFCCL_PERF_DEVICE_H
#define DFCCL_PERF_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

/* Whether this dfccl_perf was linked with the CUDA runtime. */
bool perf_device_built(void);

/*
 * Makes device (local rank % device count) current; meant to run before
 * MPI_Init so that everything the process creates on the GPU lands there.
 * Returns 0, or -1 with a message in `error`.
 */
int perf_device_select(int local_rank, int *device, char *error, size_t len);
/* "NVIDIA H200 (sm_90, 139 GiB)" of the current device. */
void perf_device_describe(char *out, size_t len);

/* NULL on failure; perf_device_error() then tells why. */
void *perf_device_alloc(size_t bytes);
void perf_device_free(void *buf);
/* Page-locked host memory (cudaMallocHost), as staging through the host uses. */
void *perf_device_alloc_pinned(size_t bytes);
void perf_device_free_pinned(void *buf);

/*
 * Plain cudaMemcpy, as an application staging through the host would call
 * it: from page-locked memory and to the host it returns once the data has
 * arrived; from pageable memory perf_device_synchronize() waits for it.
 * 0 or -1.
 */
int perf_device_upload(void *device_dst, const void *host_src, size_t bytes);
int perf_device_download(void *host_dst, const void *device_src, size_t bytes);
/* Sets every byte to 0xff (no result looks like that) and waits. 0 or -1. */
int perf_device_poison(void *device_buf, size_t bytes);
/* Waits for everything issued on the device. 0 or -1. */
int perf_device_synchronize(void);

/*
 * Device-to-device copy bandwidth in GB/s counting read and write bytes
 * (2 x bytes / time): median of `repetitions` timed cudaMemcpy calls of
 * `bytes`, after one untimed. Returns a value <= 0 on failure.
 */
double perf_device_copy_bandwidth(size_t bytes, int repetitions);

/* The last CUDA error, as text. */
const char *perf_device_error(void);

#endif
