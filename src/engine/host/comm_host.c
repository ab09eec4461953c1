/*
 * comm_host.c - the host backend's communicator set-up: shared-memory FIFOs
 * and boards.
 *
 * Every rank creates the segment holding its board and its incoming FIFO;
 * the first exchange tells every rank every name, and each maps its
 * successor's segment (FIFO and board) and the other peers' boards. The
 * second exchange (comm_setup.c) confirms that everyone has mapped before
 * the names are unlinked.
 */
#include <stdlib.h>
#include <string.h>
#include "backend_ops.h"
#include "internal.h"
#include "log.h"

typedef struct host_hello {
    int32_t  status;
    uint32_t nslots;
    uint64_t slot_bytes;
    char     name[DFCCL_SHM_NAME_MAX];
} host_hello_t;

static size_t host_segment_bytes(const dfccl_config_t *cfg)
{
    return DFCCL_BOARD_BYTES + dfccl_fifo_bytes(cfg->slot_bytes, cfg->fifo_slots);
}

static void host_fifo_init(dfccl_fifo_t *fifo, void *base, const dfccl_config_t *cfg, int peer)
{
    fifo->ctrl       = (dfccl_fifo_ctrl_t *)base;
    fifo->slots      = (char *)base + sizeof(dfccl_fifo_ctrl_t);
    fifo->slot_bytes = cfg->slot_bytes;
    fifo->nslots     = cfg->fifo_slots;
    fifo->peer       = peer;
    fifo->count      = 0;
}

static size_t host_hello_bytes(const dfccl_comm_t *comm)
{
    (void)comm;
    return sizeof(host_hello_t);
}

static dfccl_status_t host_begin(dfccl_comm_t *comm, void *hello_out)
{
    const dfccl_config_t *cfg = &comm->context->config;
    host_hello_t hello;

    memset(&hello, 0, sizeof(hello));
    comm->board = &comm->board_local;
    dfccl_board_init(comm->board);
    comm->peer_boards = calloc((size_t)comm->size, sizeof(*comm->peer_boards));
    comm->peer_segs = calloc((size_t)comm->size, sizeof(*comm->peer_segs));
    if (comm->peer_boards == NULL || comm->peer_segs == NULL) {
        hello.status = DFCCL_ERR_NO_MEMORY;
    } else if (comm->size > 1) {
        hello.status = (int32_t)dfccl_shm_create(&comm->recv_seg, host_segment_bytes(cfg));
        if (hello.status == DFCCL_OK) {
            comm->board = (dfccl_board_t *)comm->recv_seg.addr;
            dfccl_board_init(comm->board);
        }
    }
    hello.nslots = cfg->fifo_slots;
    hello.slot_bytes = cfg->slot_bytes;
    memcpy(hello.name, comm->recv_seg.name, sizeof(hello.name));
    memcpy(hello_out, &hello, sizeof(hello));
    return (dfccl_status_t)hello.status;
}

/* Maps every peer's board: the successor's with its FIFO, the others' alone. */
static dfccl_status_t host_attach_peers(dfccl_comm_t *comm, const host_hello_t *all, int next)
{
    dfccl_status_t status = dfccl_shm_attach(&comm->send_seg, all[next].name,
                                             host_segment_bytes(&comm->context->config));

    for (int i = 0; i < comm->size && status == DFCCL_OK; i++) {
        if (i == comm->rank) {
            comm->peer_boards[i] = comm->board;
        } else if (i == next) {
            comm->peer_boards[i] = (dfccl_board_t *)comm->send_seg.addr;
        } else {
            status = dfccl_shm_attach(&comm->peer_segs[i], all[i].name, DFCCL_BOARD_BYTES);
            comm->peer_boards[i] = (dfccl_board_t *)comm->peer_segs[i].addr;
        }
    }
    return status;
}

static dfccl_status_t host_connect(dfccl_comm_t *comm, const void *hellos)
{
    const host_hello_t *all = hellos, *mine = &all[comm->rank];

    for (int i = 0; i < comm->size; i++) {
        if (all[i].status != DFCCL_OK) return (dfccl_status_t)all[i].status;
        if (all[i].nslots != mine->nslots || all[i].slot_bytes != mine->slot_bytes) {
            if (comm->rank == 0)
                dfccl_error("comm %#llx: rank %d uses FIFOs of %u x %llu bytes, rank 0 %u x %llu:"
                            " FIFO settings must be equal on all ranks",
                            (unsigned long long)comm->key, i, all[i].nslots,
                            (unsigned long long)all[i].slot_bytes, mine->nslots,
                            (unsigned long long)mine->slot_bytes);
            return DFCCL_ERR_INVALID_PARAM;
        }
    }
    if (comm->size == 1) {
        comm->peer_boards[0] = comm->board;   /* one rank: its own board alone */
        return DFCCL_OK;
    }
    return host_attach_peers(comm, all, (comm->rank + 1) % comm->size);
}

static dfccl_status_t host_finish(dfccl_comm_t *comm, dfccl_status_t agreed)
{
    const dfccl_config_t *cfg = &comm->context->config;
    int next = (comm->rank + 1) % comm->size, prev = (comm->rank + comm->size - 1) % comm->size;

    /* either way nobody maps the names any more: what is mapped stays
     * until the communicator is released */
    dfccl_shm_unlink(&comm->recv_seg);
    if (agreed != DFCCL_OK || comm->size == 1) return agreed;
    host_fifo_init(&comm->recv_fifo, (char *)comm->recv_seg.addr + DFCCL_BOARD_BYTES, cfg, prev);
    host_fifo_init(&comm->send_fifo, (char *)comm->send_seg.addr + DFCCL_BOARD_BYTES, cfg, next);
    return DFCCL_OK;
}

static void host_release(dfccl_comm_t *comm)
{
    if (comm->peer_segs != NULL)
        for (int i = 0; i < comm->size; i++) dfccl_shm_release(&comm->peer_segs[i]);
    free(comm->peer_segs);
    free(comm->peer_boards);
    comm->peer_segs = NULL;
    comm->peer_boards = NULL;
    dfccl_shm_release(&comm->send_seg);
    dfccl_shm_release(&comm->recv_seg);
}

const dfccl_backend_ops_t dfccl_host_backend = {
    .name        = "host",
    .hello_bytes = host_hello_bytes,
    .begin       = host_begin,
    .connect     = host_connect,
    .finish      = host_finish,
    .release     = host_release,
    .post        = dfccl_host_post,
};
