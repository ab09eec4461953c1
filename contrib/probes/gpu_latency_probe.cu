/*
 * gpu_latency_probe.cu - what the daemon kernel's scheduler steps cost on
 * this GPU: one thread times, with the global timer, a loop of each
 * operation it uses (reads of mapped host memory, device memory written by
 * the host, fences at GPU and system scope, block barriers, writes to host
 * memory followed by a system fence, or made as a release at system scope).
 *
 *   nvcc -O2 -arch=sm_90 -o gpu_latency_probe contrib/probes/gpu_latency_probe.cu
 *   ./gpu_latency_probe [threads per block, default 512]
 *
 * Prints nanoseconds per operation (mean over the loop), the SM clock, and
 * the round trip of a 16-byte line between two blocks. A measurement
 * tool: it is not built by make.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define LOOPS 2000

enum { OP_HOST_LOAD, OP_DEVICE_VOLATILE_LOAD, OP_CHAIN_CACHED, OP_CHAIN_VOLATILE, OP_FENCE_GPU, OP_FENCE_SYSTEM, OP_SYNCTHREADS,
       OP_HOST_STORE_FENCE, OP_HOST_STORE, OP_NANOSLEEP_64, OP_TIMER, OP_FENCE_ACQ_REL_SYSTEM,
       OP_HOST_STORE_RELEASE, OP_COUNT };
static const char *const op_names[OP_COUNT] = {
    "16-byte uncached load of mapped host memory",
    "volatile load of device memory",
    "dependent load of device memory (default, L1), a chain",
    "dependent volatile load of device memory, a chain",
    "__threadfence()",
    "__threadfence_system()",
    "__syncthreads() (whole block)",
    "store to mapped host memory + __threadfence_system()",
    "store to mapped host memory",
    "__nanosleep(64)",
    "globaltimer read",
    "fence.acq_rel.sys",
    "store to mapped host memory, st.release.sys",
};

__device__ static inline uint64_t now_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void probe(const uint4 *host_in, uint64_t *host_out, volatile uint64_t *dev,
                      uint64_t *result)
{
    for (int op = 0; op < OP_COUNT; op++) {
        __syncthreads();
        uint64_t t0 = now_ns(), acc = 0;
        for (int i = 0; i < LOOPS; i++) {
            if (op == OP_SYNCTHREADS) {
                __syncthreads();
                continue;
            }
            if (threadIdx.x != 0) continue;
            switch (op) {
            case OP_HOST_LOAD: {
                uint4 v = __ldcv(host_in + (i & 7));
                acc += v.x;
                break;
            }
            case OP_DEVICE_VOLATILE_LOAD: acc += dev[(i * 32) & 1023]; break;
            /* dev holds a cycle through its words: each load's address is
             * the value of the one before, as in the scheduler's reads of
             * a task's communicator, then of that communicator's fields */
            case OP_CHAIN_CACHED: acc = ((const uint64_t *)dev)[acc & 1023]; break;
            case OP_CHAIN_VOLATILE: acc = dev[acc & 1023]; break;
            case OP_FENCE_GPU: __threadfence(); break;
            case OP_FENCE_SYSTEM: __threadfence_system(); break;
            case OP_HOST_STORE_FENCE:
                ((volatile uint64_t *)host_out)[i & 7] = i;
                __threadfence_system();
                break;
            case OP_HOST_STORE: ((volatile uint64_t *)host_out)[i & 7] = i; break;
            case OP_NANOSLEEP_64: __nanosleep(64); break;
            case OP_TIMER: acc += now_ns(); break;
            case OP_FENCE_ACQ_REL_SYSTEM: asm volatile("fence.acq_rel.sys;" ::: "memory"); break;
            case OP_HOST_STORE_RELEASE:
                asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(host_out + (i & 7)), "l"((uint64_t)i)
                             : "memory");
                break;
            }
        }
        if (threadIdx.x == 0) {
            result[op] = now_ns() - t0;
            result[OP_COUNT] += acc;   /* keeps the loads */
        }
    }
    if (threadIdx.x == 0) {   /* the SM clock's rate over about 10 ms */
        uint64_t t0 = now_ns();
        long long c0 = clock64();
        while (now_ns() - t0 < 10000000ull) {
        }
        result[OP_COUNT + 1] = (uint64_t)((clock64() - c0) * 1000 / (long long)(now_ns() - t0));
    }
}

/* A chain of dependent volatile loads, each in another 2 MiB page of a 2
 * GiB buffer (1024 pages): what a load costs when its page's translation
 * is not at hand. */
#define PAGE_WORDS (2u << 20) / 8u
__global__ void page_chase(volatile uint64_t *pages, uint64_t *result)
{
    uint64_t at = 0, t0 = now_ns();

    for (int i = 0; i < LOOPS; i++) at = pages[at];
    result[0] = now_ns() - t0;
    result[1] = at;
}

/* Two blocks pass a 16-byte line back and forth through device memory, as
 * the LL path's ranks do: block 0 writes k to ping and waits for pong == k,
 * block 1 answers; scope 1: volatile accesses (system scope, as the LL path
 * uses), 0: relaxed at GPU scope. Block 0 times the round trips. */
