/*
 * dfccl_plan_check.c - loads plan files (docs/plan-format.md) with every
 * check the engine makes, and prints for each one line: what the plan is,
 * or what is wrong with it. Exit status 0 when every file is valid, 1 when
 * one is not (or cannot be read), 2 for bad usage.
 */
#include <stdio.h>
#include <string.h>
#include "engine/plan_file.h"

static const char *const coll_names[DFCCL_COLL_TYPE_COUNT] = { "allreduce", "allgather",
                                                              "reduce_scatter" };

static void usage(FILE *out)
{
    fprintf(out, "usage: dfccl_plan_check FILE...\n"
                 "Checks dfccl plan files as the engine loads them: schema, matched sends\n"
                 "and receives, no deadlock, the collective's result on every rank.\n");
}

static int check_one(const char *path)
{
    dfccl_plan_file_t *pf;
    char why[1024];
    const char *in_place_why;

    if (dfccl_plan_file_load(path, &pf, why, sizeof(why)) != DFCCL_OK) {
        printf("%s: invalid: %s\n", path, why);
        return 1;
    }
    int ranks = dfccl_plan_file_ranks(pf);
    uint32_t chunks = dfccl_plan_file_chunks(pf), steps = dfccl_plan_file_max_steps(pf);

    printf("%s: valid: %s plan \"%s\" for %d rank%s, %u chunk%s, at most %u step%s a rank, "
           "in place: ", path, coll_names[dfccl_plan_file_type(pf)], dfccl_plan_file_name(pf),
           ranks, ranks == 1 ? "" : "s", chunks, chunks == 1 ? "" : "s", steps,
           steps == 1 ? "" : "s");
    if (dfccl_plan_file_in_place(pf, &in_place_why)) printf("yes\n");
    else printf("no (%s)\n", in_place_why);
    dfccl_plan_file_free(pf);
    return 0;
}

int main(int argc, char **argv)
{
    int bad = 0;

    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return 0;
    }
    for (int i = 1; i < argc; i++) bad |= check_one(argv[i]);
    return bad;
}
