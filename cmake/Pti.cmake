# PTI-SDK (Intel GPUs): find the SDK's headers.
#
# With pti/pti_view.h found, src/backends/pti_abi.h checks every layout and
# value devtrace reads against the SDK's own (DT_HAVE_PTI_SDK): a build
# against another release fails rather than misread it. Without them
# devtrace uses its declaration, read from PTI 0.17.0's headers.
#
# Sets DT_HAVE_PTI (ON when the headers were found), DT_PTI_REASON (why not)
# and defines dt_configure_pti(target).

set(PTI_ROOT "$ENV{PTI_ROOT}" CACHE PATH "PTI-SDK root (contains include/pti/pti_view.h)")
option(DEVTRACE_PTI_SDK "Check devtrace's PTI declaration against the PTI-SDK headers when found" ON)

set(DT_HAVE_PTI OFF)
set(DT_PTI_REASON "")
if(DEVTRACE_PTI_SDK)
  set(_dt_pti_hints)
  if(PTI_ROOT)
    list(APPEND _dt_pti_hints ${PTI_ROOT}/include)
  endif()
  if(DEFINED ENV{ONEAPI_ROOT})
    list(APPEND _dt_pti_hints $ENV{ONEAPI_ROOT}/pti/latest/include)
  endif()
  list(APPEND _dt_pti_hints /opt/intel/oneapi/pti/latest/include)
  find_path(DT_PTI_VIEW_H pti/pti_view.h HINTS ${_dt_pti_hints} NO_DEFAULT_PATH)
  if(DT_PTI_VIEW_H)
    set(DT_HAVE_PTI ON)
  else()
    set(DT_PTI_REASON "pti/pti_view.h not found under PTI_ROOT, ONEAPI_ROOT or /opt/intel/oneapi/pti/latest")
  endif()
else()
  set(DT_PTI_REASON "DEVTRACE_PTI_SDK=OFF")
endif()

function(dt_configure_pti target)
  if(DT_HAVE_PTI)
    target_include_directories(${target} SYSTEM PRIVATE ${DT_PTI_VIEW_H})
    target_compile_definitions(${target} PRIVATE DT_HAVE_PTI_SDK=1)
  endif()
endfunction()
