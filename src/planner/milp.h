/*
 * milp.h - one program of formulation.c solved with CBC: the whole horizon
 * (milp.c) or a window of it (partition.c).
 */
#ifndef DFCCL_PLANNER_MILP_H
#define DFCCL_PLANNER_MILP_H

#include "model.h"

typedef struct {
    int cols, rows;
    int status;          /* Cbc_solve's */
    int found, optimal;  /* an integer solution; proven optimal */
    double objective, bound;
} pl_milp_result_t;

/* Solves the program of window w with CBC (start, when given, as the first
 * incumbent) and appends the sends of the best solution found to out.
 * 0 (res->found says whether there was one) or -1 with why. */
int pl_milp_solve(const pl_instance_t *in, const pl_window_t *w, const pl_schedule_t *start,
                  double time_limit, double gap, int verbose, pl_schedule_t *out,
                  pl_milp_result_t *res, char *why, size_t whylen);

#endif
