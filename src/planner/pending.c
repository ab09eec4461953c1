/*
 * pending.c - methods not written yet: they say so.
 */
#include "planner.h"
#include "util.h"

int pl_plan_file_write(const pl_instance_t *in, const pl_schedule_t *s, const char *path,
                       char *why, size_t whylen)
{
    return pl_fail(why, whylen, "plan files are not written yet");
}
