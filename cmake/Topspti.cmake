# TOPSPTI (Enflame GCU): find the TopsRider SDK headers.
#
# With topspti_activity.h and topspti_callbacks.h found, src/backends/topspti.c
# decodes records through the SDK's own structs (DT_HAVE_TOPSPTI_SDK) and
# refuses devtrace's emulator. Without them it uses devtrace's declaration
# (src/backends/topspti_abi.h) and refuses any real libtopspti.
#
# Sets DT_HAVE_TOPSPTI (ON when the SDK headers were found), DT_TOPSPTI_REASON
# (why not) and defines dt_configure_topspti(target).

set(TOPS_HOME "$ENV{TOPS_HOME}" CACHE PATH "TopsRider SDK root (contains extras/TOPSPTI)")
option(DEVTRACE_TOPSPTI_SDK "Use the TopsRider SDK headers when found" ON)

set(DT_HAVE_TOPSPTI OFF)
set(DT_TOPSPTI_REASON "")
set(DT_TOPSPTI_INCLUDE_DIR "")
if(DEVTRACE_TOPSPTI_SDK)
  set(_dt_tops_hints)
  if(TOPS_HOME)
    list(APPEND _dt_tops_hints ${TOPS_HOME}/extras/TOPSPTI/include ${TOPS_HOME}/include)
  endif()
  list(APPEND _dt_tops_hints /opt/tops/extras/TOPSPTI/include)
  find_path(DT_TOPSPTI_ACTIVITY_H topspti_activity.h HINTS ${_dt_tops_hints} NO_DEFAULT_PATH)
  find_path(DT_TOPSPTI_CALLBACKS_H topspti_callbacks.h HINTS ${_dt_tops_hints} NO_DEFAULT_PATH)
  if(DT_TOPSPTI_ACTIVITY_H AND DT_TOPSPTI_CALLBACKS_H)
    set(DT_HAVE_TOPSPTI ON)
    set(DT_TOPSPTI_INCLUDE_DIR ${DT_TOPSPTI_ACTIVITY_H})
  else()
    set(DT_TOPSPTI_REASON "topspti_activity.h/topspti_callbacks.h not found under TOPS_HOME or /opt/tops/extras/TOPSPTI/include")
  endif()
else()
  set(DT_TOPSPTI_REASON "DEVTRACE_TOPSPTI_SDK=OFF")
endif()

set(_dt_topspti_defs)
if(DT_HAVE_TOPSPTI)
  # Launch details the SDK's kernel/memcpy records may or may not carry: read
  # only what the headers declare.
  include(CheckStructHasMember)
  set(CMAKE_REQUIRED_INCLUDES ${DT_TOPSPTI_INCLUDE_DIR})
  set(_dt_tops_hdr "topspti_activity.h")
  foreach(check
      "Topspti_ActivityKernel;registersPerThread;DT_TOPSPTI_HAS_KERNEL_REGISTERS"
      "Topspti_ActivityKernel;dynamicSharedMemory;DT_TOPSPTI_HAS_KERNEL_SHARED_MEMORY"
      "Topspti_ActivityKernel;queued;DT_TOPSPTI_HAS_KERNEL_QUEUED"
      "Topspti_ActivityKernel;submitted;DT_TOPSPTI_HAS_KERNEL_SUBMITTED"
      "Topspti_ActivityMemcpy;dstDeviceId;DT_TOPSPTI_HAS_MEMCPY_PEER_DEVICES")
    list(GET check 0 _struct)
    list(GET check 1 _member)
    list(GET check 2 _var)
    check_struct_has_member("${_struct}" "${_member}" "${_dt_tops_hdr}" ${_var} LANGUAGE C)
    if(${_var})
      list(APPEND _dt_topspti_defs ${_var}=1)
    else()
      list(APPEND _dt_topspti_defs ${_var}=0)
    endif()
  endforeach()
  unset(CMAKE_REQUIRED_INCLUDES)
  list(APPEND _dt_topspti_defs DT_HAVE_TOPSPTI_SDK=1)
  message(STATUS "TOPSPTI: SDK headers in ${DT_TOPSPTI_INCLUDE_DIR}")
else()
  message(STATUS "TOPSPTI: ${DT_TOPSPTI_REASON}; building against devtrace's declaration "
                 "(decodes the emulator only; set TOPS_HOME for real hardware)")
endif()
set(DT_TOPSPTI_DEFINITIONS ${_dt_topspti_defs} CACHE INTERNAL "")

function(dt_configure_topspti target)
  if(DT_HAVE_TOPSPTI)
    target_include_directories(${target} PRIVATE ${DT_TOPSPTI_INCLUDE_DIR})
    target_compile_definitions(${target} PRIVATE ${DT_TOPSPTI_DEFINITIONS})
  endif()
endfunction()
