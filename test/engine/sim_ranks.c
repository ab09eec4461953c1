/* sim_ranks.c - forked ranks, a shared-memory allgather, inputs and references. */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "core/reduce.h"
#include "sim_ranks.h"

#define SIM_SLOT_BYTES 4096
/* Exchanges of the non-blocking bootstrap that may be under way at once. */
#define SIM_AREAS 4

/* One exchange of the non-blocking bootstrap: serves exchange number gen;
 * the last rank to leave it hands it to exchange gen + SIM_AREAS. */
typedef struct {
    uint64_t gen;
    int      arrived, departed;
} sim_area_t;

struct sim_world {
    pthread_barrier_t barrier;
    int               size;
    sim_area_t        areas[SIM_AREAS];
    char              slots[][SIM_SLOT_BYTES];   /* size for sim_allgather, then
                                                    SIM_AREAS x size for the areas */
};

typedef struct {
    int      area;
    uint64_t gen;
    void    *recv;
    size_t   bytes;
} sim_request_t;

static int sim_rank;             /* each forked rank sets its own copy */
static uint64_t sim_exchanges;   /* this rank's bootstrap exchanges so far */

static char *sim_area_block(sim_world_t *w, int area, int rank)
{
    return w->slots[w->size * (1 + area) + rank];
}

static int sim_exchange_start(void *arg, const void *send, void *recv, size_t bytes,
                              void **request_p)
{
    sim_world_t *w = arg;
    sim_request_t *req = malloc(sizeof(*req));
    uint64_t gen = sim_exchanges++;
    int a = (int)(gen % SIM_AREAS);

    if (req == NULL || bytes > SIM_SLOT_BYTES) {
        free(req);
        return -1;
    }
    /* the area is free once every rank left its previous exchange */
    while (__atomic_load_n(&w->areas[a].gen, __ATOMIC_ACQUIRE) != gen) sched_yield();
    memcpy(sim_area_block(w, a, sim_rank), send, bytes);
    __atomic_add_fetch(&w->areas[a].arrived, 1, __ATOMIC_ACQ_REL);
    *req = (sim_request_t){ a, gen, recv, bytes };
    *request_p = req;
    return 0;
}

static int sim_exchange_test(void *arg, void *request)
{
    sim_world_t *w = arg;
    sim_request_t *req = request;
    sim_area_t *area = &w->areas[req->area];

    if (__atomic_load_n(&area->arrived, __ATOMIC_ACQUIRE) < w->size) return 0;
    for (int r = 0; r < w->size; r++)
        memcpy((char *)req->recv + (size_t)r * req->bytes, sim_area_block(w, req->area, r),
               req->bytes);
    if (__atomic_add_fetch(&area->departed, 1, __ATOMIC_ACQ_REL) == w->size) {
        area->arrived = 0;
        area->departed = 0;
        __atomic_store_n(&area->gen, req->gen + SIM_AREAS, __ATOMIC_RELEASE);
    }
    free(req);
    return 1;
}

static void sim_exchange_cancel(void *arg, void *request)
{
    (void)arg;
    free(request);   /* the others may still read our block: it stays */
}

dfccl_comm_params_t sim_comm_params(sim_world_t *world, int rank, uint64_t key,
                                    dfccl_backend_t backend)
{
    dfccl_comm_params_t p;

    memset(&p, 0, sizeof(p));
    p.rank = rank;
    p.size = world->size;
    p.key = key;
    p.backend = backend;
    p.bootstrap.allgather_start = sim_exchange_start;
    p.bootstrap.allgather_test = sim_exchange_test;
    p.bootstrap.allgather_cancel = sim_exchange_cancel;
    p.bootstrap.arg = world;
    return p;
}

int sim_allgather(const void *send, void *recv, size_t bytes, void *arg)
{
    sim_world_t *w = arg;

    if (bytes > SIM_SLOT_BYTES) return -1;
    memcpy(w->slots[sim_rank], send, bytes);
    pthread_barrier_wait(&w->barrier);
    for (int r = 0; r < w->size; r++) memcpy((char *)recv + (size_t)r * bytes, w->slots[r], bytes);
    pthread_barrier_wait(&w->barrier);
    return 0;
}

