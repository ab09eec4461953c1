/*
 * plan_file_run.c - runs one round of a plan on all ranks at once, one unit
 * per step over FIFOs of two units, tracking per chunk which ranks'
 * contributions a value holds: it proves the plan free of deadlock and
 * right in its result.
 *
 * A step fires once the steps it depends on have fired (version 1: the one
 * before it; version 2: its dependency list) and it is next on each of its
 * connections (earlier steps of its rank on that connection have fired), as
 * the executor moves a unit (src/core/exec_graph.h).
 *
 * Why one round decides every count: a step of round t waits only for
 * steps of round t or earlier (those it depends on, its connections'
 * earlier steps, the send it receives, the receive two units back on a
 * FIFO it sends to), so a
 * cycle of waits lies within one round, and every round's waits within
 * itself are those of round 0. Steps moving nothing in a round (short
 * ranges) drop out on both ends of their connections, which only empties
 * FIFOs. A chunk is half a FIFO (dfccl_plan_chunk_elems), so two units are
 * the least any FIFO holds; more room never blocks a step that two allow.
 * Waits once possible stay possible whatever another rank does, so one
 * greedy run finds a deadlock if any order has one.
 *
 * Values are chunk-granular: a plan's steps move whole chunks, and
 * pf_check_rounds has proven that the executor's rounds keep each rank's
 * accesses to every element in program order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/plan_file_model.h"

/* Units a FIFO holds: two chunks. */
#define RUN_FIFO_UNITS 2
/* The contribution sets kept for checking: at most this many words. */
#define RUN_MAX_WORDS (8u << 20)

typedef struct run_fifo {
    uint64_t *unit[RUN_FIFO_UNITS];   /* the values of a step's chunks, oldest first */
    int       n;
} run_fifo_t;

typedef struct run {
    const dfccl_plan_file_t *pf;
    int        in_place;
    size_t     words;      /* per chunk: one bit per rank */
    uint64_t  *val;        /* [rank][buffer][chunk][words] */
    uint8_t   *set;        /* [rank][buffer][chunk]: holds data */
    int32_t   *writer;     /* [rank][buffer][chunk]: the step that wrote it, or -1 */
    run_fifo_t *fifo;      /* by link */
    uint32_t  *pc;         /* the first step of each rank not fired yet */
    uint8_t  **fired;      /* [rank][step] */
    uint32_t  *link_sent, *link_recvd;   /* by link: steps fired on it, each end */
    uint32_t **send_ord;   /* [rank][send]: a send's place among its link's sends */
    uint32_t **recv_ord;   /* [rank][step]: a receive's place among its link's receives */
    int       *queue, *queued, qhead, qlen;
    pf_why_t  *why;
} run_t;

/* Index of a chunk of a buffer (0: send, 1: receive) of a rank. */
static size_t at(const run_t *x, int rank, int buf, uint32_t c)
{
    return ((size_t)rank * 2 + (size_t)buf) * x->pf->chunks + c;
}

/* The buffer a step names: in place, the send buffer is the receive buffer. */
static int buffer_index(const run_t *x, uint8_t buf)
{
    return buf == DFCCL_BUF_SEND && !x->in_place ? 0 : 1;
}

static void wake(run_t *x, int rank)
{
    if (x->queued[rank]) return;
    x->queued[rank] = 1;
    x->queue[(x->qhead + x->qlen++) % x->pf->ranks] = rank;
}

/* "0,1,3" for the ranks in a set, shortened past a few. */
static void ranks_text(const uint64_t *set, size_t words, int ranks, char *out, size_t len)
{
    size_t used = 0;
    int n = 0;

    out[0] = '\0';
    for (int r = 0; r < ranks && used + 16 < len; r++) {
        if (!(set[r / 64] >> (r % 64) & 1)) continue;
        if (n++ == 12) {
            snprintf(out + used, len - used, ",...");
            return;
        }
        used += (size_t)snprintf(out + used, len - used, "%s%d", n > 1 ? "," : "", r);
    }
    if (n == 0) snprintf(out, len, "none");
    (void)words;
}

static int ready(const run_t *x, int rank, uint32_t i)
{
    const pf_program_t *p = &x->pf->programs[rank];
    const pf_step_t *s = &p->steps[i];

    if (x->pf->version < 2 && i > 0 && !x->fired[rank][i - 1]) return 0;
    for (uint32_t k = 0; k < s->ndeps; k++)
        if (!x->fired[rank][s->deps[k]]) return 0;
    if (s->recv >= 0 && (x->link_recvd[s->recv_link] != x->recv_ord[rank][i] ||
                         x->fifo[s->recv_link].n == 0))
        return 0;
    for (int j = 0; j < s->nsend; j++)
        if (x->link_sent[s->send_link[j]] != x->send_ord[rank][s->send_link + j - p->links] ||
            x->fifo[s->send_link[j]].n == RUN_FIFO_UNITS)
            return 0;
    return 1;
}

