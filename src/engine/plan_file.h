/*
 * plan_file.h - collectives written down as JSON plan files
 * (docs/plan-format.md): loaded, proven runnable, and turned into a rank's
 * program of plan.h steps for a call.
 *
 * Loading checks everything a plan could get wrong before it moves a byte:
 * the schema, that every send has its receive with the same chunks, that
 * the ranks cannot deadlock over FIFOs of two chunks, that no step reads
 * what an earlier step writes out of round order, and that every rank ends
 * with the collective's result (contributions tracked per chunk). A plan
 * that loads therefore runs correctly for every count, type and operator.
 *
 * Host only: it reads files with json-c; the programs it builds are the
 * core's plan IR and run on any backend.
 */
#ifndef DFCCL_PLAN_FILE_H
#define DFCCL_PLAN_FILE_H

#include <stddef.h>
#include <stdint.h>
#include "include/dfccl.h"
#include "core/plan.h"

/* The format's identity: "format" and the newest "version" understood. */
#define DFCCL_PLAN_FILE_FORMAT  "dfccl-plan"
#define DFCCL_PLAN_FILE_VERSION 2

typedef struct dfccl_plan_file dfccl_plan_file_t;

/*
 * Parses and validates a plan. On success *pf is a new plan file; on
 * failure (DFCCL_ERR_INVALID_PARAM for a bad plan, DFCCL_ERR_SYSTEM when the
 * file cannot be read, DFCCL_ERR_NO_MEMORY) *pf is left alone and why
 * (whylen bytes, always terminated) says what is wrong, naming the rank and
 * step, e.g. "rank 2 step 5: sends chunks 4-5 to rank 3, whose matching step
 * 5 receives chunks 6-6". why may be NULL.
 */
dfccl_status_t dfccl_plan_file_load(const char *path, dfccl_plan_file_t **pf, char *why,
                                    size_t whylen);
/* The same from text in memory (len bytes, need not be terminated). */
dfccl_status_t dfccl_plan_file_parse(const char *text, size_t len, dfccl_plan_file_t **pf,
                                     char *why, size_t whylen);
void dfccl_plan_file_free(dfccl_plan_file_t *pf);

dfccl_coll_type_t dfccl_plan_file_type(const dfccl_plan_file_t *pf);
/* The communicator size the plan is written for. */
int dfccl_plan_file_ranks(const dfccl_plan_file_t *pf);
uint32_t dfccl_plan_file_chunks(const dfccl_plan_file_t *pf);
const char *dfccl_plan_file_name(const dfccl_plan_file_t *pf);
/* Steps of the longest program: the capacity dfccl_plan_file_build needs. */
uint32_t dfccl_plan_file_max_steps(const dfccl_plan_file_t *pf);
/* The most further sends (beyond each step's first) and dependency entries
 * a rank's program of the plan has: room a caller of dfccl_plan_file_build
 * gives (dfccl_plan_t's more_cap and deps_cap). */
uint32_t dfccl_plan_file_max_more(const dfccl_plan_file_t *pf);
uint32_t dfccl_plan_file_max_deps(const dfccl_plan_file_t *pf);

/*
 * Where a plan applies (docs/plan-format.md, "Where a plan applies"):
 * fits is 1 when the plan is for communicators of size ranks laid out on
 * nodes as node[] (node of each rank, numbered by first rank) or names no
 * layout; serves_bytes is 1 when a call whose whole buffer has bytes bytes
 * (allreduce: count x type size; allgather, reduce-scatter: all ranks'
 * blocks) is within the plan's sizes. The digest tells plans apart: ranks
 * compare digests to use the same plans.
 */
int dfccl_plan_file_fits(const dfccl_plan_file_t *pf, int size, const int *node);
int dfccl_plan_file_serves_bytes(const dfccl_plan_file_t *pf, uint64_t bytes);
uint64_t dfccl_plan_file_digest(const dfccl_plan_file_t *pf);

/*
 * 1 when the plan also serves in-place calls (the send buffer's chunks
 * then live at their places in the receive buffer, and the plan still
 * gives the right result); else 0, and *why (when why is not NULL) says
 * what goes wrong. Plans never serve in-place reduce-scatter.
 */
int dfccl_plan_file_in_place(const dfccl_plan_file_t *pf, const char **why);

/*
 * The ranks rank sends to, sorted, without duplicates: the connections a
 * communicator sets up for the plan. Returns how many there are; fills at
 * most max of them. -1 when rank is out of range.
 */
int dfccl_plan_file_send_peers(const dfccl_plan_file_t *pf, int rank, int *peers, int max);

/*
 * Rank's program for one call, into plan (capacity plan->cap; steps and
 * peers as dfccl_plan_build fills them, connection indices 0 for the
 * backend to map from the peers). DFCCL_ERR_UNSUPPORTED when the plan does
 * not serve the call (another collective, in place where it cannot, a
 * reduce-scatter with unequal counts); DFCCL_ERR_INVALID_PARAM for a rank
 * out of range or too small a capacity. plan is changed only on success.
 */
dfccl_status_t dfccl_plan_file_build(const dfccl_plan_file_t *pf, const dfccl_plan_call_t *call,
                                     int rank, dfccl_plan_t *plan);

#endif
