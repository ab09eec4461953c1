/*
 * perf_types.h - the datatypes and reduction ops dfccl_perf measures, with
 * the exact small-integer inputs and local reference that --check uses.
 */
#ifndef DFCCL_PERF_TYPES_H
#define DFCCL_PERF_TYPES_H

#include <stddef.h>
#include <mpi.h>

typedef struct {
    const char *name;
    MPI_Datatype mpi;
    size_t size;
    int id;          /* selects the load/store conversion */
} perf_type_t;

typedef enum { PERF_OP_SUM, PERF_OP_PROD, PERF_OP_MIN, PERF_OP_MAX } perf_op_id_t;

typedef struct {
    const char *name;
    MPI_Op mpi;
    perf_op_id_t id;
} perf_op_t;

/* Looks a name up; NULL when unknown. Both tables end with a NULL name. */
const perf_type_t *perf_type_find(const char *name);
const perf_op_t *perf_op_find(const char *name);
/* "float|double|..." for the help text. */
void perf_type_names(char *out, size_t len);
void perf_op_names(char *out, size_t len);

/* Element idx of buf, through double: the inputs are small integers, exact in every type. */
void perf_type_store(const perf_type_t *type, void *buf, size_t idx, double value);
double perf_type_load(const perf_type_t *type, const void *buf, size_t idx);

/*
 * The input of `rank` at global element `idx`. Values stay small so that a
 * sum over up to 42 ranks fits int8 and every product is exactly 2.
 */
double perf_input_value(const perf_op_t *op, int rank, int nranks, size_t idx);
/* The reduction of perf_input_value over all ranks at element idx. */
double perf_reference_value(const perf_op_t *op, int nranks, size_t idx);

#endif
