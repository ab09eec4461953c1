/*
 * plan_file_model.h - a plan file in memory, as the parser leaves it for the
 * checks (plan_file_check.c, plan_file_run.c) and the builder.
 */
#ifndef DFCCL_PLAN_FILE_MODEL_H
#define DFCCL_PLAN_FILE_MODEL_H

#include <stdarg.h>
#include "engine/plan_file.h"

/* Bounds that keep every index in range and the checks' memory small. */
#define PF_MAX_RANKS  4096
#define PF_MAX_CHUNKS 65536
#define PF_MAX_STEPS  65536

/* One step as the file names it. */
typedef struct pf_step {
    int32_t   recv;                      /* peer, or -1 */
    int32_t  *send;                      /* peers, nsend of them (the program's pool) */
    uint32_t *after;                     /* steps "after" names, nafter of them */
    uint32_t  nafter;
    uint16_t  nsend;
    uint8_t   reduce;
    uint8_t   src;                       /* dfccl_buf_t */
    uint8_t   dst;                       /* DFCCL_BUF_RECV or DFCCL_BUF_NONE */
    uint32_t  chunk, nchunks;            /* chunks [chunk, chunk + nchunks) */
    /* set by the checks: the connections it uses, numbered over the plan */
    uint32_t  recv_link;
    uint32_t *send_link;                 /* nsend of them (the program's pool) */
    /* version 2: the steps it waits for (pf_derive_deps), in the program's pool */
    uint32_t *deps;
    uint32_t  ndeps;
} pf_step_t;

typedef struct pf_program {
    pf_step_t *steps;
    uint32_t   nsteps;
    int32_t   *peers;      /* the steps' send lists */
    uint32_t  *links;      /* ... their connections */
    uint32_t  *after;      /* the steps' "after" lists */
    uint32_t  *deps;       /* the steps' dependency lists */
    uint32_t   ndeps;      /* entries of deps */
    uint32_t   nmore;      /* sends beyond each step's first, all steps */
} pf_program_t;

struct dfccl_plan_file {
    char              *name;
    dfccl_coll_type_t  type;
    int                ranks;
    uint32_t           chunks;
    pf_program_t      *programs;   /* by rank */
    int                version;    /* 1: steps in program order; 2: a dependency graph */
    uint32_t           max_steps;
    uint32_t           max_more;   /* the most further sends (beyond a step's first) a program has */
    uint32_t           max_deps;   /* the most dependency entries a program has */
    /* connections (sender, receiver), numbered by sender then receiver */
    uint32_t           nlinks;
    int32_t           *link_from, *link_to;
    int                in_place;   /* serves in-place calls */
    /* where it applies (optional keys): every rank's node, numbered by
     * first rank (NULL: any layout), and the calls' whole-buffer bytes */
    int32_t           *nodes;
    uint64_t           min_bytes, max_bytes;
    uint64_t           digest;     /* of the file's text */
    char               in_place_why[256];
};

/* A checker's verdict: the message goes to why (may be NULL). */
typedef struct pf_why {
    char  *text;
    size_t len;
} pf_why_t;

/* Fills why like snprintf; returns DFCCL_ERR_INVALID_PARAM for `return`. */
dfccl_status_t pf_fail(pf_why_t *why, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Chunks per block: all of them for allreduce, chunks / ranks otherwise. */
uint32_t pf_block_chunks(const dfccl_plan_file_t *pf);
/* 1 when the buffer holds chunk c on rank (allgather's send buffer and
 * reduce-scatter's receive buffer hold only the rank's own block). */
int pf_buffer_holds(const dfccl_plan_file_t *pf, int rank, dfccl_buf_t buf, uint32_t c);
const char *pf_buffer_name(dfccl_buf_t buf);

/* Version 2: each step's dependencies, its "after" list and every earlier
 * step that shares a place in a buffer with it where one of them writes
 * (send and receive buffers taken as one, as in place). */
dfccl_status_t pf_derive_deps(dfccl_plan_file_t *pf);

/* Peers in range, connections counted and numbered, sends matched with
 * receives chunk for chunk (plan_file_check.c). */
dfccl_status_t pf_check_links(dfccl_plan_file_t *pf, pf_why_t *why);
/* No step touches a place an earlier one wrote (or reads one a later one
 * writes) out of round order; in_place: the send buffer's chunks live in
 * the receive buffer. */
dfccl_status_t pf_check_rounds(const dfccl_plan_file_t *pf, int in_place, pf_why_t *why);
/* One round of all ranks over FIFOs of two chunks: no deadlock, and the
 * collective's result in every rank's receive buffer (plan_file_run.c). */
dfccl_status_t pf_check_run(const dfccl_plan_file_t *pf, int in_place, pf_why_t *why);

#endif
