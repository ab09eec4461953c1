/* shm.c - create, attach, unlink and release POSIX shared memory. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "util/log.h"
#include "transport/shm.h"

static unsigned shm_counter;

dfccl_status_t dfccl_shm_create(dfccl_shm_t *shm, size_t bytes)
{
    struct timespec ts;
    int fd, rc;

    memset(shm, 0, sizeof(*shm));
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(shm->name, sizeof(shm->name), "/dfccl-%d-%u-%lx", (int)getpid(),
             __atomic_fetch_add(&shm_counter, 1, __ATOMIC_RELAXED),
             (unsigned long)(ts.tv_nsec ^ ts.tv_sec));
    fd = shm_open(shm->name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        dfccl_error("shm_open(%s) failed: %s", shm->name, strerror(errno));
        return DFCCL_ERR_SYSTEM;
    }
    shm->linked = 1;
    rc = posix_fallocate(fd, 0, (off_t)bytes);
    if (rc != 0) {
        dfccl_error("cannot reserve %zu bytes in /dev/shm for %s: %s", bytes, shm->name,
                    strerror(rc));
        goto err_close;
    }
    shm->addr = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (shm->addr == MAP_FAILED) {
        shm->addr = NULL;
        dfccl_error("mmap(%s, %zu) failed: %s", shm->name, bytes, strerror(errno));
        goto err_close;
    }
    close(fd);
    shm->bytes = bytes;
    return DFCCL_OK;

err_close:
    close(fd);
    dfccl_shm_release(shm);
    return DFCCL_ERR_SYSTEM;
}

dfccl_status_t dfccl_shm_attach(dfccl_shm_t *shm, const char *name, size_t bytes)
{
    struct stat st;
    int fd;

    memset(shm, 0, sizeof(*shm));
    snprintf(shm->name, sizeof(shm->name), "%s", name);
    fd = shm_open(shm->name, O_RDWR, 0);
    if (fd < 0) {
        dfccl_error("shm_open(%s) of a peer's segment failed: %s", name, strerror(errno));
        return DFCCL_ERR_SYSTEM;
    }
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < bytes) {
        dfccl_error("peer segment %s is smaller than the %zu bytes expected", name, bytes);
        close(fd);
        return DFCCL_ERR_SYSTEM;
    }
    shm->addr = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (shm->addr == MAP_FAILED) {
        shm->addr = NULL;
        dfccl_error("mmap(%s) failed: %s", name, strerror(errno));
        return DFCCL_ERR_SYSTEM;
    }
    shm->bytes = bytes;
    return DFCCL_OK;
}

void dfccl_shm_unlink(dfccl_shm_t *shm)
{
    if (shm->linked) {
        shm_unlink(shm->name);
        shm->linked = 0;
    }
}

void dfccl_shm_release(dfccl_shm_t *shm)
{
    dfccl_shm_unlink(shm);
    if (shm->addr != NULL) munmap(shm->addr, shm->bytes);
    shm->addr = NULL;
}
