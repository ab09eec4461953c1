/*
 * oneshot.c - small host collectives within one node in one shot
 * (oneshot.h says how and why it is safe).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/host/host.h"
#include "util/log.h"
#include "core/reduce.h"

#define ONESHOT_LINE 64
/* Looks at a missing contribution between two reads of that peer's board,
 * which says whether it made another call at this place (it then never
 * writes the slot): the fast path reads nothing but the slots. */
#define ONESHOT_BOARD_EVERY 16

typedef struct oneshot_head {
    dfccl_ident_t ident;   /* ident.seq1 is written last */
    char          pad[ONESHOT_LINE - sizeof(dfccl_ident_t)];
} oneshot_head_t;

_Static_assert(sizeof(oneshot_head_t) == ONESHOT_LINE, "the identity has a line of its own");

static size_t oneshot_slot_bytes(size_t max_bytes)
{
    return ONESHOT_LINE + (max_bytes + ONESHOT_LINE - 1) / ONESHOT_LINE * ONESHOT_LINE;
}

size_t dfccl_oneshot_area_bytes(const dfccl_config_t *cfg, int size, int nnodes)
{
    if (cfg->oneshot_max_bytes == 0 || size < 2 || nnodes != 1) return 0;
    return 2 * oneshot_slot_bytes(cfg->oneshot_max_bytes);
}

void dfccl_oneshot_attach(dfccl_host_t *h, const dfccl_config_t *cfg, char **slots)
{
    dfccl_oneshot_t *o = &h->oneshot;

    o->slots = slots;
    o->max_bytes = cfg->oneshot_max_bytes;
    o->slot_bytes = oneshot_slot_bytes(cfg->oneshot_max_bytes);
    o->next = 0;
}

void dfccl_oneshot_free(dfccl_host_t *h)
{
    free(h->oneshot.slots);
    memset(&h->oneshot, 0, sizeof(h->oneshot));
}

/* Elements each rank contributes. */
static size_t oneshot_in_elems(const dfccl_coll_args_t *args, size_t total)
{
    return args->type == DFCCL_COLL_ALLGATHER ? args->count : total;
}

/* A plan file that serves the call wins over the built-in algorithms. */
static int oneshot_plan_file_serves(const dfccl_host_t *h, const dfccl_coll_args_t *args,
                                    size_t total)
{
    uint64_t bytes = (uint64_t)total * dfccl_dtype_size(args->dtype);

    for (int i = 0; i < h->nplans; i++)
        if (dfccl_plan_file_type(h->plans[i]) == args->type &&
            dfccl_plan_file_serves_bytes(h->plans[i], bytes))
            return 1;
    return 0;
}

int dfccl_oneshot_serves(const dfccl_comm_t *comm, const dfccl_coll_args_t *args, size_t total)
{
    const dfccl_host_t *h = dfccl_comm_host(comm);

    if (h == NULL || h->oneshot.slots == NULL) return 0;
    /* a forced algorithm is what its user asked for */
    if (comm->context->config.algorithm != DFCCL_ALGO_COUNT) return 0;
    if (oneshot_in_elems(args, total) * dfccl_dtype_size(args->dtype) > h->oneshot.max_bytes)
        return 0;
    return !oneshot_plan_file_serves(h, args, total);
}

void dfccl_oneshot_init(dfccl_comm_t *comm, const dfccl_coll_args_t *args, size_t total,
                        dfccl_coll_t *coll)
{
    int in_place = args->sendbuf == DFCCL_IN_PLACE;
    dfccl_oneshot_run_t *s = &coll->shot;

    coll->type        = args->type;
    coll->priority    = args->priority;
    coll->user        = args->user;
    coll->callback    = args->callback;
    coll->total_count = total;
    coll->budget_ns   = comm->context->config.budget_ns;
    coll->oneshot     = 1;
    coll->checked     = 1;   /* each contribution carries its identity */
    coll->exec.sendbuf = in_place ? NULL : (char *)args->sendbuf;
    coll->exec.recvbuf = (char *)args->recvbuf;
    coll->exec.dtype   = args->dtype;
    coll->exec.op      = args->op;
    coll->exec.esize   = dfccl_dtype_size(args->dtype);
    s->in_elems = oneshot_in_elems(args, total);
    s->out_off = 0;
    s->out_elems = args->type == DFCCL_COLL_ALLREDUCE ? total : 0;
    if (args->type == DFCCL_COLL_REDUCE_SCATTER) {
        for (int r = 0; r < comm->rank; r++) s->out_off += args->counts[r];
        s->out_elems = args->counts[comm->rank];
    }
}

static oneshot_head_t *oneshot_head(const dfccl_oneshot_t *o, int rank, uint64_t k)
{
    return (oneshot_head_t *)(o->slots[rank] + (k & 1) * o->slot_bytes);
}

/* Our input: the send buffer, or in place the receive buffer (allgather:
 * our block of it). */
static const char *oneshot_input(const dfccl_coll_t *coll)
{
    const dfccl_exec_t *x = &coll->exec;

    if (x->sendbuf != NULL) return x->sendbuf;
    if (coll->type == DFCCL_COLL_ALLGATHER)
        return x->recvbuf + (size_t)coll->comm->rank * coll->shot.in_elems * x->esize;
    return x->recvbuf;
}

