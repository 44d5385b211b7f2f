# Builds examples/go with `go build` (cgo against libgpusched_c, no network, caches under WORK_DIR)
# and runs it, comparing its output with EXPECTED:
#   cmake -DGO=go -DSOURCE_DIR=examples/go -DWORK_DIR=dir -DINCLUDE_DIR=include -DLIB_DIR=dir
#         -DARGS=a;b -DEXPECTED=file -P run_go.cmake
file(MAKE_DIRECTORY ${WORK_DIR})
set(env
  GOCACHE=${WORK_DIR}/cache GOPATH=${WORK_DIR}/gopath GOPROXY=off GO111MODULE=on
  GOTOOLCHAIN=local CGO_ENABLED=1 "CGO_CFLAGS=-I${INCLUDE_DIR}"
  "CGO_LDFLAGS=-L${LIB_DIR} -lgpusched_c -Wl,-rpath,${LIB_DIR}")
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${env} ${GO} build -o ${WORK_DIR}/place .
                WORKING_DIRECTORY ${SOURCE_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "go build failed (${rc}):\n${out}")
endif()
execute_process(COMMAND ${WORK_DIR}/place ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the Go example exited with ${rc}:\n${out}${err}")
endif()
file(READ ${EXPECTED} expected)
if(NOT out STREQUAL expected)
  message(FATAL_ERROR "the Go example's output differs from ${EXPECTED}.\n--- got:\n${out}--- expected:\n${expected}")
endif()
