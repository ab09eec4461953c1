/*
 * topo_file.h - the job's topology as the planner's topology file
 * (docs/planner.md), and the test that a cached one still fits the job.
 */
#ifndef DFCCL_TOPO_FILE_H
#define DFCCL_TOPO_FILE_H

#include <stddef.h>
#include "tools/topo_job.h"
#include "tools/topo_probe.h"

/* Writes job's topology to path (through a temporary file renamed into
 * place, so a reader never sees half of it); 0, or -1 with why. */
int topo_file_write(const char *path, const topo_job_t *job, const topo_probe_opts_t *o,
                    char *why, size_t whylen);

/* 0 where path can be written (checked before measuring, so that a wrong
 * name costs no probe), or -1 with why. */
int topo_file_writable(const char *path, char *why, size_t whylen);

/* 1 where path holds a topology whose GPUs are ranks 0..N-1 on the job's
 * hosts, rank for rank; 0 where it does not (why says how), -1 where it
 * cannot be read (absent: why is empty). */
int topo_file_matches(const char *path, const topo_job_t *job, char *why, size_t whylen);

/* Copies src to dst (through a temporary file); nothing where they are
 * the same file. 0, or -1 with why. */
int topo_file_copy(const char *src, const char *dst, char *why, size_t whylen);

#endif
