/*
 * coll_values.h - deterministic collective inputs and their exact expected
 * results.
 *
 * Every element of every rank's input is a pure function of (rank, element
 * index, element class, op, seed), so each rank can compute the expected
 * result of a collective on its own, element by element, without receiving
 * the other ranks' data. The values are chosen per op so that the reduction
 * is exact in every order and never overflows the element type.
 */
#ifndef DFCCL_TEST_COLL_VALUES_H
#define DFCCL_TEST_COLL_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include "include/dfccl.h"

typedef struct {
    dfccl_dtype_t elem;    /* element class: size and kind of the MPI type */
    dfccl_op_t    op;      /* DFCCL_OP_NONE: values are copied, not reduced */
    uint32_t      seed;    /* varies the data between calls */
    int           nranks;  /* ranks contributing to the reduction */
} value_spec_t;

size_t value_elem_size(dfccl_dtype_t elem);
const char *value_elem_name(dfccl_dtype_t elem);
const char *value_op_name(dfccl_op_t op);

/* 1 when MPI's type rules allow `op` on elements of class `elem`. */
int value_op_legal(dfccl_op_t op, dfccl_dtype_t elem);

/* Writes `rank`'s input elements first_index .. first_index + n - 1. */
void values_fill(void *buf, size_t n, uint64_t first_index, int rank,
                 const value_spec_t *spec);

/* Writes the reduction over ranks 0 .. nranks-1 of elements
 * first_index .. first_index + n - 1 (spec->op must not be NONE). With one
 * rank that is the rank's input as it is. */
void values_expect_reduction(void *buf, size_t n, uint64_t first_index,
                             const value_spec_t *spec);

/* Formats one element as "value (0xbytes)" for failure messages. */
void values_format(char *out, size_t out_len, const void *element,
                   dfccl_dtype_t elem);

#endif /* DFCCL_TEST_COLL_VALUES_H */
