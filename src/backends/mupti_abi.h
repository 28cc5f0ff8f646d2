/*
 * devtrace's declaration of Moore Threads MUSA's MUPTI (libmupti.so,
 * `mupti*` symbols with CUPTI's signatures). No MUPTI header is public;
 * everything here is INFERRED (research/vendor_abis.md section 4):
 *
 * - activity kinds, runtime callback ids and result codes are CUPTI's values
 *   (kinds 1-5, 10, 38 and runtime ids 20, 31, 211 seen in a MUPTI debug
 *   log; MooreThreads' kineto names runtime ids with CUPTI's table, renamed
 *   cuda -> musa); driver ids are taken to follow CUPTI's too, renamed
 *   cu -> mu, which no public source shows;
 * - records are taken to be CUPTI's same-numbered versions, which public
 *   code reads by name (MUpti_ActivityKernel6, Memcpy4, Memset3, API,
 *   ExternalCorrelation, Synchronization): Kernel6 168 bytes, Memcpy4 80,
 *   Memset3 80, API 40, ExternalCorrelation 24, Synchronization 40, at
 *   CUPTI's offsets; no public source confirms a size or an offset;
 * - timestamps are in a vendor clock domain that differs from the epoch.
 */
#ifndef DT_MUPTI_ABI_H
#define DT_MUPTI_ABI_H

#include "backends/cupti_family_abi.h"

/* MUSA's names for the calls at CUPTI's ids (inferred). */
__attribute__((unused)) static const char *const dt__mupti_runtime_names[DT_CF_RT_NAMED] =
    DT_CF_RUNTIME_NAMES("musa");
__attribute__((unused)) static const char *const dt__mupti_driver_names[DT_CF_DRV_NAMED] =
    DT_CF_DRIVER_NAMES("mu");

#endif /* DT_MUPTI_ABI_H */
