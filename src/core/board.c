/* board.c - a rank's published identities, progress and failure (board.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "core/board.h"
#include "core/exec_cpu.h"   /* what a blocked collective waits for */

#define BOARD_MAGIC 0xdfcc1b0du

#define LOAD(p)     __atomic_load_n(p, __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n(p, v, __ATOMIC_RELEASE)

void dfccl_board_init(dfccl_board_t *board)
{
    memset(board, 0, sizeof(*board));
    board->pid = (int32_t)getpid();
    STORE(&board->magic, BOARD_MAGIC);
}

static uint64_t counts_digest(const size_t *counts, int size)
{
    uint64_t h = 0xcbf29ce484222325ull;   /* FNV-1a over the counts */

    for (int i = 0; i < size; i++) {
        uint64_t c = counts[i];
        for (int b = 0; b < 8; b++) {
            h ^= (c >> (8 * b)) & 0xff;
            h *= 0x100000001b3ull;
        }
    }
    return h;
}

void dfccl_ident_make(dfccl_ident_t *id, const dfccl_coll_args_t *args, int size,
                      dfccl_status_t rejected)
{
    memset(id, 0, sizeof(*id));
    id->type = (uint8_t)args->type;
    id->dtype = (uint8_t)args->dtype;
    id->op = (uint8_t)args->op;
    id->rejected = rejected != DFCCL_OK ? DFCCL_IDENT_REJECTED : 0;
    id->reason = (int32_t)rejected;
    if (args->type == DFCCL_COLL_REDUCE_SCATTER)
        id->count = args->counts != NULL ? counts_digest(args->counts, size) : 0;
    else
        id->count = args->count;
}

void dfccl_ident_describe(const dfccl_ident_t *id, char *buf, size_t len)
{
    const char *type = id->type < DFCCL_COLL_TYPE_COUNT
                           ? dfccl_coll_type_name((dfccl_coll_type_t)id->type) : "?";
    const char *dtype = id->dtype < DFCCL_DTYPE_COUNT
                            ? dfccl_dtype_name((dfccl_dtype_t)id->dtype) : "?";

    if (id->rejected == DFCCL_IDENT_ELSEWHERE)
        snprintf(buf, len, "%s #%llu (%llu bytes, carried outside the engine)", type,
                 (unsigned long long)id->seq1 - 1, (unsigned long long)id->count);
    else if (id->type == DFCCL_COLL_REDUCE_SCATTER)
        snprintf(buf, len, "%s #%llu (counts digest %016llx, %s, op %s)%s%s", type,
                 (unsigned long long)id->seq1 - 1, (unsigned long long)id->count, dtype,
                 dfccl_op_name((dfccl_op_t)id->op), id->rejected ? ", rejected: " : "",
                 id->rejected ? dfccl_status_string((dfccl_status_t)id->reason) : "");
    else
        snprintf(buf, len, "%s #%llu (%llu x %s%s%s)%s%s", type, (unsigned long long)id->seq1 - 1,
                 (unsigned long long)id->count, dtype,
                 id->type == DFCCL_COLL_ALLGATHER ? "" : ", op ",
                 id->type == DFCCL_COLL_ALLGATHER ? "" : dfccl_op_name((dfccl_op_t)id->op),
                 id->rejected ? ", rejected: " : "",
                 id->rejected ? dfccl_status_string((dfccl_status_t)id->reason) : "");
}

int dfccl_ident_differs(const dfccl_ident_t *mine, const dfccl_ident_t *theirs, char *what,
                        size_t len)
{
    if (mine->rejected == DFCCL_IDENT_ELSEWHERE || theirs->rejected == DFCCL_IDENT_ELSEWHERE) {
        if (mine->rejected != theirs->rejected)
            snprintf(what, len, "one is carried by the engine, the other outside it (the ranks"
                     " took different routes)");
        else if (mine->type != theirs->type)
            snprintf(what, len, "the collective differs");
        else if (mine->count != theirs->count)
            snprintf(what, len, "the byte count differs");
        else
            return 0;
    } else if (theirs->rejected)
        snprintf(what, len, "its call failed there (%s) and moves no data",
                 dfccl_status_string((dfccl_status_t)theirs->reason));
    else if (mine->type != theirs->type)
        snprintf(what, len, "the collective differs");
    else if (mine->count != theirs->count)
        snprintf(what, len, mine->type == DFCCL_COLL_REDUCE_SCATTER ? "the receive counts differ"
                                                                    : "the count differs");
    else if (mine->dtype != theirs->dtype)
        snprintf(what, len, "the datatype differs");
    else if (mine->op != theirs->op)
        snprintf(what, len, "the op differs");
    else
        return 0;
    return 1;
}

void dfccl_board_post(dfccl_board_t *board, uint64_t seq, const dfccl_ident_t *id)
{
    dfccl_ident_t *e = &board->ident[seq % DFCCL_BOARD_IDENTS];

    STORE(&e->seq1, 0);   /* a reader that copies meanwhile sees a changed seq1 */
    e->count = id->count;
    e->type = id->type;
    e->dtype = id->dtype;
    e->op = id->op;
    e->rejected = id->rejected;
    e->reason = id->reason;
    STORE(&e->seq1, seq + 1);
    /* only forward: a mirror of another node's board may hear of two
     * collectives out of order */
    if (LOAD(&board->posted) < seq + 1) STORE(&board->posted, seq + 1);
}

/* Reads of an entry that the posted counter says is there before it is
 * taken as skipped. */
#define DFCCL_BOARD_IDENT_TRIES 8

