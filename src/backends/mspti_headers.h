/*
 * The MSPTI declarations a build decodes with: CANN's own headers when
 * CMake found them (cmake/Mspti.cmake defines DT_HAVE_MSPTI_SDK and which
 * later record kinds they have), devtrace's declaration of the public ABI
 * otherwise (mspti_abi.h, which has every kind).
 */
#ifndef DT_MSPTI_HEADERS_H
#define DT_MSPTI_HEADERS_H

#ifdef DT_HAVE_MSPTI_SDK
#include <mspti.h>
#define DT_MSPTI_DECLARATION "CANN's mspti.h"
#else
#include "backends/mspti_abi.h"
#define DT_MSPTI_HAS_COMMUNICATION 1
#define DT_MSPTI_HAS_OVERHEAD 1
#define DT_MSPTI_HAS_MEMORY_KINDS 1
#define DT_MSPTI_HAS_HCCL 1
#define DT_MSPTI_DECLARATION "devtrace's declaration of the public ABI (mspti_abi.h)"
#endif

#endif /* DT_MSPTI_HEADERS_H */
