/* log.c - engine messages on stderr, one line each. */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>
#include "util/log.h"

int dfccl_log_level = 0;

void dfccl_log_print(const char *fmt, ...)
{
    char host[64] = "?", line[1024];
    va_list ap;

    gethostname(host, sizeof(host) - 1);
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    /* one write per line so ranks' messages do not interleave */
    fprintf(stderr, "[dfccl %s:%d] %s\n", host, (int)getpid(), line);
}
