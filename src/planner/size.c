/*
 * size.c - byte counts as people write them: 1G is 10^9 bytes, 1Gi 2^30, so
 * that a size copied from a benchmark's output means what it meant there.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "planner/planner.h"

int pl_parse_bytes(const char *s, uint64_t *out)
{
    static const struct {
        const char *suffix;
        double scale;
    } units[] = { { "", 1 },           { "K", 1e3 },          { "M", 1e6 },
                  { "G", 1e9 },        { "T", 1e12 },         { "Ki", 1024.0 },
                  { "Mi", 1048576.0 }, { "Gi", 1073741824.0 }, { "Ti", 1099511627776.0 } };
    char *end;
    double v;
    size_t n;

    if (s == NULL || *s == '\0' || *s == '-' || *s == '+') return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || !(v > 0)) return -1;
    n = strlen(end);
    /* a trailing B (bytes) is allowed and means nothing */
    if (n > 0 && end[n - 1] == 'B') n--;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strlen(units[i].suffix) == n && strncmp(end, units[i].suffix, n) == 0) {
            double b = v * units[i].scale;
            if (b < 1 || b > 1.8e19 || b != floor(b)) return -1;
            *out = (uint64_t)b;
            return 0;
        }
    return -1;
}
