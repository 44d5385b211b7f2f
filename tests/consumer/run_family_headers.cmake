# One policy family's headers alone: every public header of include/gpusched/FAMILY/ in one unit,
# preprocessed with gpusched's include directory and only the family's own declared dependencies
# (LIBS of its area and of the areas below it: Boost and {fmt} for topology, Eigen for fairness and
# scheduler, nothing for core, cluster, packing, mig and gang). The preprocessor's list of the
# headers it read (-M) must name no other family's dependency and no gpusched area above the family:
# what a header pulls in is what the family's CMake component promises (find_package(gpusched
# COMPONENTS gang) looks up no Boost, no {fmt}, no Eigen). Preprocessing only: that every family
# compiles with the include paths alone is consumer_headers_only's check (compiling each family
# here again cost CI ~90 s of CPU).
#
#   -DCXX -DINCLUDE_DIR -DWORK_DIR -DFAMILY
#   -DALLOWED_AREAS=a,b,c   the family and the areas below it
#   -DALLOWED_LIBS=x,y      of boost, fmt, eigen
#   -DEIGEN_DIR             Eigen's include directory (/usr/include/eigen3 on Debian)
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
string(REPLACE "," ";" allowed_areas "${ALLOWED_AREAS}")
string(REPLACE "," ";" allowed_libs "${ALLOWED_LIBS}")

file(GLOB headers RELATIVE ${INCLUDE_DIR} ${INCLUDE_DIR}/gpusched/${FAMILY}/*.hpp)
if(NOT headers)
  message(FATAL_ERROR "no headers in ${INCLUDE_DIR}/gpusched/${FAMILY}")
endif()
set(unit "// every public header of gpusched/${FAMILY}\n")
foreach(h IN LISTS headers)
  string(APPEND unit "#include \"${h}\"\n")
endforeach()
string(APPEND unit "int main() { return 0; }\n")
file(WRITE ${WORK_DIR}/${FAMILY}.cpp "${unit}")

set(args -std=c++20 -E -I${INCLUDE_DIR})
if("eigen" IN_LIST allowed_libs AND NOT EIGEN_DIR MATCHES "^/usr(/local)?/include/?$")
  list(APPEND args -isystem ${EIGEN_DIR})
endif()
if("fmt" IN_LIST allowed_libs)
  list(APPEND args -DFMT_HEADER_ONLY=1)
endif()
execute_process(COMMAND ${CXX} ${args} -M -MF ${WORK_DIR}/${FAMILY}.d ${WORK_DIR}/${FAMILY}.cpp
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gpusched/${FAMILY}: its headers do not preprocess with gpusched's include path and "
                      "its own dependencies (${ALLOWED_LIBS}) alone")
endif()

# What it read. Each dependency is known by the directory its headers live in.
file(READ ${WORK_DIR}/${FAMILY}.d deps)
string(REGEX REPLACE "[ \t\r\n\\\\]+" ";" deps "${deps}")
set(libs_by_dir boost "/boost/" fmt "/fmt/" eigen "/eigen3/" nlohmann_json "/nlohmann/" yaml-cpp "/yaml-cpp/"
                clp "/coin/" pybind11 "/pybind11/")
list(LENGTH libs_by_dir n)
set(problems "")
foreach(path IN LISTS deps)
  if(path MATCHES ":$" OR path STREQUAL "")
    continue()
  endif()
  set(i 0)
  while(i LESS n)
    list(GET libs_by_dir ${i} lib)
    math(EXPR j "${i} + 1")
    list(GET libs_by_dir ${j} fragment)
    if(path MATCHES "${fragment}" AND NOT lib IN_LIST allowed_libs)
      list(APPEND problems "${path} (${lib}, not a dependency of ${FAMILY})")
    endif()
    math(EXPR i "${i} + 2")
  endwhile()
  if(path MATCHES "/include/gpusched/([a-z_]+)/")
    if(NOT CMAKE_MATCH_1 IN_LIST allowed_areas)
      list(APPEND problems "${path} (gpusched/${CMAKE_MATCH_1}, not below ${FAMILY})")
    endif()
  elseif(path MATCHES "/include/gpusched/compiled\\.hpp$")
    list(APPEND problems "${path} (the compiled library's unit)")
  endif()
endforeach()
if(problems)
  list(REMOVE_DUPLICATES problems)
  list(LENGTH problems count)
  list(SUBLIST problems 0 10 shown)
  list(JOIN shown "\n  " shown)
  message(FATAL_ERROR "gpusched/${FAMILY} reads ${count} header(s) its component does not promise:\n  ${shown}")
endif()
list(LENGTH deps count)
message(STATUS "gpusched/${FAMILY}: ${count} headers read, none beyond ${ALLOWED_LIBS} and the areas ${ALLOWED_AREAS}")