int sim_run(int size, double timeout_sec,
            int (*body)(int rank, int size, sim_world_t *world, void *arg), void *arg)
{
    size_t bytes = sizeof(sim_world_t) + (size_t)size * (1 + SIM_AREAS) * SIM_SLOT_BYTES;
    sim_world_t *w = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pthread_barrierattr_t attr;
    pid_t *pids = calloc((size_t)size, sizeof(pid_t));
    int failed = 0, left = size;
    struct timespec start, now;

    if (w == MAP_FAILED || pids == NULL) return size;
    w->size = size;
    for (int a = 0; a < SIM_AREAS; a++) w->areas[a].gen = (uint64_t)a;
    pthread_barrierattr_init(&attr);
    pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&w->barrier, &attr, (unsigned)size);
    fflush(NULL);
    for (int r = 0; r < size; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            sim_rank = r;
            _exit(body(r, size, w, arg) ? 1 : 0);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (left > 0) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            left--;
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed++;
            continue;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((double)(now.tv_sec - start.tv_sec) + 1e-9 * (double)(now.tv_nsec - start.tv_nsec) >
            timeout_sec) {
            fprintf(stderr, "sim_run: ranks still running after %.0f s: killing them\n", timeout_sec);
            for (int r = 0; r < size; r++) kill(pids[r], SIGKILL);
        }
        usleep(1000);
    }
    pthread_barrier_destroy(&w->barrier);
    munmap(w, bytes);
    free(pids);
    return failed;
}

/* small values keep SUM and PROD exact in every type over <= 16 ranks */
static int64_t sim_value(dfccl_op_t op, int rank, size_t i, int is_signed)
{
    switch (op) {
    case DFCCL_OP_PROD:
        if ((i + (size_t)rank) % 11 == 0) return 2;
        return (is_signed && (i * 3 + (size_t)rank) % 13 == 0) ? -1 : 1;
    case DFCCL_OP_LAND: case DFCCL_OP_LOR: case DFCCL_OP_LXOR:
        return (int64_t)((i * 7 + (size_t)rank * 5) % 3);      /* 0, 1, 2 */
    case DFCCL_OP_BAND: case DFCCL_OP_BOR: case DFCCL_OP_BXOR:
        return (int64_t)((i * 2654435761u + (size_t)rank * 40503u) & 0x7f);
    default:  /* SUM, MIN, MAX, NONE */
        return (int64_t)((i * 7 + (size_t)rank * 3) % 16) - (is_signed ? 8 : 0);
    }
}

static int dtype_signed(dfccl_dtype_t t)
{
    return t == DFCCL_INT8 || t == DFCCL_INT16 || t == DFCCL_INT32 || t == DFCCL_INT64 ||
           t == DFCCL_FLOAT || t == DFCCL_DOUBLE || t == DFCCL_FLOAT16 || t == DFCCL_BFLOAT16;
}

static void sim_store(void *buf, size_t i, dfccl_dtype_t t, int64_t v)
{
    switch (t) {
    case DFCCL_INT8: case DFCCL_UINT8: case DFCCL_BYTE: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case DFCCL_BOOL: ((uint8_t *)buf)[i] = v != 0; break;
    case DFCCL_INT16: case DFCCL_UINT16: ((uint16_t *)buf)[i] = (uint16_t)v; break;
    case DFCCL_INT32: case DFCCL_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case DFCCL_INT64: case DFCCL_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case DFCCL_FLOAT: ((float *)buf)[i] = (float)v; break;
    case DFCCL_DOUBLE: ((double *)buf)[i] = (double)v; break;
    case DFCCL_FLOAT16: ((uint16_t *)buf)[i] = dfccl_fp16_from_float((float)v); break;
    case DFCCL_BFLOAT16: ((uint16_t *)buf)[i] = dfccl_bf16_from_float((float)v); break;
    default: break;
    }
}

void sim_fill_input(void *buf, size_t count, dfccl_dtype_t dtype, dfccl_op_t op, int rank,
                    size_t first_index)
{
    int sgn = dtype_signed(dtype);
    for (size_t i = 0; i < count; i++)
        sim_store(buf, i, dtype, sim_value(op, rank, first_index + i, sgn));
}

/* Reference computed in int64 without the engine's reduction code. */
void sim_expected(void *out, dfccl_dtype_t dtype, dfccl_op_t op, int size, size_t index)
{
    int sgn = dtype_signed(dtype);
    int64_t acc = sim_value(op, 0, index, sgn), nonzero = 0;

    if (dtype == DFCCL_BOOL) acc = acc != 0;
    for (int r = 0; r < size; r++) {
        int64_t v = sim_value(op, r, index, sgn);
        if (dtype == DFCCL_BOOL) v = v != 0;
        nonzero += v != 0;
        if (r == 0) continue;
        switch (op) {
        case DFCCL_OP_SUM:  acc += v; break;
        case DFCCL_OP_PROD: acc *= v; break;
        case DFCCL_OP_MIN:  acc = v < acc ? v : acc; break;
        case DFCCL_OP_MAX:  acc = v > acc ? v : acc; break;
        case DFCCL_OP_BAND: acc &= v; break;
        case DFCCL_OP_BOR:  acc |= v; break;
        case DFCCL_OP_BXOR: acc ^= v; break;
        default: break;
        }
    }
    /* one rank: MPI returns the input itself, no operator applied */
    if (size > 1 && op == DFCCL_OP_LAND) acc = nonzero == size;
    if (size > 1 && op == DFCCL_OP_LOR)  acc = nonzero > 0;
    if (size > 1 && op == DFCCL_OP_LXOR) acc = nonzero & 1;
    sim_store(out, 0, dtype, acc);
}

