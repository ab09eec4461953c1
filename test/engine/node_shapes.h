/*
 * node_shapes.h - where the ranks of a simulated communicator are: the node
 * shapes the scale tests walk (one node, blocks of 8 or 4, round-robin
 * nodes of 8, uneven nodes).
 */
#ifndef DFCCL_TEST_NODE_SHAPES_H
#define DFCCL_TEST_NODE_SHAPES_H

#define NODE_SHAPES 5

/* Shape k of n ranks into node[] (numbered from 0 by first rank). */
void node_shape(int k, int n, int *node);

#endif
