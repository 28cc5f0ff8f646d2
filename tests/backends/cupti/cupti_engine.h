/*
 * The CUPTI backend's engine data for its tests: the decoder with the
 * layouts of the toolkit the tests are built with (CUDA 13), and the
 * CUPTI-family record writer.
 */
#ifndef DT_TEST_CUPTI_ENGINE_H
#define DT_TEST_CUPTI_ENGINE_H

#include "backends/engine/engine.h"
#include "cf_records.h"

extern dt_engine dt__engine_cupti;

/* The decoder a libcupti of CUDA 13.0 (CUPTI API 130001) gets. */
static inline dt_decoder cupti_decoder(void)
{
    dt_decoder d;
    dt__decoder_init(&d, dt__engine_cupti.v, 130001);
    return d;
}

/* The writer's options for CUDA 13's records; concurrent kernels, peer
   copies as MEMCPY2, latency timestamps as given. */
static inline emu_cf_options cupti_options(int latency)
{
    emu_cf_options o = emu_cf_cuda13();
    o.latency_timestamps = latency;
    return o;
}

#endif
