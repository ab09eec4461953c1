/*
 * node_labels.c - which ranks share a node, as every backend sees it: a
 * label per process, and node numbers from every rank's label (the knob
 * node_split cuts nodes smaller, for tests of the paths across nodes).
 */
#include <stdio.h>
#include <unistd.h>
#include "engine/internal.h"

static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n && s[i] != '\0'; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

uint64_t dfccl_node_label(char *host, size_t len)
{
    char boot[64] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

    if (gethostname(host, len) != 0) snprintf(host, len, "unknown");
    host[len - 1] = '\0';
    /* the boot id tells apart hosts that share a name (and containers
     * that share a kernel keep one node) */
    if (f != NULL) {
        if (fgets(boot, sizeof(boot), f) == NULL) boot[0] = '\0';
        fclose(f);
    }
    return fnv1a(fnv1a(14695981039346656037ull, host, len), boot, sizeof(boot));
}

void dfccl_node_groups(const uint64_t *label, int size, unsigned split, int *node, int *k)
{
    int n = 0;

    for (int r = 0; r < size; r++) {
        k[r] = 0;
        for (int q = 0; q < r; q++) k[r] += label[q] == label[r];
        node[r] = -1;
        for (int q = 0; q < r && node[r] < 0; q++)
            if (label[q] == label[r] && (split == 0 || k[q] / (int)split == k[r] / (int)split))
                node[r] = node[q];
        if (node[r] < 0) node[r] = n++;
    }
}
