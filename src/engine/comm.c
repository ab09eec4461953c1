/*
 * comm.c - communicators: FIFO set-up through the caller's bootstrap
 * allgather, and reference-counted teardown.
 *
 * Every rank creates the segment holding its incoming FIFO, all ranks learn
 * every name, each maps its successor's segment, and a second exchange
 * confirms that everyone has mapped before the names are unlinked. Each
 * exchange carries a status, so a failure anywhere fails the creation on
 * every rank alike.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "log.h"

typedef struct comm_hello {
    int32_t  status;
    uint32_t nslots;
    uint64_t slot_bytes;
    char     name[DFCCL_SHM_NAME_MAX];
} comm_hello_t;

static void comm_fifo_init(dfccl_fifo_t *fifo, void *base, const dfccl_config_t *cfg, int peer)
{
    fifo->ctrl       = (dfccl_fifo_ctrl_t *)base;
    fifo->slots      = (char *)base + sizeof(dfccl_fifo_ctrl_t);
    fifo->slot_bytes = cfg->slot_bytes;
    fifo->nslots     = cfg->fifo_slots;
    fifo->peer       = peer;
    fifo->count      = 0;
}

/* Exchanges one status and returns the worst one seen on any rank. */
static dfccl_status_t comm_agree(const dfccl_comm_params_t *p, dfccl_status_t mine)
{
    int32_t *all = malloc(sizeof(int32_t) * (size_t)p->size), me = (int32_t)mine;
    dfccl_status_t worst = DFCCL_OK;

    if (all == NULL) return DFCCL_ERR_NO_MEMORY;
    if (p->allgather(&me, all, sizeof(me), p->allgather_arg) != 0) {
        worst = DFCCL_ERR_BOOTSTRAP;
    } else {
        for (int i = 0; i < p->size; i++)
            if (all[i] != DFCCL_OK) worst = (dfccl_status_t)all[i];
    }
    free(all);
    return worst;
}

/* Maps every peer's board: the successor's with its FIFO, the others' alone. */
static dfccl_status_t comm_attach_peers(dfccl_comm_t *comm, const comm_hello_t *all, int next,
                                        size_t seg_bytes)
{
    dfccl_status_t status = dfccl_shm_attach(&comm->send_seg, all[next].name, seg_bytes);

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

static dfccl_status_t comm_connect(dfccl_comm_t *comm, const dfccl_comm_params_t *p)
{
    const dfccl_config_t *cfg = &comm->context->config;
    size_t bytes = DFCCL_BOARD_BYTES + dfccl_fifo_bytes(cfg->slot_bytes, cfg->fifo_slots);
    int next = (p->rank + 1) % p->size, prev = (p->rank + p->size - 1) % p->size;
    comm_hello_t mine, *all;
    dfccl_status_t status;

    all = calloc((size_t)p->size, sizeof(*all));
    if (all == NULL) return DFCCL_ERR_NO_MEMORY;
    memset(&mine, 0, sizeof(mine));
    mine.status = (int32_t)dfccl_shm_create(&comm->recv_seg, bytes);
    if (mine.status == DFCCL_OK) {
        comm->board = (dfccl_board_t *)comm->recv_seg.addr;
        dfccl_board_init(comm->board);
    }
    mine.nslots = cfg->fifo_slots;
    mine.slot_bytes = cfg->slot_bytes;
    memcpy(mine.name, comm->recv_seg.name, sizeof(mine.name));
    if (p->allgather(&mine, all, sizeof(mine), p->allgather_arg) != 0) {
        status = DFCCL_ERR_BOOTSTRAP;
        goto out;
    }
    status = DFCCL_OK;
    for (int i = 0; i < p->size; i++) {
        if (all[i].status != DFCCL_OK) status = (dfccl_status_t)all[i].status;
        else if (all[i].nslots != mine.nslots || all[i].slot_bytes != mine.slot_bytes) {
            if (p->rank == 0)
                dfccl_error("comm %#llx: rank %d uses FIFOs of %u x %llu bytes, rank 0 %u x %llu:"
                            " FIFO settings must be equal on all ranks",
                            (unsigned long long)p->key, i, all[i].nslots,
                            (unsigned long long)all[i].slot_bytes, mine.nslots,
                            (unsigned long long)mine.slot_bytes);
            status = DFCCL_ERR_INVALID_PARAM;
        }
    }
    if (status != DFCCL_OK) goto out;
    status = comm_agree(p, comm_attach_peers(comm, all, next, bytes));
    if (status != DFCCL_OK) goto out;
    /* everyone has mapped what they need: the names can go */
    dfccl_shm_unlink(&comm->recv_seg);
    comm_fifo_init(&comm->recv_fifo, (char *)comm->recv_seg.addr + DFCCL_BOARD_BYTES, cfg, prev);
    comm_fifo_init(&comm->send_fifo, (char *)comm->send_seg.addr + DFCCL_BOARD_BYTES, cfg, next);
out:
    free(all);
    return status;
}

static void comm_unmap(dfccl_comm_t *comm)
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

dfccl_status_t dfccl_comm_create(dfccl_context_t *context, const dfccl_comm_params_t *params,
                                 dfccl_comm_t **comm_p)
{
    dfccl_comm_t *comm;
    dfccl_status_t status;

    if (context == NULL || params == NULL || comm_p == NULL || params->size < 1 ||
        params->rank < 0 || params->rank >= params->size || params->allgather == NULL)
        return DFCCL_ERR_INVALID_PARAM;
    comm = calloc(1, sizeof(*comm));
    if (comm == NULL) return DFCCL_ERR_NO_MEMORY;
    comm->context = context;
    comm->rank    = params->rank;
    comm->size    = params->size;
    comm->key     = params->key;
    comm->refs    = 1;
    comm->board   = &comm->board_local;
    dfccl_board_init(comm->board);
    comm->peer_boards = calloc((size_t)params->size, sizeof(*comm->peer_boards));
    comm->peer_segs = calloc((size_t)params->size, sizeof(*comm->peer_segs));
    if (comm->peer_boards == NULL || comm->peer_segs == NULL) {
        status = DFCCL_ERR_NO_MEMORY;
    } else if (params->size > 1) {
        status = comm_connect(comm, params);
    } else {
        comm->peer_boards[0] = comm->board;   /* one rank: its own board alone */
        status = DFCCL_OK;
    }
    if (status != DFCCL_OK) {
        dfccl_info("comm %#llx: creation failed on rank %d: %s", (unsigned long long)params->key,
                   params->rank, dfccl_status_string(status));
        comm_unmap(comm);
        free(comm);
        return status;
    }
    dfccl_stats_add_comm();
    dfccl_debug("comm %#llx: rank %d of %d connected", (unsigned long long)comm->key,
                comm->rank, comm->size);
    *comm_p = comm;
    return DFCCL_OK;
}

void dfccl_comm_release(dfccl_comm_t *comm)
{
    if (__atomic_sub_fetch(&comm->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    if (comm->gpu != NULL) dfccl_gpu_comm_release(comm);
    comm_unmap(comm);
    free(comm);
}

void dfccl_comm_destroy(dfccl_comm_t *comm)
{
    /* collectives still queued hold their own references and finish first */
    if (comm != NULL) dfccl_comm_release(comm);
}

int dfccl_comm_rank(const dfccl_comm_t *comm) { return comm->rank; }
int dfccl_comm_size(const dfccl_comm_t *comm) { return comm->size; }