int sim_gpu_usable(void)
{
    pid_t pid = fork();
    int status = 0;

    if (pid == 0) {   /* asked in a child: the parent forks the ranks without CUDA state */
        char why[256];
        int ok = dfccl_gpu_available(why, sizeof(why));
        if (!ok) printf("SKIP: %s\n", why);
        _exit(ok ? 0 : 1);
    }
    if (pid < 0 || waitpid(pid, &status, 0) < 0) return 0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int sim_three_alloc(sim_three_t *t, int rank, int size, size_t n, const size_t *rs_counts,
                    size_t total, dfccl_op_t rs_op)
{
    memset(t, 0, sizeof(*t));
    t->ar_in = malloc((n + 1) * 8);
    t->ar_out = malloc((n + 1) * 8);
    t->ag_in = malloc((n + 1) * 4);
    t->ag_out = malloc((n * (size_t)size + 1) * 4);
    t->rs_in = malloc((total + 1) * 8);
    t->rs_out = malloc((total + 1) * 8);
    t->rs_op = rs_op;
    if (!t->ar_in || !t->ar_out || !t->ag_in || !t->ag_out || !t->rs_in || !t->rs_out) {
        sim_three_free(t);
        return 1;
    }
    sim_fill_input(t->ar_in, n, DFCCL_DOUBLE, DFCCL_OP_SUM, rank, 0);
    sim_fill_input(t->ag_in, n, DFCCL_INT32, DFCCL_OP_NONE, rank, (size_t)rank * n);
    sim_fill_input(t->rs_in, total, DFCCL_INT64, rs_op, rank, 0);
    t->args[0] = (dfccl_coll_args_t){ .type = DFCCL_COLL_ALLREDUCE, .sendbuf = t->ar_in,
                                      .recvbuf = t->ar_out, .count = n, .dtype = DFCCL_DOUBLE,
                                      .op = DFCCL_OP_SUM };
    t->args[1] = (dfccl_coll_args_t){ .type = DFCCL_COLL_ALLGATHER, .sendbuf = t->ag_in,
                                      .recvbuf = t->ag_out, .count = n, .dtype = DFCCL_INT32,
                                      .op = DFCCL_OP_NONE };
    t->args[2] = (dfccl_coll_args_t){ .type = DFCCL_COLL_REDUCE_SCATTER, .sendbuf = t->rs_in,
                                      .recvbuf = t->rs_out, .counts = rs_counts,
                                      .dtype = DFCCL_INT64, .op = rs_op };
    return 0;
}

void sim_three_free(sim_three_t *t)
{
    free(t->ar_in); free(t->ar_out); free(t->ag_in); free(t->ag_out); free(t->rs_in);
    free(t->rs_out);
    memset(t, 0, sizeof(*t));
}

int sim_three_check(const sim_three_t *t, int rank, int size, size_t n, const size_t *rs_counts)
{
    size_t displ = 0;

    for (int r = 0; r < rank; r++) displ += rs_counts[r];
    for (size_t i = 0; i < n; i++) {
        double e;
        int32_t g;
        sim_expected(&e, DFCCL_DOUBLE, DFCCL_OP_SUM, size, i);
        CHECK(t->ar_out[i] == e, "allreduce n=%zu [%zu] %g != %g", n, i, t->ar_out[i], e);
        for (int r = 0; r < size; r++) {
            sim_fill_input(&g, 1, DFCCL_INT32, DFCCL_OP_NONE, r, (size_t)r * n + i);
            CHECK(t->ag_out[(size_t)r * n + i] == g, "allgather n=%zu from rank %d [%zu]", n, r,
                  i);
        }
    }
    for (size_t i = 0; i < rs_counts[rank]; i++) {
        int64_t e;
        sim_expected(&e, DFCCL_INT64, t->rs_op, size, displ + i);
        CHECK(t->rs_out[i] == e, "reduce_scatter n=%zu [%zu]", n, i);
    }
    return 0;
}

int sim_own_segments(void)
{
    char prefix[32];
    struct dirent *e;
    DIR *d = opendir("/dev/shm");
    int n = 0;

    snprintf(prefix, sizeof(prefix), "dfccl-%d-", (int)getpid());
    if (d == NULL) return 0;
    while ((e = readdir(d)) != NULL) n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}
