/*
 * test_memory.c - host or device buffers for the MPI test programs
 * (see test_memory.h).
 */
#include "test_memory.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

#ifdef DFCCL_TEST_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

static const char *program_name = "test";
static int selected_device = -1;
/* --memory device-pool: device buffers from CUDA's stream-ordered pool
 * (cudaMallocAsync), which CUDA IPC cannot export: the engine's direct path
 * must fall back to its ring on every rank. */
static bool use_pool;

int test_memory_parse(const char *text, test_memory_kind_t *kind)
{
    if (text != NULL && strcmp(text, "host") == 0) {
        *kind = TEST_MEMORY_HOST;
        return 0;
    }
    if (text != NULL && strcmp(text, "device") == 0) {
        *kind = TEST_MEMORY_DEVICE;
        return 0;
    }
    if (text != NULL && strcmp(text, "device-pool") == 0) {
        *kind = TEST_MEMORY_DEVICE;
        use_pool = true;
        return 0;
    }
    return -1;
}

const char *test_memory_name(test_memory_kind_t kind)
{
    return kind == TEST_MEMORY_DEVICE ? "device" : "host";
}

int test_memory_device(void)
{
    return selected_device;
}

/* Stops the run: through MPI when it is up, so that mpirun ends every rank
 * at once; otherwise by exiting (before MPI_Init, or after finalize). */
static void stop_run(int code)
{
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized)
        MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

#ifdef DFCCL_TEST_HAVE_CUDA
/* Before MPI_Init only the launcher's environment tells who we are. */
static int env_int(const char *name, int fallback)
{
    const char *text = getenv(name);
    return text != NULL && *text != '\0' ? atoi(text) : fallback;
}

/* Copies run on a stream of their own that does not synchronise with other
 * streams (a GPU engine's daemon kernel may run for the life of the
 * process, so the tests' own copies must not wait for "all work"), and are
 * waited for explicitly: a plain cudaMemcpy from pageable memory may return
 * before the data has reached the device. sync_check tests the default
 * stream and cudaDeviceSynchronize on purpose. */
static cudaStream_t copy_stream;
/* The current device is per host thread (threads_check calls from many). */
static _Thread_local bool thread_device_set;

static void cuda_check(cudaError_t rc, const char *what)
{
    if (rc == cudaSuccess)
        return;
    fprintf(stderr, "%s: rank %d: CUDA error in %s: %s (%s)\n", program_name,
            env_int("OMPI_COMM_WORLD_RANK", -1), what, cudaGetErrorName(rc),
            cudaGetErrorString(rc));
    stop_run(2);
}

static void use_selected_device(void)
{
    if (!thread_device_set) {
        cuda_check(cudaSetDevice(selected_device), "cudaSetDevice");
        thread_device_set = true;
    }
}

static void select_device(void)
{
    int rank = env_int("OMPI_COMM_WORLD_RANK", 0);
    int local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0);
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess || count == 0) {
        fprintf(stderr, "%s: rank %d: device memory needs a CUDA GPU, but none is usable "
                "here (cudaGetDeviceCount: %s)\n", program_name, rank,
                rc != cudaSuccess ? cudaGetErrorString(rc) : "0 devices");
        exit(2);
    }
    selected_device = local_rank % count;
    use_selected_device();
    /* Create the context now, before MPI_Init, as CUDA-aware MPI expects. */
    cuda_check(cudaFree(NULL), "cudaFree(NULL) (context creation)");
    cuda_check(cudaStreamCreateWithFlags(&copy_stream, cudaStreamNonBlocking),
               "cudaStreamCreateWithFlags");
}
#endif

test_memory_kind_t test_memory_setup(int *argc, char **argv, const char *program)
{
    program_name = program;
    test_memory_kind_t kind = TEST_MEMORY_HOST;
    bool mixed = false;
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], "--memory") != 0)
            continue;
        /* mixed: rank 0 passes host buffers, the others device buffers
         * (what coll_dfccl_host_buffers=engine must carry) */
        mixed = i + 1 < *argc && strcmp(argv[i + 1], "mixed") == 0;
        if (mixed) {
            kind = TEST_MEMORY_DEVICE;
        } else if (test_memory_parse(i + 1 < *argc ? argv[i + 1] : NULL, &kind) != 0) {
            fprintf(stderr, "%s: --memory takes host, device, device-pool or mixed\n", program);
            exit(2);
        }
        /* Drop the option and its value; argv stays NULL-terminated. */
        for (int j = i; j + 2 <= *argc; j++)
            argv[j] = argv[j + 2];
        *argc -= 2;
        i--;
    }
    if (mixed) {
        const char *rank = getenv("OMPI_COMM_WORLD_RANK");
        if (rank == NULL) {
            fprintf(stderr, "%s: --memory mixed needs Open MPI's mpirun (it tells each rank its"
                    " number through OMPI_COMM_WORLD_RANK before MPI_Init)\n", program);
            exit(2);
        }
        if (atoi(rank) == 0)
            kind = TEST_MEMORY_HOST;   /* no CUDA call of ours on that rank */
    }
    if (kind == TEST_MEMORY_DEVICE)
        test_memory_require_device(program);
    return kind;
}

