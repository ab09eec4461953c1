/*
 * milp.h - one program of formulation.c solved with CBC: the whole horizon
 * (milp.c) or a window of it (partition.c).
 */
#ifndef DFCCL_PLANNER_MILP_H
#define DFCCL_PLANNER_MILP_H

#include "planner/model.h"

typedef struct {
    int cols, rows;
    int status;          /* Cbc_solve's; -1: stopped at the deadline */
    int found, optimal;  /* a better solution; proven optimal (it, or else the start) */
    double objective, bound;
} pl_milp_result_t;

/* Solves the program of window w with CBC, looking only for solutions
 * better than start (when given), and appends the sends of the best found
 * to out. 0 (res->found says whether there was one; res->optimal without
 * one: start is optimal) or -1 with why. */
int pl_milp_solve(const pl_instance_t *in, const pl_window_t *w, const pl_schedule_t *start,
                  double time_limit, double gap, int verbose, pl_schedule_t *out,
                  pl_milp_result_t *res, char *why, size_t whylen);

#endif
