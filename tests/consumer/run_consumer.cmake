# Builds tests/consumer/ (a tiny outside project) against gpusched, either through the installed
# package (MODE=install) or through add_subdirectory (MODE=subdirectory), then runs it.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(flags "")
if(SANITIZE_FLAGS)
  set(flags "-DCMAKE_CXX_FLAGS=${SANITIZE_FLAGS}")
endif()
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGN}")
  endif()
endfunction()
if(MODE STREQUAL "install")
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/lib -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
      -DGPUSCHED_BUILD_TESTS=OFF -DGPUSCHED_BUILD_BENCHMARKS=OFF -DGPUSCHED_BUILD_EXAMPLES=OFF
      -DGPUSCHED_BUILD_TOOL=OFF -DGPUSCHED_INSTALL=ON -DCMAKE_INSTALL_PREFIX=${WORK_DIR}/prefix)
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/lib --parallel 2)
  run(${CMAKE_COMMAND} --install ${WORK_DIR}/lib)
  run(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/app -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
      -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
else()
  run(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/app -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
      -DGPUSCHED_SOURCE_DIR=${SOURCE_DIR})
endif()
run(${CMAKE_COMMAND} --build ${WORK_DIR}/app --parallel 2)
run(${WORK_DIR}/app/consumer)
