/*
 * model.h - the allgather flow-over-time program (formulation.c), solver
 * neutral: columns with bounds, objective and integrality, rows as bounds
 * on sums, the matrix column by column, and what each column means, so that
 * the MILP (CBC) and the LP (CLP) load the same program and read their
 * solutions back the same way.
 */
#ifndef DFCCL_PLANNER_MODEL_H
#define DFCCL_PLANNER_MODEL_H

#include "planner.h"
#include "util.h"

/* What the program covers: sends in epochs [k0, k1); holdings tracked up to
 * epoch bend; the flows of prior (all sent before k0) as a fixed start. With
 * must_finish, every GPU must hold every chunk by bend and the objective is
 * the earliest finish; otherwise (a window of time partitioning) it is the
 * most progress, each chunk held in each epoch counting one. */
typedef struct {
    int k0, k1, bend;
    int must_finish;
    const pl_schedule_t *prior;
} pl_window_t;

enum { PL_COL_SEND, PL_COL_HOLD, PL_COL_DONE };

typedef struct {
    int kind;         /* PL_COL_* */
    int chunk, where; /* SEND: chunk, link; HOLD: chunk, rank; DONE: -, - */
    int epoch;
} pl_col_t;

typedef struct {
    int ncols, nrows;
    pl_col_t *cols;
    double *collb, *colub, *obj;
    char *integer;
    double *rowlb, *rowub;
    /* the matrix by columns: column j's entries are [start[j], start[j+1]) */
    int *start, *index;
    double *value;
    size_t nsends;    /* flow columns, how many of the columns there are */
    size_t cap_cols, cap_rows;
    /* entries as they are made, row by row; turned into columns at the end */
    int *tr_row, *tr_col;
    double *tr_val;
    size_t ntr, cap_tr;
    pl_map_t send_col, hold_col; /* (chunk, link or rank, epoch) -> column */
} pl_model_t;

int pl_model_build(const pl_instance_t *in, const pl_window_t *w, pl_model_t *m, char *why,
                   size_t whylen);
void pl_model_free(pl_model_t *m);
/* Column values that make the schedule s (which must fit the window) a
 * solution: for a MILP start. NULL when a flow of s has no column. */
double *pl_model_values_of(const pl_instance_t *in, const pl_window_t *w, const pl_model_t *m,
                           const pl_schedule_t *s);

#endif