void test_memory_require_device(const char *program)
{
    program_name = program;
#ifdef DFCCL_TEST_HAVE_CUDA
    if (selected_device < 0)
        select_device();
#else
    fprintf(stderr, "%s: device memory: this build has no CUDA support (configure "
            "found no nvcc; configure --with-cuda=DIR to enable it)\n", program);
    exit(2);
#endif
}

void test_memory_teardown(void)
{
#ifdef DFCCL_TEST_HAVE_CUDA
    if (selected_device >= 0 && copy_stream != NULL) {
        cudaStreamDestroy(copy_stream);
        copy_stream = NULL;
    }
#endif
}

/* Device requests in a build without CUDA cannot get past setup; this
 * catches a program that skipped it. */
static void require_device_support(void)
{
#ifdef DFCCL_TEST_HAVE_CUDA
    if (selected_device >= 0) {
        use_selected_device();
        return;
    }
#endif
    fprintf(stderr, "%s: device memory requested without --memory device set-up\n",
            program_name);
    stop_run(2);
}

void *test_memory_alloc(test_memory_kind_t kind, size_t bytes)
{
    if (bytes == 0)
        bytes = 1;
    if (kind == TEST_MEMORY_HOST)
        return malloc(bytes);
    require_device_support();
#ifdef DFCCL_TEST_HAVE_CUDA
    void *buffer = NULL;
    cudaError_t rc;
    if (use_pool) {
        rc = cudaMallocAsync(&buffer, bytes, copy_stream);
        if (rc == cudaSuccess)
            rc = cudaStreamSynchronize(copy_stream);
    } else {
        rc = cudaMalloc(&buffer, bytes);
    }
    if (rc == cudaErrorMemoryAllocation) {
        cudaGetLastError();  /* clear it: out of memory is reported as NULL */
        return NULL;
    }
    cuda_check(rc, use_pool ? "cudaMallocAsync" : "cudaMalloc");
    return buffer;
#else
    return NULL;
#endif
}

void test_memory_free(test_memory_kind_t kind, void *buffer)
{
    if (buffer == NULL)
        return;
    if (kind == TEST_MEMORY_HOST) {
        free(buffer);
        return;
    }
    require_device_support();
#ifdef DFCCL_TEST_HAVE_CUDA
    if (use_pool) {
        cuda_check(cudaFreeAsync(buffer, copy_stream), "cudaFreeAsync");
        cuda_check(cudaStreamSynchronize(copy_stream), "cudaStreamSynchronize (free)");
        return;
    }
    cuda_check(cudaFree(buffer), "cudaFree");
#endif
}

void test_memory_to_buffer(test_memory_kind_t kind, void *buffer, const void *host,
                           size_t bytes)
{
    if (bytes == 0 || buffer == host)
        return;
    if (kind == TEST_MEMORY_HOST) {
        memcpy(buffer, host, bytes);
        return;
    }
    require_device_support();
#ifdef DFCCL_TEST_HAVE_CUDA
    cuda_check(cudaMemcpyAsync(buffer, host, bytes, cudaMemcpyHostToDevice, copy_stream),
               "cudaMemcpyAsync host to device");
    cuda_check(cudaStreamSynchronize(copy_stream), "cudaStreamSynchronize after upload");
#endif
}

void test_memory_from_buffer(test_memory_kind_t kind, void *host, const void *buffer,
                             size_t bytes)
{
    if (bytes == 0 || buffer == host)
        return;
    if (kind == TEST_MEMORY_HOST) {
        memcpy(host, buffer, bytes);
        return;
    }
    require_device_support();
#ifdef DFCCL_TEST_HAVE_CUDA
    cuda_check(cudaMemcpyAsync(host, buffer, bytes, cudaMemcpyDeviceToHost, copy_stream),
               "cudaMemcpyAsync device to host");
    cuda_check(cudaStreamSynchronize(copy_stream), "cudaStreamSynchronize after download");
#endif
}

void test_memory_set(test_memory_kind_t kind, void *buffer, int byte, size_t bytes)
{
    if (bytes == 0)
        return;
    if (kind == TEST_MEMORY_HOST) {
        memset(buffer, byte, bytes);
        return;
    }
    require_device_support();
#ifdef DFCCL_TEST_HAVE_CUDA
    cuda_check(cudaMemsetAsync(buffer, byte, bytes, copy_stream), "cudaMemsetAsync");
    cuda_check(cudaStreamSynchronize(copy_stream), "cudaStreamSynchronize after memset");
#endif
}
