/*
 * stage.h - calls whose buffers are not of the memory kind their
 * communicator's backend carries (dfccl_coll_args_t.buffers): the input is
 * copied into a block of the backend's memory, the collective runs there,
 * and the result is copied back out by the thread that polls the context
 * (dfccl_context_poll), which then completes the call to its caller.
 */
#ifndef DFCCL_ENGINE_STAGE_H
#define DFCCL_ENGINE_STAGE_H

#include <stdbool.h>
#include "engine/completions.h"
#include "include/dfccl.h"

typedef struct dfccl_stage dfccl_stage_t;

/* Whether a call with these arguments on this communicator is staged;
 * DFCCL_ERR_INVALID_PARAM for an unknown buffers value. */
dfccl_status_t dfccl_stage_needed(const dfccl_comm_t *comm, const dfccl_coll_args_t *args,
                                  bool *needed);
/* Takes the staging block and fills *staged: args on the block, completing
 * through the stage. `kept`: for a prepared call, whose block serves every
 * start (dfccl_stage_start); else the input is copied in now and the stage
 * goes with the call's completion. */
dfccl_status_t dfccl_stage_open(dfccl_comm_t *comm, const dfccl_coll_args_t *args, bool kept,
                                dfccl_coll_args_t *staged, dfccl_stage_t **stage_p);
/* A prepared call's start: copies the input in and takes `user` as the
 * run's cookie; DFCCL_ERR_INVALID_PARAM while the previous run is pending.
 * dfccl_stage_abandon: the start failed to post, the stage is free again. */
dfccl_status_t dfccl_stage_start(dfccl_stage_t *stage, void *user);
void dfccl_stage_abandon(dfccl_stage_t *stage);
/* Gives the block back (a call that was never posted, or a prepared call
 * that is freed). */
void dfccl_stage_close(dfccl_stage_t *stage);
/* A completion popped from the context's queue that belongs to a stage:
 * copies the result out (its failure becomes the call's), frees or idles
 * the stage, and calls the caller's callback (false) or fills *done with
 * the caller's completion (true). */
bool dfccl_stage_finish(dfccl_stage_t *stage, dfccl_status_t status, dfccl_completion_t *done);

#endif