__device__ static inline void line_store(uint4 *p, uint32_t k, int sys)
{
    if (sys)
        asm volatile("st.volatile.v4.u32 [%0], {%1, %1, %1, %1};" ::"l"(p), "r"(k));
    else
        asm volatile("st.relaxed.gpu.v4.u32 [%0], {%1, %1, %1, %1};" ::"l"(p), "r"(k));
}

__device__ static inline uint32_t line_load(const uint4 *p, int sys)
{
    uint32_t a, b, c, d;
    if (sys)
        asm volatile("ld.volatile.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "l"(p));
    else
        asm volatile("ld.relaxed.gpu.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "l"(p));
    return a == d && b == c ? b : 0;   /* the line whole */
}

__global__ void ping_pong(uint4 *lines, int sys, uint64_t *result)
{
    uint4 *ping = lines, *pong = lines + 8;   /* 128 bytes apart */

    if (threadIdx.x != 0) return;
    if (blockIdx.x == 0) {
        uint64_t t0 = now_ns();
        for (uint32_t k = 1; k <= LOOPS; k++) {
            line_store(ping, k, sys);
            while (line_load(pong, sys) != k) {
            }
        }
        result[0] = now_ns() - t0;
    } else {
        for (uint32_t k = 1; k <= LOOPS; k++) {
            while (line_load(ping, sys) != k) {
            }
            line_store(pong, k, sys);
        }
    }
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 512;
    uint4 *host_in;
    uint64_t *host_out, *result, *dev;

    if (cudaHostAlloc((void **)&host_in, 8 * sizeof(uint4), cudaHostAllocMapped) != cudaSuccess ||
        cudaHostAlloc((void **)&host_out, 8 * sizeof(uint64_t), cudaHostAllocMapped) != cudaSuccess ||
        cudaHostAlloc((void **)&result, (OP_COUNT + 2) * sizeof(uint64_t), cudaHostAllocMapped) !=
            cudaSuccess ||
        cudaMalloc((void **)&dev, 1024 * sizeof(uint64_t)) != cudaSuccess) {
        fprintf(stderr, "gpu_latency_probe: allocation failed\n");
        return 1;
    }
    {   /* a cycle through the 1024 words, 37 words (296 bytes) apart */
        uint64_t chain[1024];
        for (int i = 0; i < 1024; i++) chain[i] = (uint64_t)((i + 37) & 1023);
        cudaMemcpy(dev, chain, sizeof(chain), cudaMemcpyHostToDevice);
    }
    for (int run = 0; run < 2; run++) {   /* the first run warms up */
        probe<<<1, threads>>>(host_in, host_out, dev, result);
        cudaError_t e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
            fprintf(stderr, "gpu_latency_probe: %s\n", cudaGetErrorString(e));
            return 1;
        }
    }
    printf("# gpu_latency_probe: 1 block of %d threads, %d loops each, ns per operation\n",
           threads, LOOPS);
    for (int op = 0; op < OP_COUNT; op++)
        printf("%10.1f  %s\n", (double)result[op] / LOOPS, op_names[op]);
    printf("%10llu  SM clock, MHz (cycles over the global clock, one thread spinning)\n",
           (unsigned long long)result[OP_COUNT + 1]);
    {   /* word p * PAGE_WORDS + 8 holds the next page's word */
        uint64_t *pages;
        if (cudaMalloc((void **)&pages, (size_t)1024 * PAGE_WORDS * 8) == cudaSuccess) {
            for (uint64_t p = 0; p < 1024; p++) {
                uint64_t next = ((p + 37) & 1023) * PAGE_WORDS + 8;
                cudaMemcpy(pages + p * PAGE_WORDS + 8, &next, 8, cudaMemcpyHostToDevice);
            }
            uint64_t first = 8;
            cudaMemcpy(pages, &first, 8, cudaMemcpyHostToDevice);   /* word 0 starts the chain */
            page_chase<<<1, 1>>>(pages, result);
            if (cudaDeviceSynchronize() == cudaSuccess)
                printf("%10.1f  dependent volatile load, each in another 2 MiB page of 2 GiB\n",
                       (double)result[0] / LOOPS);
            cudaFree(pages);
        }
    }
    for (int sys = 1; sys >= 0; sys--) {
        uint4 *lines;
        if (cudaMalloc((void **)&lines, 256) != cudaSuccess || cudaMemset(lines, 0, 256) != cudaSuccess) {
            fprintf(stderr, "gpu_latency_probe: allocation failed\n");
            return 1;
        }
        ping_pong<<<2, 32>>>(lines, sys, result);
        cudaError_t e = cudaDeviceSynchronize();
        cudaFree(lines);
        if (e != cudaSuccess) {
            fprintf(stderr, "gpu_latency_probe: %s\n", cudaGetErrorString(e));
            return 1;
        }
        printf("%10.1f  round trip of a 16-byte line between two blocks (%s)\n",
               (double)result[0] / LOOPS, sys ? "volatile: system scope" : "relaxed, GPU scope");
    }
    return 0;
}
