# CUPTI (NVIDIA CUDA) detection.
#
# Sets DT_HAVE_CUPTI (ON/OFF), DT_CUPTI_INCLUDE_DIR, DT_CUPTI_LIBRARY_DIRS and
# DT_CUPTI_REASON (why it is absent), and defines dt_configure_cupti(target).
# The toolkit headers are used in place, never copied: they are NVIDIA-licensed.
# Search order: -DCUPTI_INCLUDE_DIR, CUDA_HOME, CUDA_PATH, CMake's CUDAToolkit,
# /usr/local/cuda.

set(DT_HAVE_CUPTI OFF)
set(DT_CUPTI_REASON "")
set(_dt_cupti_hints "")
foreach(_root "$ENV{CUDA_HOME}" "$ENV{CUDA_PATH}")
  if(_root)
    list(APPEND _dt_cupti_hints "${_root}/include" "${_root}/extras/CUPTI/include")
  endif()
endforeach()
if(NOT CUPTI_INCLUDE_DIR)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    list(APPEND _dt_cupti_hints ${CUDAToolkit_INCLUDE_DIRS}
         "${CUDAToolkit_LIBRARY_ROOT}/extras/CUPTI/include")
  endif()
endif()
list(APPEND _dt_cupti_hints /usr/local/cuda/include /usr/local/cuda/extras/CUPTI/include)

find_path(CUPTI_INCLUDE_DIR
  NAMES cupti_activity.h
  HINTS ${_dt_cupti_hints}
  NO_DEFAULT_PATH)
if(NOT CUPTI_INCLUDE_DIR)
  find_path(CUPTI_INCLUDE_DIR NAMES cupti_activity.h)
endif()

if(CUPTI_INCLUDE_DIR
   AND EXISTS "${CUPTI_INCLUDE_DIR}/cupti_runtime_cbid.h"
   AND EXISTS "${CUPTI_INCLUDE_DIR}/cupti_driver_cbid.h")
  # cupti_activity.h includes cuda.h: it may live beside CUPTI or one level up.
  set(DT_CUPTI_INCLUDE_DIR "${CUPTI_INCLUDE_DIR}")
  if(NOT EXISTS "${CUPTI_INCLUDE_DIR}/cuda.h")
    get_filename_component(_dt_cuda_root "${CUPTI_INCLUDE_DIR}/../../.." ABSOLUTE)
    if(EXISTS "${_dt_cuda_root}/include/cuda.h")
      list(APPEND DT_CUPTI_INCLUDE_DIR "${_dt_cuda_root}/include")
    endif()
  endif()
  get_filename_component(_dt_cupti_root "${CUPTI_INCLUDE_DIR}/.." ABSOLUTE)
  set(DT_CUPTI_LIBRARY_DIRS "${_dt_cupti_root}/lib64" "${_dt_cupti_root}/lib"
      "${_dt_cupti_root}/extras/CUPTI/lib64")
  set(DT_HAVE_CUPTI ON)
  message(STATUS "CUPTI headers: ${CUPTI_INCLUDE_DIR}")
else()
  set(DT_CUPTI_REASON "built without CUPTI headers (cupti_activity.h not found): set CUDA_HOME and rebuild")
  message(STATUS "CUPTI backend built without headers: ${DT_CUPTI_REASON}")
endif()

if(DT_HAVE_CUPTI AND NOT TARGET dt_cupti_cbid)
  set(_dt_cbid_out "${CMAKE_BINARY_DIR}/generated/cupti_cbid_names.h")
  add_custom_command(
    OUTPUT "${_dt_cbid_out}"
    COMMAND ${CMAKE_COMMAND} -E make_directory "${CMAKE_BINARY_DIR}/generated"
    COMMAND ${CMAKE_COMMAND} "-DRUNTIME=${CUPTI_INCLUDE_DIR}/cupti_runtime_cbid.h"
            "-DDRIVER=${CUPTI_INCLUDE_DIR}/cupti_driver_cbid.h" "-DOUT=${_dt_cbid_out}"
            -P "${CMAKE_SOURCE_DIR}/tools/gen_cupti_cbid.cmake"
    DEPENDS "${CMAKE_SOURCE_DIR}/tools/gen_cupti_cbid.cmake"
            "${CUPTI_INCLUDE_DIR}/cupti_runtime_cbid.h"
            "${CUPTI_INCLUDE_DIR}/cupti_driver_cbid.h"
    COMMENT "Generating CUPTI callback-id name tables"
    VERBATIM)
  add_custom_target(dt_cupti_cbid DEPENDS "${_dt_cbid_out}")
endif()

# Give a target what the CUPTI backend (or code decoding CUPTI records) needs:
# the toolkit include dirs (as system headers: they are not ours to keep
# warning-free), DT_HAVE_CUPTI=1 and the generated tables. Without headers it
# defines DT_HAVE_CUPTI=0 and the reason, which the backend reports.
function(dt_configure_cupti target)
  get_target_property(_done ${target} DT_CUPTI_CONFIGURED)
  if(_done)
    return()
  endif()
  set_target_properties(${target} PROPERTIES DT_CUPTI_CONFIGURED ON)
  if(DT_HAVE_CUPTI)
    target_include_directories(${target} SYSTEM PRIVATE ${DT_CUPTI_INCLUDE_DIR})
    target_include_directories(${target} PRIVATE "${CMAKE_BINARY_DIR}/generated")
    target_compile_definitions(${target} PRIVATE DT_HAVE_CUPTI=1)
    add_dependencies(${target} dt_cupti_cbid)
  else()
    target_compile_definitions(${target} PRIVATE DT_HAVE_CUPTI=0
      "DT_CUPTI_ABSENT_REASON=\"${DT_CUPTI_REASON}\"")
  endif()
endfunction()
