# cmake -DEXE=program [-DARGS=a;b] -DEXPECTED=file -P RunAndCompare.cmake: runs the program (with ARGS)
# and fails unless it exits 0 and prints exactly the expected text (an example whose output is part of
# its test).
execute_process(COMMAND ${EXE} ${ARGS} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} exited with ${rc}:\n${out}")
endif()
file(READ ${EXPECTED} expected)
if(NOT out STREQUAL expected)
  message(FATAL_ERROR "${EXE}: output differs from ${EXPECTED}.\n--- got:\n${out}--- expected:\n${expected}")
endif()