/* value = recv ? (reduce ? recv OP src : recv) : src, for each chunk. */
static dfccl_status_t combine(run_t *x, int rank, uint32_t i, const pf_step_t *s,
                              const uint64_t *in, uint64_t *v)
{
    size_t W = x->words;
    int sb = buffer_index(x, s->src);

    for (uint32_t k = 0; k < s->nchunks; k++) {
        uint32_t c = s->chunk + k;
        uint64_t *out = v + (size_t)k * W;
        const uint64_t *src = x->val + at(x, rank, sb, c) * W;
        if (s->src != DFCCL_BUF_NONE && !x->set[at(x, rank, sb, c)])
            return pf_fail(x->why, "rank %d step %u: reads chunk %u of the %s buffer%s before "
                           "anything is written there", rank, i, c, sb ? "receive" : "send",
                           x->in_place && s->src == DFCCL_BUF_SEND ? " (in place)" : "");
        if (s->recv < 0) {
            memcpy(out, src, W * sizeof(uint64_t));
            continue;
        }
        memcpy(out, in + (size_t)k * W, W * sizeof(uint64_t));
        if (!s->reduce) continue;
        for (size_t w = 0; w < W; w++) {
            uint64_t twice = out[w] & src[w];
            if (twice)
                return pf_fail(x->why, "rank %d step %u: combines rank %d's contribution to "
                               "chunk %u twice (received from rank %d and in its %s buffer%s)",
                               rank, i, (int)(w * 64) + __builtin_ctzll(twice), c, s->recv,
                               sb ? "receive" : "send", x->in_place ? ", in place" : "");
            out[w] |= src[w];
        }
    }
    return DFCCL_OK;
}

/* Runs rank's step i: takes the received unit, writes, sends copies. */
static dfccl_status_t fire(run_t *x, int rank, uint32_t i, const pf_step_t *s)
{
    size_t W = x->words, bytes = (size_t)s->nchunks * W * sizeof(uint64_t);
    uint64_t *in = NULL, *v = malloc(bytes);
    dfccl_status_t status;

    if (v == NULL) return DFCCL_ERR_NO_MEMORY;
    if (s->recv >= 0) {
        run_fifo_t *f = &x->fifo[s->recv_link];
        in = f->unit[0];
        f->unit[0] = f->unit[1];
        f->n--;
        x->link_recvd[s->recv_link]++;
        wake(x, s->recv);   /* it may wait for the room just made */
    }
    status = combine(x, rank, i, s, in, v);
    free(in);
    if (status != DFCCL_OK) {
        free(v);
        return status;
    }
    if (s->dst != DFCCL_BUF_NONE)
        for (uint32_t k = 0; k < s->nchunks; k++) {
            size_t a = at(x, rank, 1, s->chunk + k);
            memcpy(x->val + a * W, v + (size_t)k * W, W * sizeof(uint64_t));
            x->set[a] = 1;
            x->writer[a] = (int32_t)i;
        }
    for (int j = 0; j < s->nsend; j++) {
        run_fifo_t *f = &x->fifo[s->send_link[j]];
        uint64_t *copy = j + 1 == s->nsend ? v : malloc(bytes);
        if (copy == NULL) {
            free(v);
            return DFCCL_ERR_NO_MEMORY;
        }
        if (copy != v) memcpy(copy, v, bytes);
        f->unit[f->n++] = copy;
        x->link_sent[s->send_link[j]]++;
        wake(x, s->send[j]);   /* it may wait for this data */
    }
    if (s->nsend == 0) free(v);
    return DFCCL_OK;
}

static dfccl_status_t report_deadlock(const run_t *x)
{
    char text[1024];
    size_t used = (size_t)snprintf(text, sizeof(text), "deadlock with FIFOs of %d chunks:",
                                   RUN_FIFO_UNITS);
    int n = 0;

    for (int r = 0; r < x->pf->ranks && used < sizeof(text); r++) {
        const pf_program_t *p = &x->pf->programs[r];
        const pf_step_t *s;
        int peer = -1;
        if (x->pc[r] == p->nsteps) continue;
        s = &p->steps[x->pc[r]];   /* its first step not fired: all before it have */
        if (s->recv >= 0 && x->fifo[s->recv_link].n == 0) peer = s->recv;
        for (int j = 0; peer < 0 && j < s->nsend; j++)
            if (x->fifo[s->send_link[j]].n == RUN_FIFO_UNITS) peer = s->send[j];
        if (peer < 0)   /* its own steps before it, or its turn on a connection */
            used += (size_t)snprintf(text + used, sizeof(text) - used, "%s rank %d step %u waits "
                                     "for its turn", n++ ? ";" : "", r, x->pc[r]);
        else
            used += (size_t)snprintf(text + used, sizeof(text) - used, "%s rank %d step %u waits "
                                     "for %s rank %d", n++ ? ";" : "", r, x->pc[r],
                                     peer == s->recv ? "data from" : "room at", peer);
    }
    return pf_fail(x->why, "%s", text);
}

