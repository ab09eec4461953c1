/*
 * test_net_at.c - links over FIFO memory the caller provides
 * (dfccl_net_link_open_at), as the GPU backend opens them over pinned host
 * memory that its kernel maps: here the test itself plays the kernel. One
 * process links to itself (UCX's loopback): a sending link and a receiving
 * link whose tags meet. The sender fills slots (bytes and lengths) and
 * publishes the tail; the pump sends them, the receiver's tail shows them,
 * and the sender's head frees them again, past several wraps of the ring.
 * Then both close, and each must say that our memory is free. Twice: on a
 * net opened for the tagged protocol, then on one opened for RMA, where
 * such links take the tagged path all the same (net.h says why).
 * Built where the engine has UCX; the network sources are built in, as the
 * library does not export them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "transport/net.h"

#define SLOT_BYTES 4096u
#define NSLOTS     4u
#define ROUNDS     (5u * NSLOTS + 1u)

static int failures;

#define EXPECT(cond, ...)                                                \
    do {                                                                 \
        if (!(cond)) {                                                   \
            fprintf(stderr, "test_net_at: FAIL line %d: ", __LINE__);   \
            fprintf(stderr, __VA_ARGS__);                                \
            fprintf(stderr, "\n");                                       \
            failures++;                                                  \
        }                                                                \
    } while (0)

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Pumps until *word reaches want (atomic), at most 10 s; 1 when it did. */
static int pump_until(dfccl_net_t *net, volatile uint64_t *word, uint64_t want)
{
    double until = now_s() + 10.0;
    while (__atomic_load_n(word, __ATOMIC_ACQUIRE) < want) {
        if (now_s() > until) return 0;
        dfccl_net_progress(net);
    }
    return 1;
}

static int pump_until_released(dfccl_net_t *net, const int *flag)
{
    double until = now_s() + 10.0;
    while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE)) {
        if (now_s() > until) return 0;
        dfccl_net_progress(net);
    }
    return 1;
}

