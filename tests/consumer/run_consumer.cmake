# Builds tests/consumer/ (a tiny outside project) against gpusched and runs it:
#   MODE=install       installs the ALREADY BUILT tree BUILD_DIR into WORK_DIR/prefix (no rebuild of
#                      the library), then find_package(gpusched COMPONENTS packing gang); also checks
#                      that an unknown component fails with a clear message;
#   MODE=subdirectory  add_subdirectory(SOURCE_DIR EXCLUDE_FROM_ALL) with no build type.
# SANITIZE_FLAGS (the sanitizer build) are passed on, since the installed archives carry them.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(flags "")
if(SANITIZE_FLAGS)
  set(flags "-DCMAKE_CXX_FLAGS=${SANITIZE_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${SANITIZE_FLAGS}")
endif()
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGN}")
  endif()
endfunction()
if(MODE STREQUAL "install")
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
  foreach(private cli test_util.hpp)
    if(EXISTS ${WORK_DIR}/prefix/include/gpusched/${private})
      message(FATAL_ERROR "private header ${private} was installed")
    endif()
  endforeach()
  run(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/app -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
      -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCONSUMER_COMPONENTS=packing,gang ${flags})
  # An unknown component must fail the configure step and name itself.
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/bad -G ${GENERATOR}
                  -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCONSUMER_COMPONENTS=packing,no_such_family
                  RESULT_VARIABLE bad_rc OUTPUT_VARIABLE bad_out ERROR_VARIABLE bad_err)
  if(bad_rc EQUAL 0 OR NOT "${bad_out}${bad_err}" MATCHES "no component 'no_such_family'")
    message(FATAL_ERROR "an unknown component was not reported:\n${bad_out}${bad_err}")
  endif()
  # The C API, when built: the installed shared library through find_package(gpusched COMPONENTS c),
  # a C program run on the shipped example; and the Python package under the prefix's site-packages.
  if(EXISTS ${WORK_DIR}/prefix/include/gpusched/c/gpusched.h)
    set(c_flags "")
    if(SANITIZE_FLAGS)
      set(c_flags "-DCMAKE_C_FLAGS=${SANITIZE_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${SANITIZE_FLAGS}")
    endif()
    run(${CMAKE_COMMAND} -S ${CONSUMER_DIR}/c -B ${WORK_DIR}/c_app -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
        -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DEXAMPLE_SOURCE=${CONSUMER_DIR}/../../examples/c/place.c ${c_flags})
    run(${CMAKE_COMMAND} --build ${WORK_DIR}/c_app)
    run(${WORK_DIR}/c_app/place_c ${CONSUMER_DIR}/../../examples/cluster.json ${CONSUMER_DIR}/../../examples/jobs.json)
  endif()
  # A C++ program linking gpusched::io (tests/consumer/io/): built, run on the shipped example, and
  # its own object defines no family function (place_gang comes from the installed library).
  run(${CMAKE_COMMAND} -S ${CONSUMER_DIR}/io -B ${WORK_DIR}/io_app -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
      -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix ${flags})
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/io_app)
  run(${WORK_DIR}/io_app/place_io ${CONSUMER_DIR}/../../examples/cluster.json ${CONSUMER_DIR}/../../examples/jobs.json)
  file(GLOB_RECURSE io_objects ${WORK_DIR}/io_app/CMakeFiles/place_io.dir/*.o)
  find_program(NM nm REQUIRED)
  execute_process(COMMAND ${NM} -C --defined-only ${io_objects} OUTPUT_VARIABLE io_defined RESULT_VARIABLE nm_rc)
  if(NOT nm_rc EQUAL 0 OR NOT io_objects)
    message(FATAL_ERROR "could not list the symbols of ${io_objects}")
  endif()
  if(io_defined MATCHES "gpusched::place_gang\\(")
    message(FATAL_ERROR "a program linking gpusched::io defines gpusched::place_gang itself, beside the installed "
                        "library's: the families were compiled header-only in it")
  endif()
  file(GLOB_RECURSE python_modules ${WORK_DIR}/prefix/_core*)
  file(GLOB_RECURSE built_modules ${BUILD_DIR}/python/_core*)
  if(built_modules AND NOT python_modules)
    message(FATAL_ERROR "the Python module was built but not installed under ${WORK_DIR}/prefix")
  endif()
else()
  run(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/app -G ${GENERATOR}
      -DGPUSCHED_SOURCE_DIR=${SOURCE_DIR} -DGPUSCHED_WITH_IO=OFF -DGPUSCHED_WITH_SIM=OFF ${flags})
endif()
run(${CMAKE_COMMAND} --build ${WORK_DIR}/app --parallel 2)
run(${WORK_DIR}/app/consumer)
