/*
 * plan_set.h - the plan files a process offers its communicators: every
 * plan file of the directory the knob plan_dir names, loaded (and so
 * proven runnable) once, when the engine starts.
 *
 * A host communicator takes the plans whose size and node layout fit it,
 * and only when every rank offers the same plans (their digests agree), so
 * that all ranks choose alike for every call.
 */
#ifndef DFCCL_PLAN_SET_H
#define DFCCL_PLAN_SET_H

#include <stdint.h>
#include "engine/plan_file.h"

typedef struct dfccl_plan_set {
    dfccl_plan_file_t **plans;   /* sorted by file name */
    int                 n;
} dfccl_plan_set_t;

/*
 * Loads every "*.json" file of dir. A file that does not load is skipped
 * after an error line naming it and what is wrong; a directory that cannot
 * be read leaves the set empty after one. DFCCL_ERR_NO_MEMORY only when
 * memory runs out (set then empty).
 */
dfccl_status_t dfccl_plan_set_load(const char *dir, dfccl_plan_set_t *set);
void dfccl_plan_set_free(dfccl_plan_set_t *set);

/* A digest of the plans for communicators of size ranks (0: none). */
uint64_t dfccl_plan_set_digest(const dfccl_plan_set_t *set, int size);

/*
 * The plans that fit a communicator of size ranks on nodes node[] (see
 * dfccl_plan_file_fits), into a new array *out (NULL when none) of *n
 * entries; DFCCL_ERR_NO_MEMORY leaves both alone.
 */
dfccl_status_t dfccl_plan_set_select(const dfccl_plan_set_t *set, int size, const int *node,
                                     const dfccl_plan_file_t ***out, int *n);

#endif
