/*
 * test_net_at.c - links over FIFO memory the caller provides
 * (dfccl_net_link_open_at), as the GPU backend opens them over pinned host
 * memory that its kernel maps: here the test itself plays the kernel. One
 * process links to itself (UCX's loopback): a sending link and a receiving
 * link whose tags meet. The sender fills slots (bytes and lengths) and
 * publishes the tail; the pump sends them, the receiver's tail shows them,
 * and the sender's head frees them again, past several wraps of the ring.
 * Then both close, and each must say that our memory is free. Four ways:
 * on a net opened for the tagged protocol, with the slots in place and
 * apart from the counters (as the GPU side's slots in device memory); on
 * one opened for RMA, where such links take the tagged path unless the
 * memory is a registered region, and then puts into it, the counters
 * coming back through the credit word. The run with the slots apart sets
 * the net's progress guard (as the GPU side does for slots in device
 * memory): every pump and close must run inside it, each leave given its
 * enter's result, and none once the guard is cleared.
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

/* The progress guard's calls: enter hands out a token, leave must get the
 * same one back, and nothing may nest. */
static struct {
    int entered, left, wrong, inside;
} guard;

static int guard_enter(void *arg)
{
    if (arg != &guard || guard.inside) guard.wrong++;
    guard.inside = 1;
    return 1000 + guard.entered++;
}

static void guard_leave(void *arg, int entered)
{
    if (arg != &guard || !guard.inside || entered != 1000 + guard.left) guard.wrong++;
    guard.inside = 0;
    guard.left++;
}

/* How a run lays out and opens its links. */
typedef enum { AT_TAGGED, AT_APART, AT_RMA_TAGGED, AT_RMA_REGION } at_mode_t;

static const char *const mode_names[] = { "tagged net", "tagged net, slots apart",
                                          "RMA net, no region (tagged)",
                                          "RMA net, registered region" };

/* One net and its two links; 77 when UCX cannot start here. The region
 * mode's memory: the sending FIFO, the receiving one, the credit word. */