/* What each rank's receive buffer must hold in the end. */
static dfccl_status_t check_result(const run_t *x)
{
    const dfccl_plan_file_t *pf = x->pf;
    uint32_t per = pf_block_chunks(pf);
    size_t W = x->words;
    uint64_t *want = calloc(3 * W, sizeof(uint64_t)), *lack = want + W, *extra = want + 2 * W;
    char have_text[128], lack_text[128], extra_text[128];
    dfccl_status_t status = DFCCL_OK;

    if (want == NULL) return DFCCL_ERR_NO_MEMORY;
    for (int r = 0; r < pf->ranks && status == DFCCL_OK; r++)
        for (uint32_t c = 0; c < pf->chunks && status == DFCCL_OK; c++) {
            size_t a = at(x, r, 1, c);
            if (!pf_buffer_holds(pf, r, DFCCL_BUF_RECV, c)) continue;
            memset(want, 0, W * sizeof(uint64_t));
            if (pf->type == DFCCL_COLL_ALLGATHER) {
                want[(c / per) / 64] = 1ull << ((c / per) % 64);
            } else {
                for (int q = 0; q < pf->ranks; q++) want[q / 64] |= 1ull << (q % 64);
            }
            if (x->set[a] && memcmp(x->val + a * W, want, W * sizeof(uint64_t)) == 0) continue;
            if (!x->set[a] || x->writer[a] < 0) {
                status = pf_fail(x->why, "rank %d: never writes chunk %u of its receive buffer%s",
                                 r, c, x->in_place ? " (in place)" : "");
                break;
            }
            for (size_t w = 0; w < W; w++) {
                lack[w] = want[w] & ~x->val[a * W + w];
                extra[w] = x->val[a * W + w] & ~want[w];
            }
            ranks_text(x->val + a * W, W, pf->ranks, have_text, sizeof(have_text));
            ranks_text(lack, W, pf->ranks, lack_text, sizeof(lack_text));
            ranks_text(extra, W, pf->ranks, extra_text, sizeof(extra_text));
            status = pf_fail(x->why, "rank %d step %u: leaves chunk %u of the receive buffer%s "
                             "with the contributions of ranks %s: %s%s%s%s%s", r, x->writer[a], c,
                             x->in_place ? " (in place)" : "", have_text,
                             strcmp(lack_text, "none") ? "it lacks ranks " : "",
                             strcmp(lack_text, "none") ? lack_text : "",
                             strcmp(lack_text, "none") && strcmp(extra_text, "none") ? " and " : "",
                             strcmp(extra_text, "none") ? "it should not hold ranks " : "",
                             strcmp(extra_text, "none") ? extra_text : "");
        }
    free(want);
    return status;
}

/* Inputs: each rank's own contribution where its input lies. */
static void init_inputs(run_t *x)
{
    const dfccl_plan_file_t *pf = x->pf;
    size_t W = x->words;

    for (int r = 0; r < pf->ranks; r++)
        for (uint32_t c = 0; c < pf->chunks; c++) {
            size_t a = at(x, r, buffer_index(x, DFCCL_BUF_SEND), c);
            x->writer[at(x, r, 0, c)] = x->writer[at(x, r, 1, c)] = -1;
            if (!pf_buffer_holds(pf, r, DFCCL_BUF_SEND, c)) continue;
            x->val[a * W + (size_t)r / 64] = 1ull << (r % 64);
            x->set[a] = 1;
        }
}

static dfccl_status_t run_all(run_t *x)
{
    const dfccl_plan_file_t *pf = x->pf;
    dfccl_status_t status = DFCCL_OK;

    for (int r = 0; r < pf->ranks; r++) wake(x, r);
    while (x->qlen > 0 && status == DFCCL_OK) {
        int r = x->queue[x->qhead];
        const pf_program_t *p = &pf->programs[r];
        x->qhead = (x->qhead + 1) % pf->ranks;
        x->qlen--;
        x->queued[r] = 0;
        /* fire what can fire; firing may let earlier-skipped steps go */
        for (int again = 1; again && status == DFCCL_OK;) {
            again = 0;
            for (uint32_t i = x->pc[r]; i < p->nsteps && status == DFCCL_OK; i++) {
                if (x->fired[r][i] || !ready(x, r, i)) {
                    if (pf->version < 2 && !x->fired[r][i]) break;   /* program order */
                    continue;
                }
                status = fire(x, r, i, &p->steps[i]);
                x->fired[r][i] = 1;
                again = 1;
                while (x->pc[r] < p->nsteps && x->fired[r][x->pc[r]]) x->pc[r]++;
            }
        }
    }
    if (status != DFCCL_OK) return status;
    for (int r = 0; r < pf->ranks; r++)
        if (x->pc[r] < pf->programs[r].nsteps) return report_deadlock(x);
    return check_result(x);
}

