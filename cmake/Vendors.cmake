# The vendor list for CMake: parses src/backends/vendors.def (the one table
# the C sources include too) into
#   DT_VENDORS                      the names, in order
#   DT_VENDOR_<name>_ENV            the library variable
#   DT_VENDOR_<name>_EMULATOR       the emulator library, relative to the build tree
#   DT_VENDOR_<name>_SUBSCRIBE      the subscribe symbol ("" if none)
#   DT_VENDOR_<name>_SDK            the SDK detection module ("" if none)
#   DT_VENDOR_<name>_SKIP_IF        a variable that, when true, means this build
#                                   cannot decode the vendor's emulator
# and includes each vendor's SDK detection module (cmake/<module>.cmake).
# dt_configure_backends(target) gives a target what every backend's sources
# need (each module's dt_configure_<name>, where it defines one).
set(DT_VENDORS "")
file(STRINGS "${CMAKE_SOURCE_DIR}/src/backends/vendors.def" _dt_vendor_rows REGEX "^DT_VENDOR\\(")
foreach(_row IN LISTS _dt_vendor_rows)
  string(REGEX REPLACE "^DT_VENDOR\\((.*)\\)[ \t]*$" "\\1" _fields "${_row}")
  string(REPLACE "\"" "" _fields "${_fields}")
  string(REPLACE "," ";" _fields "${_fields}")
  set(_clean "")
  foreach(_f IN LISTS _fields)
    string(STRIP "${_f}" _f)
    list(APPEND _clean "${_f}")
  endforeach()
  list(LENGTH _clean _n)
  if(NOT _n EQUAL 6)
    message(FATAL_ERROR "vendors.def: a row needs 6 fields: ${_row}")
  endif()
  list(GET _clean 0 _name)
  list(APPEND DT_VENDORS ${_name})
  set(_i 1)
  foreach(_key ENV EMULATOR SUBSCRIBE SDK SKIP_IF)
    list(GET _clean ${_i} DT_VENDOR_${_name}_${_key})
    math(EXPR _i "${_i} + 1")
  endforeach()
  if(DT_VENDOR_${_name}_SDK AND EXISTS "${CMAKE_SOURCE_DIR}/cmake/${DT_VENDOR_${_name}_SDK}.cmake")
    include("${CMAKE_SOURCE_DIR}/cmake/${DT_VENDOR_${_name}_SDK}.cmake")
  endif()
endforeach()

function(dt_configure_backends target)
  foreach(_name IN LISTS DT_VENDORS)
    if(COMMAND dt_configure_${_name})
      cmake_language(CALL dt_configure_${_name} ${target})
    endif()
  endforeach()
endfunction()