static int run(at_mode_t mode)
{
    dfccl_net_t *net = NULL;
    char addr[DFCCL_NET_ADDR_MAX], key[DFCCL_NET_KEY_MAX];
    size_t addr_len = 0, key_len = 0;
    uint32_t ids;
    int broken = 0, released_send = 0, released_recv = 0;
    int apart = mode == AT_APART, region_mode = mode == AT_RMA_REGION;
    dfccl_board_t board, *mirror_s, *mirror_r;
    dfccl_net_link_params_t p;
    dfccl_fifo_t out, in;
    dfccl_net_link_t *ls = NULL, *lr = NULL;
    dfccl_net_region_t *region = NULL;
    size_t inline_bytes = apart ? 0 : SLOT_BYTES;
    size_t send_bytes = (dfccl_net_fifo_bytes(inline_bytes, NSLOTS, 1) + 255) / 256 * 256;
    size_t recv_bytes = (dfccl_net_fifo_bytes(inline_bytes, NSLOTS, 0) + 255) / 256 * 256;
    size_t all_bytes = send_bytes + recv_bytes + 256;
    char *mem = aligned_alloc(256, all_bytes), *send_mem = mem, *recv_mem = mem + send_bytes;
    char *slots = apart ? aligned_alloc(256, 2 * SLOT_BYTES * NSLOTS) : NULL;
    uint64_t *credit = (uint64_t *)(mem + send_bytes + recv_bytes);

    EXPECT(dfccl_net_fifo_bytes(SLOT_BYTES, NSLOTS, 1) ==
               sizeof(dfccl_fifo_ctrl_t) + SLOT_BYTES * NSLOTS + NSLOTS * 4,
           "send side takes %zu bytes", dfccl_net_fifo_bytes(SLOT_BYTES, NSLOTS, 1));
    if (mem == NULL || (apart && slots == NULL)) {
        EXPECT(0, "out of memory");
        return 1;
    }
    if (dfccl_net_open(&net, mode >= AT_RMA_TAGGED ? DFCCL_NET_RMA : DFCCL_NET_TAGGED, 0, NULL) !=
            DFCCL_OK ||
        dfccl_net_address(net, addr, sizeof(addr), &addr_len) != DFCCL_OK) {
        printf("SKIP: UCX could not be started here (%s)\n", mode_names[mode]);
        free(mem);
        free(slots);
        return 77;
    }
    EXPECT(dfccl_net_cuda_memory(net) == 0 || dfccl_net_cuda_memory(net) == 1, "CUDA memory flag");
    ids = dfccl_net_link_ids(net, 2);
    memset(&guard, 0, sizeof(guard));
    if (apart) dfccl_net_guard_progress(net, guard_enter, guard_leave, &guard);
    dfccl_board_init(&board);
    /* open_at must clear the counters where the peer cannot put yet; a
     * region is zeroed by its owner before any peer knows it */
    memset(mem, region_mode ? 0 : 0x5a, all_bytes);
    memset(&p, 0, sizeof(p));
    if (region_mode) {
        EXPECT(dfccl_net_region_open_at(net, mem, all_bytes, &region) == DFCCL_OK, "region");
        EXPECT(region != NULL &&
                   dfccl_net_region_key(net, region, key, sizeof(key), &key_len) == DFCCL_OK &&
                   key_len > 0, "region key");
        if (failures) return 1;
        p.region = region;
        p.peer_key = key;
        p.peer_key_len = key_len;
        p.credit_off = (size_t)((char *)credit - mem);
        p.peer_fifo = (uint64_t)(uintptr_t)recv_mem;   /* the peer is ourselves */
        p.peer_credit = (uint64_t)(uintptr_t)credit;
    }
    p.addr = addr;
    p.addr_len = addr_len;
    p.host = "self";
    p.slot_bytes = SLOT_BYTES;
    p.nslots = NSLOTS;
    p.broken = &broken;
    p.board = &board;
    if (apart) {
        p.send_slots = slots;
        p.recv_slots = slots + SLOT_BYTES * NSLOTS;
    }
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
    EXPECT((char *)out.ctrl == send_mem &&
               out.slots == (apart ? slots : send_mem + sizeof(dfccl_fifo_ctrl_t)) &&
               (char *)out.lens == send_mem + dfccl_fifo_bytes(inline_bytes, NSLOTS),
           "sending view");
    EXPECT((char *)in.ctrl == recv_mem &&
               in.slots == (apart ? slots + SLOT_BYTES * NSLOTS
                                  : recv_mem + sizeof(dfccl_fifo_ctrl_t)) &&
               in.lens == NULL, "receiving view");
    EXPECT(out.ctrl->tail == 0 && out.ctrl->head == 0 && in.ctrl->tail == 0 &&
           in.ctrl->head == 0, "counters cleared");
    for (uint32_t k = 0; k < ROUNDS && !failures; k++) {
        uint32_t len = 16 + (k * 997) % (SLOT_BYTES - 16);
        char *slot = dfccl_fifo_slot(&out, out.count), *got;
        /* a free slot: the pump gave it back once its send was done (RMA:
         * and the receiver's head, through the credit word, passed it) */
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
    if (region_mode)
        EXPECT(__atomic_load_n(credit, __ATOMIC_ACQUIRE) == in.count,
               "the credit word says %llu, the receiver drained %llu",
               (unsigned long long)*credit, (unsigned long long)in.count);
    EXPECT(!released_send && !released_recv, "memory released while the links are open");
    dfccl_net_link_close(net, ls);
    dfccl_net_link_close(net, lr);
    EXPECT(pump_until_released(net, &released_send), "the sending link kept our memory");
    EXPECT(pump_until_released(net, &released_recv), "the receiving link kept our memory");
    /* the caller's reference last: the memory is ours again, not freed */
    if (region != NULL) dfccl_net_region_close(net, region);
    if (apart) {
        int before = guard.entered;
        EXPECT(guard.entered > 0 && guard.entered == guard.left && guard.wrong == 0 &&
                   !guard.inside, "progress guard: %d enters, %d leaves, %d wrong",
               guard.entered, guard.left, guard.wrong);
        dfccl_net_guard_progress(net, NULL, NULL, NULL);
        dfccl_net_progress(net);
        EXPECT(guard.entered == before, "the cleared guard was still entered");
    } else {
        EXPECT(guard.entered == 0, "a guard nobody set was entered");
    }
    dfccl_net_close(net);
    memset(mem, 0, all_bytes);
    free(mem);
    free(slots);
    printf("test_net_at: %u slots through caller memory, %s: %s\n", ROUNDS, mode_names[mode],
           failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}

int main(void)
{
    char why[160];

    if (!dfccl_net_available(why, sizeof(why))) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    for (int mode = AT_TAGGED; mode <= AT_RMA_REGION; mode++) {
        int rc = run((at_mode_t)mode);
        if (rc != 0) return rc;
    }
    return 0;
}
