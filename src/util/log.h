/* log.h - one prefix for every engine message: host, pid. */
#ifndef DFCCL_LOG_H
#define DFCCL_LOG_H

extern int dfccl_log_level;

void dfccl_log_print(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Errors always print; info prints at verbose >= 1, debug at >= 2. */
#define dfccl_error(...) dfccl_log_print(__VA_ARGS__)
#define dfccl_info(...)  do { if (dfccl_log_level >= 1) dfccl_log_print(__VA_ARGS__); } while (0)
#define dfccl_debug(...) do { if (dfccl_log_level >= 2) dfccl_log_print(__VA_ARGS__); } while (0)

#endif
