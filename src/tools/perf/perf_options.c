/* perf_options.c - command-line parsing for dfccl_perf. */
#include "tools/perf/perf_options.h"
#include "tools/perf/perf_device.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

const char *perf_memory_name(perf_memory_t memory)
{
    static const char *const names[] = {"host", "device", "staged"};
    return names[memory];
}

int perf_size_parse(const char *text, size_t *bytes)
{
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (end == text || errno || text[0] == '-')
        return -1;
    unsigned long long scale = 1;
    switch (*end) {
    case 'k': case 'K': scale = 1ull << 10; end++; break;
    case 'm': case 'M': scale = 1ull << 20; end++; break;
    case 'g': case 'G': scale = 1ull << 30; end++; break;
    default: break;
    }
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end != '\0')
        return -1;
    *bytes = (size_t)(value * scale);
    return 0;
}

static void usage(FILE *out)
{
    char types[160], ops[80];
    perf_type_names(types, sizeof types);
    perf_op_names(ops, sizeof ops);
    fprintf(out,
            "usage: dfccl_perf [options]\n"
            "  -b, --minbytes SIZE      first size in bytes (K/M/G suffixes; default 4)\n"
            "  -e, --maxbytes SIZE      last size in bytes (default 32M)\n"
            "  -f, --stepfactor F       multiply the size by F each step (default 2)\n"
            "  -x, --collective NAME    allreduce|allgather|reduce_scatter|reduce_scatter_block|all\n"
            "                           (default allreduce; repeat or comma-separate for several)\n"
            "  -d, --datatype TYPE      %s (default float)\n"
            "  -o, --op OP              %s (default sum)\n"
            "  -w, --warmup_iters N     untimed calls per size (default 5)\n"
            "  -n, --iters N            timed calls per size (default 20)\n"
            "      --in-place           MPI_IN_PLACE as the send buffer\n"
            "      --nonblocking        the I-forms, each completed with MPI_Wait\n"
            "      --persistent         MPIX_*_init once per size, then MPI_Start and MPI_Wait\n"
            "                           per call\n"
            "  -c, --check 0|1          1: verify every size against a local reference (as\n"
            "                           nccl-tests' -c; default 0)\n"
            "      --memory KIND        where the buffers live (default host):\n"
            "                           host    malloc\n"
            "                           device  cudaMalloc, passed to MPI as they are\n"
            "                           staged  cudaMalloc, each call copied through\n"
            "                                   page-locked host memory (for the stock\n"
            "                                   path: --mca coll ^dfccl)%s\n"
            "      --time-budget SEC    per size, cut -w and -n down (to 1 each at least) so\n"
            "                           that the calls take about SEC seconds (default 0:\n"
            "                           no cut)\n"
            "      --json FILE          also write the parameters and rows as JSON\n"
            "      --no-progress        no progress lines on stderr\n"
            "  -h, --help               this text\n"
            "Sizes follow nccl-tests: allreduce the buffer, allgather and reduce_scatter\n"
            "the whole gathered/scattered buffer (np x the per-rank part).\n",
            types, ops,
            perf_device_built() ? "" : "\n                           (device and staged: not in this build,\n"
                                      "                           configure found no CUDA)");
}

static int colls_parse(bool *colls, const char *text)
{
    char copy[256];
    snprintf(copy, sizeof copy, "%s", text);
    for (char *save, *name = strtok_r(copy, ",", &save); name;
         name = strtok_r(NULL, ",", &save)) {
        if (strcmp(name, "all") == 0) {
            for (int c = 0; c < PERF_COLL_COUNT; c++)
                colls[c] = true;
            continue;
        }
        int c = perf_coll_parse(name);
        if (c < 0)
            return -1;
        colls[c] = true;
    }
    return 0;
}

static int count_parse(const char *text, int minimum, int *value)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (end == text || *end != '\0' || v < minimum || v > 1000000000L)
        return -1;
    *value = (int)v;
    return 0;
}