/* One net and its two links; 77 when UCX cannot start here. */
static int run(dfccl_net_protocol_t protocol, const char *name)
{
    dfccl_net_t *net = NULL;
    char addr[DFCCL_NET_ADDR_MAX];
    size_t addr_len = 0;
    uint32_t ids;
    int broken = 0, released_send = 0, released_recv = 0;
    dfccl_board_t board, *mirror_s, *mirror_r;
    dfccl_net_link_params_t p;
    dfccl_fifo_t out, in;
    dfccl_net_link_t *ls = NULL, *lr = NULL;
    size_t send_bytes = dfccl_net_fifo_bytes(SLOT_BYTES, NSLOTS, 1);
    size_t recv_bytes = dfccl_net_fifo_bytes(SLOT_BYTES, NSLOTS, 0);
    char *send_mem = aligned_alloc(256, (send_bytes + 255) / 256 * 256);
    char *recv_mem = aligned_alloc(256, (recv_bytes + 255) / 256 * 256);

    EXPECT(send_bytes == sizeof(dfccl_fifo_ctrl_t) + SLOT_BYTES * NSLOTS + NSLOTS * 4,
           "send side takes %zu bytes", send_bytes);
    if (send_mem == NULL || recv_mem == NULL) {
        EXPECT(0, "out of memory");
        return 1;
    }
    if (dfccl_net_open(&net, protocol, 0, NULL) != DFCCL_OK ||
        dfccl_net_address(net, addr, sizeof(addr), &addr_len) != DFCCL_OK) {
        printf("SKIP: UCX could not be started here (%s net)\n", name);
        free(send_mem);
        free(recv_mem);
        return 77;
    }
    ids = dfccl_net_link_ids(net, 2);
    dfccl_board_init(&board);
    memset(send_mem, 0x5a, send_bytes);   /* open_at must clear the counters */
    memset(recv_mem, 0x5a, recv_bytes);
    memset(&p, 0, sizeof(p));
    p.addr = addr;
    p.addr_len = addr_len;
    p.host = "self";
    p.slot_bytes = SLOT_BYTES;
    p.nslots = NSLOTS;
    p.broken = &broken;
    p.board = &board;
    /* the sender tags its slots with the receiver's id, and the other way */
    p.peer = 1;
    p.id_in = ids;
    p.id_out = ids + 1;
    p.sends = 1;
    p.released = &released_send;
    EXPECT(dfccl_net_link_open_at(net, &p, send_mem, NULL, &out, NULL, &mirror_s, &ls) ==
               DFCCL_OK, "sending link");
    p.peer = 0;
    p.id_in = ids + 1;
    p.id_out = ids;
    p.sends = 0;
    p.receives = 1;
    p.released = &released_recv;
    EXPECT(dfccl_net_link_open_at(net, &p, NULL, recv_mem, NULL, &in, &mirror_r, &lr) ==
               DFCCL_OK, "receiving link");
    if (failures) return 1;
    /* the views lie in our memory, laid out as dfccl_net_fifo_bytes says */
    EXPECT((char *)out.ctrl == send_mem && out.slots == send_mem + sizeof(dfccl_fifo_ctrl_t) &&
           (char *)out.lens == out.slots + SLOT_BYTES * NSLOTS, "sending view");
    EXPECT((char *)in.ctrl == recv_mem && in.slots == recv_mem + sizeof(dfccl_fifo_ctrl_t) &&
           in.lens == NULL, "receiving view");
    EXPECT(out.ctrl->tail == 0 && out.ctrl->head == 0 && in.ctrl->tail == 0 &&
           in.ctrl->head == 0, "counters cleared");
    for (uint32_t k = 0; k < ROUNDS && !failures; k++) {
        uint32_t len = 16 + (k * 997) % (SLOT_BYTES - 16);
        char *slot = dfccl_fifo_slot(&out, out.count), *got;
        /* a free slot: the pump gave it back once its send was done */
        EXPECT(pump_until(net, &out.ctrl->head, out.count + 1 > NSLOTS ? out.count + 1 - NSLOTS
                                                                          : 0),
               "slot %u never freed (head %llu)", k, (unsigned long long)out.ctrl->head);
        for (uint32_t i = 0; i < len; i++) slot[i] = (char)(k * 31 + i);
        out.lens[out.count % NSLOTS] = len;
        __atomic_store_n(&out.ctrl->tail, ++out.count, __ATOMIC_RELEASE);
        EXPECT(pump_until(net, &in.ctrl->tail, in.count + 1), "slot %u never arrived", k);
        got = dfccl_fifo_slot(&in, in.count);
        for (uint32_t i = 0; i < len && !failures; i++)
            EXPECT(got[i] == (char)(k * 31 + i), "slot %u byte %u: %d", k, i, got[i]);
        __atomic_store_n(&in.ctrl->head, ++in.count, __ATOMIC_RELEASE);
    }
    EXPECT(pump_until(net, &out.ctrl->head, out.count), "the last sends never ended");
    EXPECT(!released_send && !released_recv, "memory released while the links are open");
    dfccl_net_link_close(net, ls);
    dfccl_net_link_close(net, lr);
    EXPECT(pump_until_released(net, &released_send), "the sending link kept our memory");
    EXPECT(pump_until_released(net, &released_recv), "the receiving link kept our memory");
    dfccl_net_close(net);
    free(send_mem);
    free(recv_mem);
    printf("test_net_at: %u slots through caller memory, %s net: %s\n", ROUNDS, name,
           failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}

int main(void)
{
    char why[160];
    int rc;

    if (!dfccl_net_available(why, sizeof(why))) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    rc = run(DFCCL_NET_TAGGED, "tagged");
    if (rc != 0) return rc;
    return run(DFCCL_NET_RMA, "RMA");
}
