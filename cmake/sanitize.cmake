# Sanitizer and fuzzing builds (see scripts/test-sanitize.sh and scripts/fuzz.sh).
#
# LOCR_SANITIZE: comma-separated sanitizers applied to every target (compile and link):
#   address,undefined  ASan + UBSan; undefined behaviour aborts (-fno-sanitize-recover) so a test fails
#   thread             TSan, for the engine and server threads
# LOCR_FUZZ=ON (clang only): libFuzzer targets in tests/fuzz, with every library instrumented for
# coverage (-fsanitize=fuzzer-no-link) plus ASan and UBSan. Without it, the same targets are built
# with a small main() that replays files (tests/fuzz/regressions), so found crashes stay fixed.
# Both need the CUDA backend off: nvcc and device code are not instrumented.
set(LOCR_SANITIZE "" CACHE STRING "Sanitizers for every target: address,undefined | address | undefined | thread")
option(LOCR_FUZZ "Build the libFuzzer targets of tests/fuzz (clang only; implies address,undefined)" OFF)

if(LOCR_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "LOCR_FUZZ=ON needs clang (libFuzzer); configure with -DCMAKE_CXX_COMPILER=clang++ "
                        "-DCMAKE_C_COMPILER=clang (scripts/fuzz.sh does)")
  endif()
  if(LOCR_SANITIZE STREQUAL "")
    set(LOCR_SANITIZE "address,undefined")
  endif()
endif()

set(LOCR_SANITIZER_FLAGS "")
if(NOT LOCR_SANITIZE STREQUAL "")
  if(LOCR_CUDA)
    message(FATAL_ERROR "LOCR_SANITIZE=${LOCR_SANITIZE} needs LOCR_CUDA=OFF (device code is not instrumented)")
  endif()
  string(REPLACE "," ";" _locr_sans "${LOCR_SANITIZE}")
  foreach(_s ${_locr_sans})
    if(NOT _s MATCHES "^(address|undefined|thread)$")
      message(FATAL_ERROR "LOCR_SANITIZE: unknown sanitizer '${_s}' (use address,undefined or thread)")
    endif()
  endforeach()
  if("thread" IN_LIST _locr_sans AND "address" IN_LIST _locr_sans)
    message(FATAL_ERROR "LOCR_SANITIZE: thread and address cannot be combined; build them separately")
  endif()
  list(APPEND LOCR_SANITIZER_FLAGS "-fsanitize=${LOCR_SANITIZE}" -fno-omit-frame-pointer)
  if("undefined" IN_LIST _locr_sans)
    list(APPEND LOCR_SANITIZER_FLAGS -fno-sanitize-recover=undefined)
  endif()
  add_compile_options(${LOCR_SANITIZER_FLAGS})
  add_link_options(${LOCR_SANITIZER_FLAGS})
  message(STATUS "locr: sanitizers ${LOCR_SANITIZE}")
endif()
if(LOCR_FUZZ)
  # Coverage for the libraries; the fuzz targets themselves link with -fsanitize=fuzzer (tests/fuzz).
  add_compile_options(-fsanitize=fuzzer-no-link)
  message(STATUS "locr: libFuzzer targets ON")
endif()
