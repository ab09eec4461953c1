/*
 * model.h - the allgather flow-over-time program (formulation.c), solver
 * neutral: columns with bounds, objective and integrality, rows as bounds
 * on sums, the matrix column by column, and what each column means, so that
 * the MILP (CBC) and the LP (CLP) load the same program and read their
 * solutions back the same way.
 */
#ifndef DFCCL_PLANNER_MODEL_H
#define DFCCL_PLANNER_MODEL_H

#include "planner/planner.h"
#include "planner/util.h"

/* What the program covers: sends from epoch k0 on, every GPU holding every
 * chunk by epoch bend; the flows of prior (all sent before k0) as a fixed
 * start. Sends from epoch integer_end on may be fractions: the relaxed rest
 * of a window of time partitioning (partition.c); the MILP of the whole
 * horizon sets it to bend, the LP ignores it. */
typedef struct {
    int k0, bend;
    const pl_schedule_t *prior;
    int integer_end;
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
/* Column values that make the schedule s a solution (its flows before k0
 * must be the window's prior ones): for the value of a start. NULL when a
 * flow has no column. */
double *pl_model_values_of(const pl_instance_t *in, const pl_window_t *w, const pl_model_t *m,
                           const pl_schedule_t *s);

#endif
