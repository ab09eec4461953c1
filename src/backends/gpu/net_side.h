/*
 * net_side.h - a GPU communicator whose ranks are on several nodes: which
 * ranks share ours, and the FIFOs to and from a ring neighbour on another
 * node, which live in pinned host memory that the daemon kernel maps and
 * the proxy thread moves over the network (net.h), as NCCL's network proxy
 * does where the network cannot reach GPU memory.
 *
 * The kernel sees such a FIFO as any other: the sending side's FIFO is a
 * local shadow that the kernel fills and whose slots the link sends (the
 * bytes written, from the FIFO's lens); the receiving side's is the one the
 * link receives into and the kernel drains. The counters keep their
 * meaning, so the executor and its waits are unchanged.
 *
 * Set-up (comm_setup.c calls these): the hellos carry every rank's node
 * label; connect learns the nodes, allocates the host FIFOs and our block
 * of link ids; a second exchange carries the worker addresses and link
 * ids; then one link per channel and connection that crosses nodes (on
 * channel 0 alone for the latency algorithm's partners). Link ids, which
 * both ends compute from the ranks' nodes: gpu_net_link in net_side.c.
 */
#ifndef DFCCL_GPU_NET_SIDE_H
#define DFCCL_GPU_NET_SIDE_H

#include "backends/gpu/setup_hello.h"
#include "backends/gpu/state.h"

/* Every rank's node from the hellos (node_split applied) into gc->node, in
 * the room begin made. Sets gc->spans and the ring's neighbours
 * (gc->ring_prev, ring_next, node by node); the same on every rank, and it
 * cannot fail. */
void gpu_net_nodes(dfccl_comm_t *comm, const gpu_hello_t *all);
/* Where a ring neighbour is on another node: the network side (host FIFOs
 * for gc->nchannels channels, the context's net, link ids). The hosts'
 * names come from the hellos, for messages. */
dfccl_status_t gpu_net_begin(dfccl_comm_t *comm, dfccl_gpu_t *g, const gpu_hello_t *all);
/* The addresses exchange (backend_ops.h): bytes per rank (0 unless the
 * communicator spans nodes), this rank's part, and the links, whose FIFOs
 * (device addresses) go into dev. */
size_t gpu_net_address_bytes(const dfccl_comm_t *comm);
void gpu_net_address(dfccl_comm_t *comm, dfccl_status_t status, void *out);
dfccl_status_t gpu_net_connect(dfccl_comm_t *comm, const void *addresses,
                               dfccl_gpu_comm_dev_t *dev);
/* Closes the links and hands the memory to the proxy, which frees it once
 * no link uses it (gpu_net_reap). Any thread; the kernel no longer uses
 * the communicator. */
void gpu_net_close(dfccl_gpu_t *g, dfccl_gpu_comm_t *gc);

/* Proxy thread: moves what is ready on the context's links while any
 * communicator has a network side; 1 while sends are under way (the proxy
 * keeps pumping rather than sleep). What moved while the kernel is out
 * relaunches it at once. */
int  gpu_net_pump(dfccl_gpu_t *g);
/* For the watch (peer_watch.h): whether a link of the side failed, or its
 * peer told that its communicator broke, and why, naming the rank and
 * host; and, once ours failed (rank: ours), telling the peers on other
 * nodes through our links. */
int  gpu_net_side_failed(const struct gpu_net_side *side, char *why, size_t len);
void gpu_net_side_break(struct gpu_net_side *side, int rank, const char *why);
/* For the watch's comparison of calls across nodes (ident_check.h): tells
 * the peers on other nodes, over channel 0's link of every connection, the
 * identity of each collective our board holds from *posted on (advancing
 * it); and gives their boards as those links tell them, one per peer
 * (returns how many, at most max). */
void gpu_net_side_post_idents(struct gpu_net_side *side, const dfccl_board_t *board,
                              uint64_t *posted);
int  gpu_net_side_boards(const struct gpu_net_side *side, const dfccl_board_t **boards,
                         int *ranks, int max);
/* Proxy thread, the kernel out: frees closed sides whose links are done. */
void gpu_net_reap(dfccl_gpu_t *g);
/* Proxy thread, at its end: waits a bounded time for closed links to let
 * their memory go, pumping; what a link still holds then stays allocated
 * (a request that never ended may yet touch it). */
void gpu_net_fini(dfccl_gpu_t *g);

#endif
