# roctracer (AMD ROCm, Hygon DTK): find roctracer's headers.
#
# roctracer's ABI is public; devtrace declares what it uses in
# src/backends/roctracer_abi.h and builds without ROCm. Where an installation
# is found (ROCM_PATH, default /opt/rocm; DTK_ROOT, default /opt/dtk), its
# roctracer.h and roctracer_ext.h are compiled in instead
# (DT_HAVE_ROCTRACER_HEADERS), and every layout fact devtrace relies on is
# checked against them at compile time. The emulator implements the same
# public layout, so it is decoded either way.
#
# Sets DT_HAVE_ROCTRACER_HEADERS, DT_ROCTRACER_INCLUDE_DIR and
# DT_ROCTRACER_REASON, and defines dt_configure_roctracer(target).

option(DEVTRACE_ROCTRACER_HEADERS "Use roctracer's headers from ROCm or DTK when found" ON)
set(DT_HAVE_ROCTRACER_HEADERS OFF)
set(DT_ROCTRACER_INCLUDE_DIR "")
set(DT_ROCTRACER_REASON "")
if(DEVTRACE_ROCTRACER_HEADERS)
  set(_dt_rt_hints)
  foreach(_root "$ENV{ROCM_PATH}" "$ENV{DTK_ROOT}" /opt/rocm /opt/dtk)
    if(_root)
      list(APPEND _dt_rt_hints ${_root}/include/roctracer ${_root}/roctracer/include ${_root}/include)
    endif()
  endforeach()
  find_path(DT_ROCTRACER_H roctracer.h HINTS ${_dt_rt_hints} NO_DEFAULT_PATH)
  if(DT_ROCTRACER_H AND EXISTS "${DT_ROCTRACER_H}/roctracer_ext.h" AND EXISTS "${DT_ROCTRACER_H}/ext/prof_protocol.h")
    set(DT_HAVE_ROCTRACER_HEADERS ON)
    set(DT_ROCTRACER_INCLUDE_DIR ${DT_ROCTRACER_H})
    message(STATUS "roctracer: headers in ${DT_ROCTRACER_INCLUDE_DIR} (checked against devtrace's declaration)")
  else()
    set(DT_ROCTRACER_REASON "roctracer.h, roctracer_ext.h and ext/prof_protocol.h not found under ROCM_PATH, DTK_ROOT, /opt/rocm or /opt/dtk")
    message(STATUS "roctracer: ${DT_ROCTRACER_REASON}; building against devtrace's declaration of the public ABI")
  endif()
else()
  set(DT_ROCTRACER_REASON "DEVTRACE_ROCTRACER_HEADERS=OFF")
endif()

function(dt_configure_roctracer target)
  if(DT_HAVE_ROCTRACER_HEADERS)
    # the vendor's headers are not held to devtrace's warnings
    target_include_directories(${target} SYSTEM PRIVATE ${DT_ROCTRACER_INCLUDE_DIR})
    target_compile_definitions(${target} PRIVATE DT_HAVE_ROCTRACER_HEADERS=1)
  endif()
endfunction()
