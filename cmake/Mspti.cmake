# MSPTI (Huawei Ascend, CANN): find CANN's MSPTI headers.
#
# MSPTI's ABI is public, so devtrace's declaration (src/backends/mspti_abi.h)
# decodes a real libmspti as well as the emulator. With CANN's mspti.h found,
# the backend and the layout test compile against it instead
# (DT_HAVE_MSPTI_SDK), which checks devtrace's layouts against the release
# installed; kinds the installed headers predate are left out.
#
# Roots, as Ascend users know them: ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME,
# then /usr/local/Ascend/ascend-toolkit/latest.
# Sets DT_HAVE_MSPTI, DT_MSPTI_INCLUDE_DIR and defines dt_configure_mspti(target).

set(ASCEND_HOME_PATH "$ENV{ASCEND_HOME_PATH}" CACHE PATH "CANN toolkit root (contains include/mspti or tools/mspti)")
option(DEVTRACE_MSPTI_SDK "Use CANN's MSPTI headers when found" ON)

set(DT_HAVE_MSPTI OFF)
set(DT_MSPTI_INCLUDE_DIR "")
set(_dt_mspti_defs)
if(DEVTRACE_MSPTI_SDK)
  set(_dt_ascend_roots)
  foreach(_root "${ASCEND_HOME_PATH}" "$ENV{ASCEND_TOOLKIT_HOME}" /usr/local/Ascend/ascend-toolkit/latest)
    if(_root)
      list(APPEND _dt_ascend_roots ${_root}/include/mspti ${_root}/tools/mspti/include ${_root}/include)
    endif()
  endforeach()
  find_path(DT_MSPTI_H mspti.h HINTS ${_dt_ascend_roots} NO_DEFAULT_PATH)
  if(DT_MSPTI_H)
    set(DT_HAVE_MSPTI ON)
    set(DT_MSPTI_INCLUDE_DIR ${DT_MSPTI_H})
  endif()
endif()

if(DT_HAVE_MSPTI)
  # Record kinds that came in later releases: compiled in only when these
  # headers declare them.
  include(CheckCSourceCompiles)
  set(CMAKE_REQUIRED_INCLUDES ${DT_MSPTI_INCLUDE_DIR})
  foreach(check
      "msptiActivityCommunication;DT_MSPTI_HAS_COMMUNICATION"
      "msptiActivityOverhead;DT_MSPTI_HAS_OVERHEAD"
      "msptiActivityMemcpy;DT_MSPTI_HAS_MEMORY_KINDS"
      "msptiActivityHccl;DT_MSPTI_HAS_HCCL")
    list(GET check 0 _type)
    list(GET check 1 _var)
    check_c_source_compiles("#include <mspti.h>\nint main(void) { return (int)sizeof(${_type}); }" ${_var})
    if(${_var})
      list(APPEND _dt_mspti_defs ${_var}=1)
    else()
      list(APPEND _dt_mspti_defs ${_var}=0)
    endif()
  endforeach()
  unset(CMAKE_REQUIRED_INCLUDES)
  list(APPEND _dt_mspti_defs DT_HAVE_MSPTI_SDK=1)
  message(STATUS "MSPTI: CANN headers in ${DT_MSPTI_INCLUDE_DIR}")
else()
  message(STATUS "MSPTI: mspti.h not found under ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME or "
                 "/usr/local/Ascend/ascend-toolkit/latest; using devtrace's declaration of the public ABI")
endif()
set(DT_MSPTI_DEFINITIONS ${_dt_mspti_defs} CACHE INTERNAL "")

function(dt_configure_mspti target)
  if(DT_HAVE_MSPTI)
    target_include_directories(${target} SYSTEM PRIVATE ${DT_MSPTI_INCLUDE_DIR})
    target_compile_definitions(${target} PRIVATE ${DT_MSPTI_DEFINITIONS})
  endif()
endfunction()
