# Warnings and sanitizers, applied per target (or to this directory) so that consumers of the
# installed package and a parent project that add_subdirectory()s us are not forced to take our flags.
function(gpusched_set_warnings target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic
                                             $<$<BOOL:${GPUSCHED_WERROR}>:-Werror>)
  endif()
endfunction()

if(GPUSCHED_BUILD_FUZZERS AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "GPUSCHED_BUILD_FUZZERS needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++")
endif()

# ASan + UBSan on everything (fuzz builds too). libFuzzer's coverage instrumentation is added only
# where the harnesses need it (the io library and the harnesses themselves: fuzz/CMakeLists.txt), so
# a fuzz build's tests and tool compile no slower than a plain sanitizer build's.
if(GPUSCHED_SANITIZE OR GPUSCHED_BUILD_FUZZERS)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined -fno-sanitize-recover=all)
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    # A C program (the C API's test and example) linked by clang gets UBSan's C runtime only, but the
    # C++ library inside libgpusched_c needs the C++ part (vptr and function-type checks), which needs
    # the C++ standard library after it on the link line.
    add_link_options($<$<LINK_LANGUAGE:C>:-fsanitize-link-c++-runtime>)
    string(APPEND CMAKE_C_STANDARD_LIBRARIES " -lstdc++")
  endif()
endif()

# Coverage (.ci/coverage): gcov-format counters with GCC, and with clang too (clang's --coverage
# writes .gcno/.gcda that `llvm-cov gcov` reads), so one clang build can do sanitizers, fuzz
# harnesses and coverage together. Counters are written at exit: a test that aborts records nothing.
if(GPUSCHED_COVERAGE)
  add_compile_options(--coverage -fno-inline)
  add_link_options(--coverage)
endif()

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
