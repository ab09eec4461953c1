/* shm.h - POSIX shared-memory segments for the host backend's FIFOs. */
#ifndef DFCCL_SHM_H
#define DFCCL_SHM_H

#include <stddef.h>
#include "include/dfccl.h"

#define DFCCL_SHM_NAME_MAX 48

typedef struct dfccl_shm {
    void  *addr;
    size_t bytes;
    int    linked;                    /* our name still exists in /dev/shm */
    char   name[DFCCL_SHM_NAME_MAX];
} dfccl_shm_t;

/* Creates a new segment (mode 0600, space reserved up front so that a full
 * /dev/shm is an error here rather than a SIGBUS later) and maps it. */
dfccl_status_t dfccl_shm_create(dfccl_shm_t *shm, size_t bytes);
/* Maps a segment another process created. */
dfccl_status_t dfccl_shm_attach(dfccl_shm_t *shm, const char *name, size_t bytes);
/* Removes the name once every user has mapped it; the memory stays. */
void dfccl_shm_unlink(dfccl_shm_t *shm);
/* Unmaps (and unlinks, if still linked). Safe on a zeroed struct. */
void dfccl_shm_release(dfccl_shm_t *shm);

#endif
