/* config.c - the engine's tunables: defaults and bounds, from dfccl_knobs.def. */
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>
#include "engine/internal.h"
#include "util/log.h"


void dfccl_config_init(dfccl_config_t *config)
{
    memset(config, 0, sizeof(*config));
    config->size = sizeof(*config);
    config->version = DFCCL_CONFIG_VERSION;
#define DFCCL_KNOB(f, mca, kind, def, ...) config->f = (DFCCL_KNOB_TYPE_##kind)(def);
#define DFCCL_KNOB_FROM_CALLER(f, kind, def, ...) config->f = (DFCCL_KNOB_TYPE_##kind)(def);
#include "include/dfccl_knobs.def"
}

/* One knob's bounds, by kind: the unsigned kinds compare as uint64_t (exact
 * for all of them), INT as long long, DOUBLE as double (NaN fails). Each
 * returns 1 after its error line when the value is out of bounds. A bound
 * at the type's end goes unsaid. Knobs go by their field names: a caller
 * that has its own names for them (Open MPI's parameters) says so. */
static int check_unsigned(const char *field, uint64_t v, uint64_t min,
                          uint64_t max, uint64_t multiple, uint64_t type_max)
{
    char range[64], also[48] = "";

    if (v >= min && v <= max && v % multiple == 0) return 0;
    if (max == type_max) snprintf(range, sizeof(range), "at least %" PRIu64, min);
    else if (min == 0) snprintf(range, sizeof(range), "at most %" PRIu64, max);
    else snprintf(range, sizeof(range), "%" PRIu64 "..%" PRIu64, min, max);
    if (multiple > 1) snprintf(also, sizeof(also), " and a multiple of %" PRIu64, multiple);
    dfccl_error("invalid configuration: %s is %" PRIu64 ", must be %s%s",
                field, v, range, also);
    return 1;
}

static int check_int(const char *field, long long v, long long min,
                     long long max)
{
    if (v >= min && v <= max) return 0;
    dfccl_error("invalid configuration: %s is %lld, must be %lld..%lld",
                field, v, min, max);
    return 1;
}

static int check_double(const char *field, double v, double min, double max)
{
    if (v >= min && v <= max) return 0;
    /* a lower bound of the least positive double is written "above 0" */
    if (min > 0 && min <= DBL_TRUE_MIN)
        dfccl_error("invalid configuration: %s is %g, must be above 0 and at most %g",
                    field, v, max);
    else
        dfccl_error("invalid configuration: %s is %g, must be %g..%g",
                    field, v, min, max);
    return 1;
}

#define KNOB_CHECK_SIZE(f, mca, min, max, m) \
    check_unsigned(#f, config->f, min, max, m, SIZE_MAX)
#define KNOB_CHECK_UNSIGNED(f, mca, min, max, m) \
    check_unsigned(#f, config->f, min, max, m, UINT_MAX)
#define KNOB_CHECK_U32(f, mca, min, max, m) \
    check_unsigned(#f, config->f, min, max, m, UINT32_MAX)
#define KNOB_CHECK_U64(f, mca, min, max, m) \
    check_unsigned(#f, config->f, min, max, m, UINT64_MAX)
#define KNOB_CHECK_INT(f, mca, min, max, m)      check_int(#f, config->f, min, max)
#define KNOB_CHECK_DOUBLE(f, mca, min, max, m)   check_double(#f, config->f, min, max)
#define KNOB_CHECK_BOOL(f, mca, min, max, m)     0   /* any int: 0 off, else on */
#define KNOB_CHECK_STRING(f, mca, min, max, m)   0   /* whoever reads it says what is wrong */

dfccl_status_t dfccl_config_adopt(const dfccl_config_t *config, dfccl_config_t *out)
{
    size_t head = offsetof(dfccl_config_t, version) + sizeof(config->version);

    dfccl_config_init(out);
    if (config == NULL) return DFCCL_OK;
    if (config->size < head || config->version < 1 || config->version > DFCCL_CONFIG_VERSION) {
        dfccl_error("invalid configuration: size %zu, version %u (this library: size %zu,"
                    " versions 1 to %d): was it filled by dfccl_config_init?", config->size,
                    config->version, sizeof(*out), DFCCL_CONFIG_VERSION);
        return DFCCL_ERR_INVALID_PARAM;
    }
    /* an older caller's structure is a prefix of ours: its knobs, then our
     * defaults for those appended since */
    memcpy(out, config, config->size < sizeof(*out) ? config->size : sizeof(*out));
    out->size = sizeof(*out);
    out->version = DFCCL_CONFIG_VERSION;
    return DFCCL_OK;
}

dfccl_status_t dfccl_config_check(const dfccl_config_t *config, unsigned groups)
{
    int bad = 0;

    if (config == NULL) return DFCCL_ERR_INVALID_PARAM;
#define DFCCL_KNOB(f, mca, kind, def, min, max, multiple, group, ...) \
    if (groups & DFCCL_CONFIG_##group) bad += KNOB_CHECK_##kind(f, #mca, min, max, multiple);
#define DFCCL_KNOB_FROM_CALLER(f, kind, def, min, max, multiple, group, ...) \
    if (groups & DFCCL_CONFIG_##group) bad += KNOB_CHECK_##kind(f, NULL, min, max, multiple);
#include "include/dfccl_knobs.def"
    /* the one bound between knobs: the adaptive budget's range */
    if ((groups & DFCCL_CONFIG_ENGINE) && config->budget_min_ns > config->budget_max_ns) {
        dfccl_error("invalid configuration: budget_min_ns %" PRIu64
                    " is above budget_max_ns %" PRIu64
                    ": the adaptive budget has no range", config->budget_min_ns,
                    config->budget_max_ns);
        bad++;
    }
    return bad ? DFCCL_ERR_INVALID_PARAM : DFCCL_OK;
}
