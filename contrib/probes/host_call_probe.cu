/*
 * host_call_probe.cu - what the host's calls around a device collective
 * cost while a persistent kernel runs on a non-blocking stream of the same
 * process, as the daemon kernel does: waiting for or asking about CUDA's
 * legacy default stream (by the runtime and by the driver), an event on it,
 * a stream write on it and how soon the host sees that write land, and the
 * driver's answer to "is this pointer device memory".
 *
 *   nvcc -O2 -arch=sm_90 -o host_call_probe contrib/probes/host_call_probe.cu -lcuda
 *   ./host_call_probe [calls per operation, default 20000]
 *
 * Prints the median and 90th percentile in nanoseconds per call (each call
 * timed alone with CLOCK_MONOTONIC). Start several copies at once to see
 * the costs with several processes on one GPU (under MPS, as dfccl runs).
 * A measurement tool: it is not built by make.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Runs until *stop, like the daemon kernel between collectives. */
__global__ void spin_kernel(volatile int *stop)
{
    while (*stop == 0) __nanosleep(1000);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *name, uint64_t *t, int n)
{
    qsort(t, (size_t)n, sizeof(*t), cmp_u64);
    printf("%-64s median %7llu ns  p90 %7llu ns\n", name, (unsigned long long)t[n / 2],
           (unsigned long long)t[n * 9 / 10]);
}

#define CHECK(call)                                                                    \
    do {                                                                               \
        cudaError_t e_ = (call);                                                       \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20000, device = 0, type = 0;
    uint64_t *t = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)(n > 0 ? n : 1));
    volatile int *stop;
    volatile uint64_t *flag;
    int *stop_dev;
    uint64_t *flag_dev;
    char *dev_buf, *host_buf = (char *)malloc(4096);
    cudaStream_t daemon, own;
    cudaEvent_t ev;
    CUpointer_attribute attr = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
    void *data = &type;

    if (t == NULL || host_buf == NULL || n < 10) return 1;
    CHECK(cudaSetDevice(0));
    CHECK(cudaStreamCreateWithFlags(&daemon, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CHECK(cudaHostAlloc((void **)&stop, sizeof(int), cudaHostAllocMapped));
    CHECK(cudaHostAlloc((void **)&flag, sizeof(uint64_t), cudaHostAllocMapped));
    CHECK(cudaHostGetDevicePointer((void **)&stop_dev, (void *)stop, 0));
    CHECK(cudaHostGetDevicePointer((void **)&flag_dev, (void *)flag, 0));
    CHECK(cudaMalloc((void **)&dev_buf, 4096));
    *stop = 0;
    *flag = 0;
    spin_kernel<<<1, 32, 0, daemon>>>(stop_dev);
    CHECK(cudaGetLastError());

#define TIME(name, stmt)                                  \
    do {                                                  \
        for (int i_ = 0; i_ < n / 10; i_++) { stmt; }     \
        for (int i_ = 0; i_ < n; i_++) {                  \
            uint64_t t0_ = now_ns();                      \
            stmt;                                         \
            t[i_] = now_ns() - t0_;                       \
        }                                                 \
        report(name, t, n);                               \
    } while (0)

    TIME("cudaStreamSynchronize(cudaStreamLegacy)", cudaStreamSynchronize(cudaStreamLegacy));
    TIME("cudaStreamQuery(cudaStreamLegacy)", cudaStreamQuery(cudaStreamLegacy));
    TIME("cuStreamSynchronize(CU_STREAM_LEGACY)", cuStreamSynchronize(CU_STREAM_LEGACY));
    TIME("cuStreamQuery(CU_STREAM_LEGACY)", cuStreamQuery(CU_STREAM_LEGACY));
    TIME("cudaStreamQuery(an idle non-blocking stream)", cudaStreamQuery(own));
    TIME("cudaEventRecord(legacy) + cudaEventQuery", (cudaEventRecord(ev, cudaStreamLegacy),
                                                       cudaEventQuery(ev)));
    TIME("cudaEventQuery(an event recorded long ago)", cudaEventQuery(ev));
    TIME("cuPointerGetAttributes(memory type), device buffer",
         cuPointerGetAttributes(1, &attr, &data, (CUdeviceptr)(uintptr_t)dev_buf));
    TIME("cuPointerGetAttributes(memory type), malloc'd host buffer",
         cuPointerGetAttributes(1, &attr, &data, (CUdeviceptr)(uintptr_t)host_buf));
    TIME("cudaGetDevice", cudaGetDevice(&device));
    {
        /* a write queued on the legacy stream behind its (absent) work: the
         * call's cost, and until the host sees the value land */
        uint64_t *lands = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)n);
        uint64_t v = 0;
        for (int i = 0; i < n; i++) {
            uint64_t t0 = now_ns();
            v++;
            if (cuStreamWriteValue64(CU_STREAM_LEGACY, (CUdeviceptr)(uintptr_t)flag_dev, v, 0) !=
                CUDA_SUCCESS) {
                fprintf(stderr, "cuStreamWriteValue64 failed\n");
                return 1;
            }
            t[i] = now_ns() - t0;
            while (*flag != v) {
            }
            lands[i] = now_ns() - t0;
        }
        report("cuStreamWriteValue64(CU_STREAM_LEGACY) to host memory, the call", t, n);
        report("  and until the host sees the value", lands, n);
        free(lands);
    }
    *stop = 1;
    CHECK(cudaDeviceSynchronize());
    printf("device %d, %d calls per operation\n", device, n);
    return 0;
}
