# locr_add_pytest_tests(DIR <dir> PREFIX <name> LABEL <label> [ENVIRONMENT <k=v>...] [TIMEOUT <s>])
#
# Runs pytest from the venv that scripts/install-deps.sh creates at .venv; without it nothing is
# registered and configure says so. Every test gets LOCR_BIN (the built locr) and
# PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 in its environment, plus ENVIRONMENT.
#
# Registers every test that pytest collects under DIR as its own CTest entry (one per node id,
# parametrised cases included), so CTest counts, reruns and reports each one. A test that pytest
# skips exits 77 (the conftest.py hook `pytest_sessionfinish`), which CTest reports as skipped,
# never as passed. Collection runs at configure time and again whenever a test file changes; a
# collection error becomes one failing CTest entry that shows pytest's message.
function(locr_add_pytest_tests)
  cmake_parse_arguments(A "" "DIR;PREFIX;LABEL;TIMEOUT" "ENVIRONMENT" ${ARGN})
  set(A_PYTHON ${CMAKE_SOURCE_DIR}/.venv/bin/python)
  if(NOT EXISTS ${A_PYTHON})
    message(STATUS "${A_PREFIX} tests NOT registered: ${A_PYTHON} is missing; "
                   "run scripts/install-deps.sh to create the venv")
    return()
  endif()
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  list(PREPEND A_ENVIRONMENT "LOCR_BIN=$<TARGET_FILE:locr>" "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1")
  file(GLOB _files CONFIGURE_DEPENDS ${A_DIR}/*.py)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_files})
  # --rootdir: node ids relative to DIR (the pyproject.toml at the repository root would otherwise
  # make pytest take the root as rootdir).
  set(_cmd ${A_PYTHON} -m pytest -q -p no:cacheprovider --rootdir ${A_DIR})
  execute_process(COMMAND ${_cmd} --collect-only ${A_DIR}
                  WORKING_DIRECTORY ${A_DIR} OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(WARNING "pytest could not collect ${A_DIR} (exit ${_rc}); registering one failing test")
    add_test(NAME ${A_PREFIX}.collection COMMAND ${_cmd} --collect-only ${A_DIR} WORKING_DIRECTORY ${A_DIR})
    set_tests_properties(${A_PREFIX}.collection PROPERTIES LABELS ${A_LABEL})
    return()
  endif()
  string(REPLACE "\n" ";" _lines "${_out}")
  set(_n 0)
  foreach(_id IN LISTS _lines)
    if(NOT _id MATCHES "^[^ ]+\\.py::")
      continue()
    endif()
    string(REGEX REPLACE "\\.py::" "::" _name "${_id}")
    add_test(NAME ${A_PREFIX}.${_name} COMMAND ${_cmd} ${_id} WORKING_DIRECTORY ${A_DIR})
    set_tests_properties(${A_PREFIX}.${_name} PROPERTIES
      LABELS ${A_LABEL} TIMEOUT ${A_TIMEOUT} SKIP_RETURN_CODE 77 ENVIRONMENT "${A_ENVIRONMENT}")
    math(EXPR _n "${_n} + 1")
  endforeach()
  if(_n EQUAL 0)
    message(FATAL_ERROR "pytest collected no test under ${A_DIR}:\n${_out}")
  endif()
  message(STATUS "${A_PREFIX}: ${_n} pytest tests registered")
endfunction()
