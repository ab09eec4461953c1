/*
 * node_shapes.c - node shapes of simulated communicators (node_shapes.h).
 */
#include <stdlib.h>
#include "node_shapes.h"

void node_shape(int k, int n, int *node)
{
    /* labels run below n, but the uneven shape's last node is 4 */
    int labels = n > 5 ? n : 5, *map = malloc(sizeof(int) * (size_t)labels), next = 0;

    if (map == NULL) {   /* the tests check their own allocations: one node */
        for (int r = 0; r < n; r++) node[r] = 0;
        return;
    }
    for (int l = 0; l < labels; l++) map[l] = -1;
    for (int r = 0; r < n; r++) {
        int label = k == 0 ? 0                        /* one node */
                  : k == 1 ? r / 8                    /* nodes of 8, in blocks */
                  : k == 2 ? r % ((n + 7) / 8)        /* nodes of 8, round-robin */
                  : k == 3 ? r / 4                    /* nodes of 4 */
                  : (r < n / 3 ? 0 : r < n - 5 ? 1 + (r % 3) : 4);   /* uneven */
        if (map[label] < 0) map[label] = next++;
        node[r] = map[label];
    }
    free(map);
}