int perf_options_parse(perf_options_t *o, int argc, char **argv, bool verbose)
{
    enum { OPT_IN_PLACE = 256, OPT_NONBLOCKING, OPT_PERSISTENT, OPT_MEMORY, OPT_JSON, OPT_NO_PROGRESS,
           OPT_TIME_BUDGET };
    static const struct option longs[] = {
        {"minbytes", required_argument, NULL, 'b'},
        {"maxbytes", required_argument, NULL, 'e'},
        {"stepfactor", required_argument, NULL, 'f'},
        {"collective", required_argument, NULL, 'x'},
        {"datatype", required_argument, NULL, 'd'},
        {"op", required_argument, NULL, 'o'},
        {"warmup_iters", required_argument, NULL, 'w'},
        {"iters", required_argument, NULL, 'n'},
        {"check", required_argument, NULL, 'c'},
        {"in-place", no_argument, NULL, OPT_IN_PLACE},
        {"nonblocking", no_argument, NULL, OPT_NONBLOCKING},
        {"persistent", no_argument, NULL, OPT_PERSISTENT},
        {"memory", required_argument, NULL, OPT_MEMORY},
        {"json", required_argument, NULL, OPT_JSON},
        {"no-progress", no_argument, NULL, OPT_NO_PROGRESS},
        {"time-budget", required_argument, NULL, OPT_TIME_BUDGET},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    FILE *err = verbose ? stderr : NULL;
    bool any_coll = false;

    memset(o, 0, sizeof *o);
    o->begin_bytes = 4;
    o->end_bytes = 32u << 20;
    o->factor = 2.0;
    o->type = perf_type_find("float");
    o->op = perf_op_find("sum");
    o->warmup = 5;
    o->iterations = 20;
    o->progress = true;

    opterr = 0;  /* errors are reported once, by rank 0 */
    optind = 0;  /* glibc: start afresh; main parses once before MPI_Init and once after */
    int c;
    while ((c = getopt_long(argc, argv, "b:e:f:x:c:d:o:w:n:h", longs, NULL)) != -1) {
        const char *bad = NULL;
        switch (c) {
        case 'b': if (perf_size_parse(optarg, &o->begin_bytes)) bad = "size"; break;
        case 'e': if (perf_size_parse(optarg, &o->end_bytes)) bad = "size"; break;
        case 'f': {
            char *end;
            o->factor = strtod(optarg, &end);
            if (end == optarg || *end != '\0' || !(o->factor > 1.0)) bad = "factor (> 1)";
            break;
        }
        case 'x': if (colls_parse(o->colls, optarg)) bad = "collective"; else any_coll = true; break;
        case 'd': if (!(o->type = perf_type_find(optarg))) bad = "datatype"; break;
        case 'o': if (!(o->op = perf_op_find(optarg))) bad = "op"; break;
        case 'w': if (count_parse(optarg, 0, &o->warmup)) bad = "warm-up count"; break;
        case 'n': if (count_parse(optarg, 1, &o->iterations)) bad = "iteration count"; break;
        case 'c': {
            int check;
            if (count_parse(optarg, 0, &check)) bad = "check (0 or 1)";
            else o->check = check != 0;
            break;
        }
        case OPT_IN_PLACE: o->in_place = true; break;
        case OPT_NONBLOCKING: o->nonblocking = true; break;
        case OPT_PERSISTENT: o->persistent = true; break;
        case OPT_JSON: o->json_path = optarg; break;
        case OPT_NO_PROGRESS: o->progress = false; break;
        case OPT_MEMORY:
            if (strcmp(optarg, "host") == 0)
                o->memory = PERF_MEMORY_HOST;
            else if (strcmp(optarg, "device") == 0)
                o->memory = PERF_MEMORY_DEVICE;
            else if (strcmp(optarg, "staged") == 0)
                o->memory = PERF_MEMORY_STAGED;
            else
                bad = "memory (host, device or staged)";
            if (!bad && o->memory != PERF_MEMORY_HOST && !perf_device_built()) {
                if (err)
                    fprintf(err, "dfccl_perf: --memory %s needs CUDA, and this dfccl_perf "
                                 "was built without it (configure found no CUDA toolkit, "
                                 "or --without-cuda); use --memory host\n", optarg);
                return 2;
            }
            break;
        case OPT_TIME_BUDGET: {
            char *end;
            o->time_budget = strtod(optarg, &end);
            if (end == optarg || *end != '\0' || !(o->time_budget >= 0.0))
                bad = "time budget (seconds >= 0)";
            break;
        }
        case 'h':
            if (verbose)
                usage(stdout);
            return 1;
        default:
            if (err)
                fprintf(err, "dfccl_perf: unknown option or missing argument: %s\n",
                        argv[optind - 1]);
            if (err)
                usage(err);
            return 2;
        }
        if (bad) {
            if (err)
                fprintf(err, "dfccl_perf: bad %s: %s (see --help)\n", bad, optarg);
            return 2;
        }
    }
    if (optind < argc) {
        if (err)
            fprintf(err, "dfccl_perf: unexpected argument: %s\n", argv[optind]);
        return 2;
    }
    if (!any_coll)
        o->colls[PERF_ALLREDUCE] = true;
    if (o->begin_bytes == 0 || o->end_bytes < o->begin_bytes) {
        if (err)
            fprintf(err, "dfccl_perf: need 0 < -b <= -e\n");
        return 2;
    }
    return 0;
}
