/*
 * plan_set.c - the plan files of plan_dir, loaded when the engine starts,
 * and the ones a communicator takes.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/log.h"
#include "engine/plan_set.h"

static int is_plan_name(const char *name)
{
    size_t n = strlen(name);
    return n > 5 && strcmp(name + n - 5, ".json") == 0 && name[0] != '.';
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of dir's plan files, sorted: every rank then offers its plans
 * in one order, whatever order the file system lists them in. */
static dfccl_status_t plan_names(DIR *d, char ***names_p, int *n_p)
{
    char **names = NULL;
    int n = 0, cap = 0;
    struct dirent *e;

    while ((e = readdir(d)) != NULL) {
        if (!is_plan_name(e->d_name)) continue;
        if (n == cap) {
            char **more = realloc(names, sizeof(char *) * (size_t)(cap = cap ? 2 * cap : 16));
            if (more == NULL) goto err;
            names = more;
        }
        if ((names[n] = strdup(e->d_name)) == NULL) goto err;
        n++;
    }
    if (n > 0) qsort(names, (size_t)n, sizeof(char *), by_name);
    *names_p = names;
    *n_p = n;
    return DFCCL_OK;
err:
    while (n > 0) free(names[--n]);
    free(names);
    return DFCCL_ERR_NO_MEMORY;
}

dfccl_status_t dfccl_plan_set_load(const char *dir, dfccl_plan_set_t *set)
{
    DIR *d;
    char **names = NULL, why[512];
    int n = 0;
    dfccl_status_t status = DFCCL_OK;

    set->plans = NULL;
    set->n = 0;
    if (dir == NULL || dir[0] == '\0') return DFCCL_OK;
    if ((d = opendir(dir)) == NULL) {
        dfccl_error("plan_dir %s: %s: collectives use the built-in algorithms", dir,
                    strerror(errno));
        return DFCCL_OK;
    }
    status = plan_names(d, &names, &n);
    closedir(d);
    if (status == DFCCL_OK && n > 0 && (set->plans = calloc((size_t)n, sizeof(*set->plans))) == NULL)
        status = DFCCL_ERR_NO_MEMORY;
    for (int i = 0; i < n && status == DFCCL_OK; i++) {
        size_t len = strlen(dir) + strlen(names[i]) + 2;
        char *path = malloc(len);
        dfccl_status_t loaded;
        if (path == NULL) {
            status = DFCCL_ERR_NO_MEMORY;
            break;
        }
        snprintf(path, len, "%s/%s", dir, names[i]);
        loaded = dfccl_plan_file_load(path, &set->plans[set->n], why, sizeof(why));
        if (loaded == DFCCL_OK) set->n++;
        else if (loaded == DFCCL_ERR_NO_MEMORY) status = loaded;
        else dfccl_error("plan file %s is not used: %s", path, why);
        free(path);
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    if (status != DFCCL_OK) {
        dfccl_plan_set_free(set);
        return status;
    }
    dfccl_info("plan_dir %s: %d plan file%s loaded", dir, set->n, set->n == 1 ? "" : "s");
    return DFCCL_OK;
}

void dfccl_plan_set_free(dfccl_plan_set_t *set)
{
    for (int i = 0; i < set->n; i++) dfccl_plan_file_free(set->plans[i]);
    free(set->plans);
    set->plans = NULL;
    set->n = 0;
}

uint64_t dfccl_plan_set_digest(const dfccl_plan_set_t *set, int size)
{
    uint64_t h = 0;

    for (int i = 0; i < set->n; i++)
        if (dfccl_plan_file_ranks(set->plans[i]) == size)
            h = (h ^ dfccl_plan_file_digest(set->plans[i])) * 1099511628211ull + 1;
    return h;
}

dfccl_status_t dfccl_plan_set_select(const dfccl_plan_set_t *set, int size, const int *node,
                                     const dfccl_plan_file_t ***out, int *n_p)
{
    const dfccl_plan_file_t **fit = NULL;
    int n = 0;

    for (int i = 0; i < set->n; i++)
        if (dfccl_plan_file_fits(set->plans[i], size, node)) n++;
    if (n > 0 && (fit = malloc(sizeof(*fit) * (size_t)n)) == NULL) return DFCCL_ERR_NO_MEMORY;
    n = 0;
    for (int i = 0; i < set->n; i++)
        if (dfccl_plan_file_fits(set->plans[i], size, node)) fit[n++] = set->plans[i];
    *out = fit;
    *n_p = n;
    return DFCCL_OK;
}
