# rocprofiler-sdk (AMD ROCm): find the SDK's headers in a ROCm installation.
#
# devtrace decodes rocprofiler-sdk through its own declaration
# (src/backends/rocprofiler_sdk_abi.h), whose layouts are chosen by the
# library's version at run time. With the headers found, the build also
# checks that declaration against them (src/backends/rocprofiler_sdk_abi_check.c):
# a ROCm release that moved a field fails the build instead of decoding
# garbage.
#
# Sets DT_HAVE_ROCPROFILER_SDK and defines dt_configure_rocprofiler_sdk(target).

set(ROCM_PATH "$ENV{ROCM_PATH}" CACHE PATH "ROCm installation root (default /opt/rocm)")
option(DEVTRACE_ROCPROFILER_SDK_HEADERS "Check devtrace's rocprofiler-sdk declaration against ROCm's headers when found" ON)

set(DT_HAVE_ROCPROFILER_SDK OFF)
if(DEVTRACE_ROCPROFILER_SDK_HEADERS)
  set(_dt_rocm_hints)
  if(ROCM_PATH)
    list(APPEND _dt_rocm_hints ${ROCM_PATH}/include)
  endif()
  list(APPEND _dt_rocm_hints /opt/rocm/include)
  find_path(DT_ROCPROFILER_SDK_INCLUDE_DIR rocprofiler-sdk/rocprofiler.h HINTS ${_dt_rocm_hints} NO_DEFAULT_PATH)
  if(DT_ROCPROFILER_SDK_INCLUDE_DIR)
    # the headers pull in HIP's and HSA's: a tree where they do not compile
    # as C is said so, and not checked (a moved field still fails the build)
    include(CheckCSourceCompiles)
    set(CMAKE_REQUIRED_INCLUDES ${DT_ROCPROFILER_SDK_INCLUDE_DIR})
    set(CMAKE_REQUIRED_DEFINITIONS -D__HIP_PLATFORM_AMD__=1)
    set(CMAKE_REQUIRED_QUIET ON)
    check_c_source_compiles("
#if defined(__has_include)
#if __has_include(<hip/hip_runtime_api.h>)
#include <hip/hip_runtime_api.h>
#endif
#endif
#include <rocprofiler-sdk/agent.h>
#include <rocprofiler-sdk/buffer_tracing.h>
#include <rocprofiler-sdk/fwd.h>
int main(void) { return (int)sizeof(rocprofiler_buffer_tracing_kernel_dispatch_record_t) == 0; }"
                            DT_ROCPROFILER_SDK_HEADERS_COMPILE)
    unset(CMAKE_REQUIRED_INCLUDES)
    unset(CMAKE_REQUIRED_DEFINITIONS)
    unset(CMAKE_REQUIRED_QUIET)
    if(DT_ROCPROFILER_SDK_HEADERS_COMPILE)
      set(DT_HAVE_ROCPROFILER_SDK ON)
      message(STATUS "rocprofiler-sdk headers: ${DT_ROCPROFILER_SDK_INCLUDE_DIR} (devtrace's declaration is checked "
                     "against them)")
    else()
      message(WARNING "rocprofiler-sdk headers found in ${DT_ROCPROFILER_SDK_INCLUDE_DIR} do not compile as C here "
                      "(HIP or HSA headers missing?): devtrace's declaration is not checked against them")
    endif()
  endif()
endif()

function(dt_configure_rocprofiler_sdk target)
  if(DT_HAVE_ROCPROFILER_SDK)
    target_compile_definitions(${target} PRIVATE DT_HAVE_ROCPROFILER_SDK=1 __HIP_PLATFORM_AMD__=1)
    target_include_directories(${target} SYSTEM PRIVATE ${DT_ROCPROFILER_SDK_INCLUDE_DIR})
  endif()
endfunction()
