# Compiles tests/consumer/headers_only.cpp with the compiler alone: gpusched's include directory, the
# header-only dependencies' include directories and FMT_HEADER_ONLY, no gpusched library, then runs
# it. While some policy family still has sources in src/ (during the header-only conversion,
# COMPILED_AREAS non-empty) the program cannot link yet, so it is only compiled (-fsyntax-only) and
# the output says so.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(args -std=c++20 -Wall -Wextra -Wpedantic -DFMT_HEADER_ONLY=1 -I${INCLUDE_DIR})
list(REMOVE_DUPLICATES DEPENDENCY_INCLUDE_DIRS)
foreach(dir IN LISTS DEPENDENCY_INCLUDE_DIRS)
  # The compiler's own directories stay implicit (-isystem /usr/include breaks #include_next).
  if(NOT dir MATCHES "^/usr(/local)?/include/?$")
    list(APPEND args -isystem ${dir})
  endif()
endforeach()
separate_arguments(extra UNIX_COMMAND "${SANITIZE_FLAGS}")
list(APPEND args ${extra})
if(COMPILED_AREAS)
  message(STATUS "SYNTAX ONLY: policy families still compiled: ${COMPILED_AREAS}")
  execute_process(COMMAND ${CXX} ${args} -fsyntax-only ${SOURCE} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "headers_only.cpp does not compile with the include path only")
  endif()
  return()
endif()
execute_process(COMMAND ${CXX} ${args} ${SOURCE} -o ${WORK_DIR}/headers_only RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "headers_only.cpp does not build with the include path only (no gpusched library)")
endif()
execute_process(COMMAND ${WORK_DIR}/headers_only RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "headers_only failed (${rc})")
endif()