static void oneshot_write(dfccl_coll_t *coll, const dfccl_oneshot_t *o)
{
    oneshot_head_t *head = oneshot_head(o, coll->comm->rank, coll->shot.k);
    size_t bytes = coll->shot.in_elems * coll->exec.esize;

    if (bytes > 0) memcpy((char *)(head + 1), oneshot_input(coll), bytes);
    head->ident.count = coll->ident.count;
    head->ident.type = coll->ident.type;
    head->ident.dtype = coll->ident.dtype;
    head->ident.op = coll->ident.op;
    head->ident.rejected = coll->ident.rejected;
    head->ident.reason = coll->ident.reason;
    __atomic_store_n(&head->ident.seq1, coll->seq + 1, __ATOMIC_RELEASE);
    coll->exec.sent_bytes += bytes;
}

/* Every rank's contribution is there: the result, reduced in rank order. */
static void oneshot_compute(dfccl_coll_t *coll, const dfccl_oneshot_t *o)
{
    const dfccl_exec_t *x = &coll->exec;
    const dfccl_oneshot_run_t *s = &coll->shot;
    int size = coll->comm->size;
    size_t bytes = s->in_elems * x->esize, off = s->out_off * x->esize;

    if (coll->type == DFCCL_COLL_ALLGATHER) {
        for (int r = 0; r < size; r++) {
            char *dst = x->recvbuf + (size_t)r * bytes;
            if (bytes > 0 && !(r == coll->comm->rank && x->sendbuf == NULL))
                memcpy(dst, (const char *)(oneshot_head(o, r, s->k) + 1), bytes);
        }
        return;
    }
    if (s->out_elems == 0) return;
    dfccl_reduce(x->recvbuf, (const char *)(oneshot_head(o, 0, s->k) + 1) + off,
                 (const char *)(oneshot_head(o, 1, s->k) + 1) + off, s->out_elems, x->dtype, x->op);
    for (int r = 2; r < size; r++)
        dfccl_reduce(x->recvbuf, x->recvbuf, (const char *)(oneshot_head(o, r, s->k) + 1) + off,
                     s->out_elems, x->dtype, x->op);
}

/* Peer r's board, now and then, while its contribution is missing: a
 * peer that made another call at this place never writes it. */
static dfccl_oneshot_result_t oneshot_check_board(dfccl_coll_t *coll, int r)
{
    dfccl_ident_t theirs;
    char what[120];

    if (++coll->shot.looks % ONESHOT_BOARD_EVERY != 0) return DFCCL_ONESHOT_BLOCKED;
    if (dfccl_board_ident(coll->comm->peer_boards[r], coll->seq, &theirs) <= 0 ||
        !dfccl_ident_differs(&coll->ident, &theirs, what, sizeof(what)))
        return DFCCL_ONESHOT_BLOCKED;
    dfccl_watch_mismatch(coll, r, &theirs, what);
    return DFCCL_ONESHOT_MISMATCH;
}

dfccl_oneshot_result_t dfccl_oneshot_advance(dfccl_coll_t *coll)
{
    dfccl_comm_t *comm = coll->comm;
    dfccl_oneshot_t *o = &dfccl_comm_host(comm)->oneshot;
    dfccl_oneshot_run_t *s = &coll->shot;

    if (!s->written) {
        s->k = o->next++;
        oneshot_write(coll, o);
        s->written = 1;
    }
    for (; s->seen < comm->size; s->seen++) {
        const oneshot_head_t *head = oneshot_head(o, s->seen, s->k);
        char what[120];
        dfccl_ident_t theirs;

        if (s->seen == comm->rank) continue;
        if (__atomic_load_n(&head->ident.seq1, __ATOMIC_ACQUIRE) != coll->seq + 1) {
            coll->exec.waiting = DFCCL_WAIT_RECV;
            coll->exec.wait_peer = s->seen;
            return oneshot_check_board(coll, s->seen);
        }
        theirs = head->ident;
        if (dfccl_ident_differs(&coll->ident, &theirs, what, sizeof(what))) {
            dfccl_watch_mismatch(coll, s->seen, &theirs, what);
            return DFCCL_ONESHOT_MISMATCH;
        }
    }
    oneshot_compute(coll, o);
    coll->exec.waiting = DFCCL_WAIT_NONE;
    return DFCCL_ONESHOT_DONE;
}

void dfccl_oneshot_describe(const dfccl_coll_t *coll, char *buf, size_t len)
{
    const dfccl_oneshot_t *o = &dfccl_comm_host(coll->comm)->oneshot;
    const dfccl_oneshot_run_t *s = &coll->shot;
    int r = s->seen < coll->comm->size ? s->seen : coll->comm->rank;
    uint64_t there;

    if (!s->written) {
        snprintf(buf, len, "one-shot, not started");
        return;
    }
    there = __atomic_load_n(&oneshot_head(o, r, s->k)->ident.seq1, __ATOMIC_ACQUIRE);
    if (there == 0)
        snprintf(buf, len, "one-shot %llu: waiting for the contribution of rank %d (its slot is"
                 " still unused)", (unsigned long long)s->k, r);
    else
        snprintf(buf, len, "one-shot %llu: waiting for the contribution of rank %d (its slot"
                 " holds #%llu's)", (unsigned long long)s->k, r, (unsigned long long)(there - 1));
}
