# cmake -DEXE=program [-DARGS=a;b;c] [-DDROP_REGEX=re] -DEXPECTED=file -P RunAndCompare.cmake: runs
# the program (with the arguments) and fails unless it exits 0 and prints exactly the expected text
# (an example whose output is part of its test; the main job's numbers, identical with GCC and
# clang). Lines matching DROP_REGEX (a wall-clock time) are removed from the output first.
execute_process(COMMAND ${EXE} ${ARGS} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} exited with ${rc}:\n${out}")
endif()
if(DEFINED DROP_REGEX)
  string(REGEX REPLACE "[^\n]*${DROP_REGEX}[^\n]*\n" "" out "${out}")
endif()
file(READ ${EXPECTED} expected)
if(NOT out STREQUAL expected)
  message(FATAL_ERROR "${EXE}: output differs from ${EXPECTED}.\n--- got:\n${out}--- expected:\n${expected}")
endif()
