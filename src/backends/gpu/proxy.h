/*
 * proxy.h - the proxy thread, which owns the daemon kernel's launches.
 */
#ifndef DFCCL_GPU_PROXY_H
#define DFCCL_GPU_PROXY_H

/* The proxy thread's body (arg: the dfccl_gpu_t), started by gpu_create;
 * it returns once stop is set and the kernel has left. */
void *gpu_proxy_main(void *arg);

#endif
