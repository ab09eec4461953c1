/*
 * proxy.h - the proxy thread, which owns the daemon kernel's launches.
 */
#ifndef DFCCL_GPU_PROXY_H
#define DFCCL_GPU_PROXY_H

/* The proxy thread's body (arg: the dfccl_gpu_t), started by gpu_create;
 * it returns once stop is set and the kernel has left. */
void *gpu_proxy_main(void *arg);
/* At exit without dfccl_gpu_destroy (util/exit_park.h): asks the kernel
 * to leave and wakes the proxy, which parks and calls CUDA no more. */
void gpu_proxy_wake_at_exit(void *arg);

#endif
