/*
 * test_memory.h - where the test programs put the buffers they hand to MPI:
 * host memory (malloc) or device memory (CUDA runtime).
 *
 * Inputs and expected results are always built on the host; in device mode
 * they travel to and from the device with the copy functions below, so the
 * checks stay the bit-exact host checks of host mode.
 *
 * Device support is compiled only when configure found CUDA
 * (DFCCL_TEST_HAVE_CUDA); without it, asking for device memory stops the
 * program with a message saying so.
 */
#ifndef DFCCL_TEST_MEMORY_H
#define DFCCL_TEST_MEMORY_H

#include <stddef.h>

typedef enum {
    TEST_MEMORY_HOST = 0,   /* zero, so zero-initialised structs mean host */
    TEST_MEMORY_DEVICE
} test_memory_kind_t;

/* Parses "host", "device" or "device-pool" (device memory from
 * cudaMallocAsync's pool, which CUDA IPC cannot export); returns 0 on
 * success, -1 otherwise. */
int test_memory_parse(const char *text, test_memory_kind_t *kind);
const char *test_memory_name(test_memory_kind_t kind);

/*
 * Call before MPI_Init with the program's argc/argv: finds and removes
 * "--memory host|device|device-pool|mixed" (so the program's own parser
 * never sees it) and, for device memory, selects GPU (local rank % device
 * count). Stops the process with a message on a bad value, a build without
 * CUDA, or no usable GPU:
 * MPI is not initialised yet, so exiting is all there is to do.
 */
test_memory_kind_t test_memory_setup(int *argc, char **argv, const char *program);

/* For programs that always use device memory: selects the GPU as setup
 * does for --memory device, stopping the process when there is none. */
void test_memory_require_device(const char *program);

/* Releases what setup created (call after MPI_Finalize). */
void test_memory_teardown(void);

/* bytes may be 0 (a valid, unique pointer is still returned). Returns NULL
 * when out of memory. */
void *test_memory_alloc(test_memory_kind_t kind, size_t bytes);
void test_memory_free(test_memory_kind_t kind, void *buffer);

/* Complete on return: the data is in place before the next MPI call.
 * A CUDA error stops the run (MPI_Abort) with the error's name. */
void test_memory_to_buffer(test_memory_kind_t kind, void *buffer, const void *host,
                           size_t bytes);
void test_memory_from_buffer(test_memory_kind_t kind, void *host, const void *buffer,
                             size_t bytes);
void test_memory_set(test_memory_kind_t kind, void *buffer, int byte, size_t bytes);

/* The device this process selected, or -1 in host mode. */
int test_memory_device(void);

#endif /* DFCCL_TEST_MEMORY_H */
