/*
 * chaos_sizes.h - the chaos-order workload's gradients: the sizes, in
 * floats, of eight ResNet-50 gradient allreduces. Shared by chaos_check
 * and contrib/chaos_bench so the test and the benchmark run one workload.
 */
#ifndef DFCCL_TEST_CHAOS_SIZES_H
#define DFCCL_TEST_CHAOS_SIZES_H

#include <stddef.h>

#define CHAOS_GRADIENTS 8

static const size_t chaos_gradient_floats[CHAOS_GRADIENTS] = {
    256, 147456, 2048, 1024, 65536, 147456, 524288, 1048576
};

#endif /* DFCCL_TEST_CHAOS_SIZES_H */
