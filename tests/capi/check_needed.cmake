# libgpusched_c depends on nothing beyond the C/C++ runtime (docs/c-api.md): its dynamic section
# (readelf -d) names only libstdc++, libm, libgcc_s, libc and the dynamic loader. yaml-cpp, CLP or
# any other library there fails the test, naming it.
#   cmake -DLIB=<path to libgpusched_c.so> -DREADELF=<readelf> -P check_needed.cmake
execute_process(COMMAND ${READELF} -d ${LIB} OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${READELF} -d ${LIB} failed (${rc})")
endif()
string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*\\[[^]]+\\]" needed "${dynamic}")
if(NOT needed)
  message(FATAL_ERROR "${LIB}: no NEEDED entries read from:\n${dynamic}")
endif()
set(allowed "^(libstdc\\+\\+\\.so\\.6|libm\\.so\\.6|libgcc_s\\.so\\.1|libc\\.so\\.6|ld-linux[-a-z0-9_.]*\\.so\\.[0-9]+)$")
foreach(entry IN LISTS needed)
  string(REGEX REPLACE ".*\\[([^]]+)\\]" "\\1" name "${entry}")
  if(NOT name MATCHES "${allowed}")
    message(FATAL_ERROR "${LIB} needs ${name} at run time: the C API must need the C/C++ runtime only")
  endif()
  message(STATUS "needed: ${name}")
endforeach()
