/*
 * test_config.c - the knob table's bounds: the defaults pass, a value just
 * outside a bound is refused (and one on it accepted), an engine knob out of
 * bounds stops the context, a GPU knob only the GPU side.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include "include/dfccl.h"

static int failures, checks;

static void expect(const char *what, unsigned groups, const dfccl_config_t *config,
                   dfccl_status_t want)
{
    dfccl_status_t got = dfccl_config_check(config, groups);

    checks++;
    if (got != want) {
        failures++;
        fprintf(stderr, "FAIL %s: %s, expected %s\n", what, dfccl_status_string(got),
                dfccl_status_string(want));
    }
}

/* The knob set to a value: FIELD = VALUE must be accepted (ok) or refused. */
#define TRY(group, field, value, ok)                                                 \
    do {                                                                             \
        dfccl_config_t c;                                                            \
        dfccl_config_init(&c);                                                       \
        c.field = (value);                                                           \
        expect(#field " = " #value, group, &c,                                       \
               (ok) ? DFCCL_OK : DFCCL_ERR_INVALID_PARAM);                           \
    } while (0)

int main(void)
{
    dfccl_config_t config;
    dfccl_context_t *ctx = NULL;

    dfccl_config_init(&config);
    expect("defaults", DFCCL_CONFIG_ENGINE | DFCCL_CONFIG_GPU, &config, DFCCL_OK);

    /* the messages of the refusals below are expected on stderr */
    fprintf(stderr, "test_config: the 'invalid configuration' lines below are expected\n");
    TRY(DFCCL_CONFIG_ENGINE, slot_bytes, 64, 1);
    TRY(DFCCL_CONFIG_ENGINE, slot_bytes, 63, 0);
    TRY(DFCCL_CONFIG_ENGINE, slot_bytes, 70, 1);   /* rounded down, not refused */
    TRY(DFCCL_CONFIG_ENGINE, fifo_slots, 2, 1);
    TRY(DFCCL_CONFIG_ENGINE, fifo_slots, 1, 0);
    TRY(DFCCL_CONFIG_ENGINE, timeout_sec, 1e-3, 1);
    TRY(DFCCL_CONFIG_ENGINE, timeout_sec, 1e9, 1);
    TRY(DFCCL_CONFIG_ENGINE, timeout_sec, 0.0, 0);
    TRY(DFCCL_CONFIG_ENGINE, timeout_sec, -1.0, 0);
    TRY(DFCCL_CONFIG_ENGINE, timeout_sec, 2e9, 0);
    TRY(DFCCL_CONFIG_ENGINE, timeout_sec, NAN, 0);
    TRY(DFCCL_CONFIG_ENGINE, budget_min_ns, 0, 0);
    TRY(DFCCL_CONFIG_ENGINE, budget_min_ns, 1000000, 1);   /* equal to the max */
    TRY(DFCCL_CONFIG_ENGINE, budget_min_ns, 1000001, 0);   /* above the max */
    TRY(DFCCL_CONFIG_ENGINE, budget_max_ns, 1999, 0);      /* below the min */
    TRY(DFCCL_CONFIG_ENGINE, verbose, -1, 1);
    TRY(DFCCL_CONFIG_ENGINE, preempt, 2, 1);               /* any int: on */

    TRY(DFCCL_CONFIG_GPU, gpu_channels, 32, 1);
    TRY(DFCCL_CONFIG_GPU, gpu_channels, 33, 0);
    TRY(DFCCL_CONFIG_GPU, gpu_threads, 64, 1);
    TRY(DFCCL_CONFIG_GPU, gpu_threads, 32, 0);
    TRY(DFCCL_CONFIG_GPU, gpu_threads, 544, 0);
    TRY(DFCCL_CONFIG_GPU, gpu_threads, 96, 1);
    TRY(DFCCL_CONFIG_GPU, gpu_threads, 100, 0);            /* not a multiple of 32 */
    TRY(DFCCL_CONFIG_GPU, gpu_slot_bytes, 1024, 1);
    TRY(DFCCL_CONFIG_GPU, gpu_slot_bytes, 1008, 0);
    TRY(DFCCL_CONFIG_GPU, gpu_slot_bytes, 1032, 0);        /* not a multiple of 16 */
    TRY(DFCCL_CONFIG_GPU, gpu_fifo_slots, 1, 0);
    TRY(DFCCL_CONFIG_GPU, gpu_direct_chunk_bytes, 4096, 1);
    TRY(DFCCL_CONFIG_GPU, gpu_direct_chunk_bytes, 4095, 0);
    TRY(DFCCL_CONFIG_GPU, gpu_ll_bytes, 16384, 1);
    TRY(DFCCL_CONFIG_GPU, gpu_ll_bytes, 16385, 0);
    TRY(DFCCL_CONFIG_GPU, gpu_ll_bytes, 0, 1);
    TRY(DFCCL_CONFIG_GPU, gpu_direct_bytes, 0, 1);

    /* each group alone: a GPU knob out of bounds is not the engine's */
    TRY(DFCCL_CONFIG_ENGINE, gpu_threads, 1000, 1);
    TRY(DFCCL_CONFIG_GPU, fifo_slots, 1, 1);

    /* the context refuses engine knobs out of bounds, and starts with a GPU
     * knob out of bounds (only the GPU side refuses it, on first use) */
    dfccl_config_init(&config);
    config.fifo_slots = 1;
    checks++;
    if (dfccl_context_create(&config, &ctx) != DFCCL_ERR_INVALID_PARAM) {
        failures++;
        fprintf(stderr, "FAIL context created with fifo_slots 1\n");
        dfccl_context_destroy(ctx);
    }
    dfccl_config_init(&config);
    config.gpu_threads = 1000;
    ctx = NULL;
    checks++;
    if (dfccl_context_create(&config, &ctx) != DFCCL_OK) {
        failures++;
        fprintf(stderr, "FAIL context not created with gpu_threads 1000\n");
    } else {
        dfccl_context_destroy(ctx);
    }

    /* the structure is versioned: an older caller's (a prefix: here every
     * knob from fifo_slots on is past its size) gets the defaults of the
     * knobs it does not have, whatever lies there; a structure that
     * dfccl_config_init did not fill is refused */
    dfccl_config_init(&config);
    config.size = offsetof(dfccl_config_t, fifo_slots);
    config.fifo_slots = 1;   /* past the caller's size: not read */
    ctx = NULL;
    checks++;
    if (dfccl_context_create(&config, &ctx) != DFCCL_OK) {
        failures++;
        fprintf(stderr, "FAIL context refused an older caller's configuration\n");
    } else {
        dfccl_context_destroy(ctx);
    }
    dfccl_config_init(&config);
    config.size = 0;
    checks++;
    if (dfccl_context_create(&config, &ctx) != DFCCL_ERR_INVALID_PARAM) {
        failures++;
        fprintf(stderr, "FAIL context created from a configuration of size 0\n");
        dfccl_context_destroy(ctx);
    }
    dfccl_config_init(&config);
    config.version = DFCCL_CONFIG_VERSION + 1;
    checks++;
    if (dfccl_context_create(&config, &ctx) != DFCCL_ERR_INVALID_PARAM) {
        failures++;
        fprintf(stderr, "FAIL context created from a configuration of a later version\n");
        dfccl_context_destroy(ctx);
    }

    printf("test_config: %d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