/* Per rank: which steps fired, and each step's place on its connections. */
static int alloc_order(run_t *x)
{
    const dfccl_plan_file_t *pf = x->pf;
    uint32_t *sent = x->link_sent, *recvd = x->link_recvd;   /* counting, zeroed after */

    for (int r = 0; r < pf->ranks; r++) {
        const pf_program_t *p = &pf->programs[r];
        size_t sends = 0;
        for (uint32_t i = 0; i < p->nsteps; i++) sends += p->steps[i].nsend;
        x->fired[r] = calloc(p->nsteps ? p->nsteps : 1, 1);
        x->recv_ord[r] = malloc(sizeof(uint32_t) * (p->nsteps ? p->nsteps : 1));
        x->send_ord[r] = malloc(sizeof(uint32_t) * (sends ? sends : 1));
        if (!x->fired[r] || !x->recv_ord[r] || !x->send_ord[r]) return 0;
        for (uint32_t i = 0; i < p->nsteps; i++) {
            const pf_step_t *s = &p->steps[i];
            if (s->recv >= 0) x->recv_ord[r][i] = recvd[s->recv_link]++;
            for (int j = 0; j < s->nsend; j++)
                x->send_ord[r][s->send_link + j - p->links] = sent[s->send_link[j]]++;
        }
    }
    memset(sent, 0, sizeof(uint32_t) * pf->nlinks);
    memset(recvd, 0, sizeof(uint32_t) * pf->nlinks);
    return 1;
}

dfccl_status_t pf_check_run(const dfccl_plan_file_t *pf, int in_place, pf_why_t *why)
{
    run_t x = { .pf = pf, .in_place = in_place, .words = ((size_t)pf->ranks + 63) / 64,
                .why = why };
    size_t chunks = (size_t)pf->ranks * 2 * pf->chunks, nl = pf->nlinks ? pf->nlinks : 1;
    dfccl_status_t status = DFCCL_ERR_NO_MEMORY;

    if (chunks * x.words > RUN_MAX_WORDS)
        return pf_fail(why, "%d ranks x %u chunks is more than the checks can follow", pf->ranks,
                       pf->chunks);
    x.val = calloc(chunks * x.words, sizeof(uint64_t));
    x.set = calloc(chunks, 1);
    x.writer = malloc(sizeof(int32_t) * chunks);
    x.fifo = calloc(nl, sizeof(run_fifo_t));
    x.pc = calloc((size_t)pf->ranks, sizeof(uint32_t));
    x.queue = malloc(sizeof(int) * (size_t)pf->ranks);
    x.queued = calloc((size_t)pf->ranks, sizeof(int));
    x.fired = calloc((size_t)pf->ranks, sizeof(uint8_t *));
    x.send_ord = calloc((size_t)pf->ranks, sizeof(uint32_t *));
    x.recv_ord = calloc((size_t)pf->ranks, sizeof(uint32_t *));
    x.link_sent = calloc(nl, sizeof(uint32_t));
    x.link_recvd = calloc(nl, sizeof(uint32_t));
    if (x.val && x.set && x.writer && x.fifo && x.pc && x.queue && x.queued && x.fired &&
        x.send_ord && x.recv_ord && x.link_sent && x.link_recvd && alloc_order(&x)) {
        init_inputs(&x);
        status = run_all(&x);
    }
    for (uint32_t l = 0; x.fifo != NULL && l < pf->nlinks; l++)
        for (int k = 0; k < x.fifo[l].n; k++) free(x.fifo[l].unit[k]);
    for (int r = 0; r < pf->ranks; r++) {
        if (x.fired) free(x.fired[r]);
        if (x.send_ord) free(x.send_ord[r]);
        if (x.recv_ord) free(x.recv_ord[r]);
    }
    free(x.fired);
    free(x.send_ord);
    free(x.recv_ord);
    free(x.link_sent);
    free(x.link_recvd);
    free(x.val);
    free(x.set);
    free(x.writer);
    free(x.fifo);
    free(x.pc);
    free(x.queue);
    free(x.queued);
    return status;
}