int dfccl_board_ident(const dfccl_board_t *board, uint64_t seq, dfccl_ident_t *id)
{
    const dfccl_ident_t *e = &board->ident[seq % DFCCL_BOARD_IDENTS];

    for (int tries = 0;; tries++) {
        uint64_t s = LOAD(&e->seq1);

        if (s == seq + 1) {
            id->count = __atomic_load_n(&e->count, __ATOMIC_RELAXED);
            id->type = __atomic_load_n(&e->type, __ATOMIC_RELAXED);
            id->dtype = __atomic_load_n(&e->dtype, __ATOMIC_RELAXED);
            id->op = __atomic_load_n(&e->op, __ATOMIC_RELAXED);
            id->rejected = __atomic_load_n(&e->rejected, __ATOMIC_RELAXED);
            id->reason = __atomic_load_n(&e->reason, __ATOMIC_RELAXED);
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (LOAD(&e->seq1) == seq + 1) {
                id->seq1 = seq + 1;
                return 1;
            }
            continue;   /* rewritten while it was read: look again */
        }
        if (s > seq + 1) return -1;                  /* reused by a later collective */
        if (LOAD(&board->posted) <= seq) return 0;   /* not posted yet */
        /* posted, but the entry was read before its owner finished writing
         * it (its posted counter is stored after the entry): read it again.
         * A few times only: a mirror of another node's board (ucx_link.c)
         * counts what it heard of, and an entry its owner's messages
         * skipped never comes; waiting for it would stop the caller (the
         * GPU proxy's watch) for good. */
        if (tries == DFCCL_BOARD_IDENT_TRIES) return -1;
    }
}

void dfccl_board_break(dfccl_board_t *board, uint64_t seq, dfccl_status_t status, const char *why)
{
    if (LOAD(&board->broken) != 0) return;   /* the first cause is the one to tell */
    snprintf(board->why, sizeof(board->why), "%s", why);
    board->broken_seq = seq;
    STORE(&board->broken, (int32_t)status);
}

int dfccl_board_broken(const dfccl_board_t *board, uint64_t *seq, char *why, size_t len)
{
    int status = LOAD(&board->broken);

    if (status != 0) {
        if (seq != NULL) *seq = board->broken_seq;
        if (why != NULL) snprintf(why, len, "%.*s", DFCCL_BOARD_WHY - 1, board->why);
    }
    return status;
}

void dfccl_board_progress(dfccl_board_t *board, uint64_t seq, uint64_t round, uint32_t step,
                          uint32_t waiting, int peer, uint64_t now_ns)
{
    __atomic_store_n(&board->run_round, round, __ATOMIC_RELAXED);
    __atomic_store_n(&board->run_step, step, __ATOMIC_RELAXED);
    __atomic_store_n(&board->run_waiting, waiting, __ATOMIC_RELAXED);
    __atomic_store_n(&board->run_peer, (int32_t)peer, __ATOMIC_RELAXED);
    __atomic_store_n(&board->heartbeat_ns, now_ns, __ATOMIC_RELAXED);
    STORE(&board->run_seq1, seq + 1);
}

void dfccl_board_done(dfccl_board_t *board, uint64_t done)
{
    STORE(&board->run_seq1, 0);
    STORE(&board->done, done);
}

void dfccl_board_describe(const dfccl_board_t *board, uint64_t seq, uint64_t now_ns, char *buf,
                          size_t len)
{
    uint64_t posted = LOAD(&board->posted), done = LOAD(&board->done);
    uint64_t run = LOAD(&board->run_seq1), beat = LOAD(&board->heartbeat_ns);
    dfccl_ident_t id;
    char what[160] = "";
    int broken = LOAD(&board->broken);

    if (dfccl_board_ident(board, seq, &id) == 1) dfccl_ident_describe(&id, what, sizeof(what));
    if (broken != 0) {
        snprintf(buf, len, "broke at #%llu: %.200s", (unsigned long long)board->broken_seq,
                 board->why);
    } else if (posted <= seq) {
        snprintf(buf, len, "has not posted #%llu (posted %llu collectives on this communicator,"
                 " ended %llu)", (unsigned long long)seq, (unsigned long long)posted,
                 (unsigned long long)done);
    } else if (done > seq) {
        snprintf(buf, len, "ended %s", what[0] ? what : "it");
    } else if (run == seq + 1) {
        uint32_t waiting = LOAD(&board->run_waiting);
        snprintf(buf, len, "runs %s: step %u, round %llu, %s rank %d (last turn %.1f ms ago)",
                 what[0] ? what : "it", LOAD(&board->run_step) + 1,
                 (unsigned long long)LOAD(&board->run_round) + 1,
                 waiting == DFCCL_WAIT_SEND ? "waiting for a free slot at"
                 : waiting == DFCCL_WAIT_RECV ? "waiting for data from" : "last moved with",
                 LOAD(&board->run_peer), beat && now_ns > beat ? (double)(now_ns - beat) / 1e6 : 0.0);
    } else {
        snprintf(buf, len, "posted %s, still behind #%llu of this communicator",
                 what[0] ? what : "it", (unsigned long long)done);
    }
}

int dfccl_process_alive(pid_t pid)
{
    char path[64], line[512], *end;
    FILE *f;
    int alive = 1;

    if (pid <= 0) return 1;   /* unknown: never declared dead */
    if (kill(pid, 0) != 0 && errno == ESRCH) return 0;
    /* a killed process lingers as a zombie until its parent reaps it */
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) return 1;
    if (fgets(line, sizeof(line), f) != NULL && (end = strrchr(line, ')')) != NULL &&
        end[1] == ' ' && (end[2] == 'Z' || end[2] == 'X'))
        alive = 0;
    fclose(f);
    return alive;
}
