# gpusched_area(NAME [DEPENDS area...] [LIBS target...] [COMPILED_LIBS target...])
#
# An area is one layer or policy family: headers in include/gpusched/NAME/, doctest suites in
# tests/NAME/*.cpp (one executable gpusched_NAME_tests) and benchmarks in benchmarks/NAME_*.cpp.
# The target is gpusched_NAME (alias and exported name gpusched::NAME).
#
# Policy families are header-only, the way Boost.Graph's algorithms are: with no src/NAME/*.cpp the
# area is an INTERFACE target that carries the include path, C++20 and its header-only dependencies
# (LIBS), and nothing is compiled or linked. An area with sources (io, sim, and a family whose
# conversion is still under way) is a static library. COMPILED_LIBS are header-only packages that only
# the area's .cpp files use ({fmt} in io and sim, a reader not yet moved to io/): linked privately and
# only in the build tree, so neither the interface nor the installed package names them.
set(GPUSCHED_AREA_TARGETS "")
# All of a target's sources as one translation unit (GPUSCHED_UNITY_BUILD); file-local names must then
# differ between its files (each source keeps its helpers in a namespace of its own).
function(gpusched_unity target)
  if(GPUSCHED_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE BATCH UNITY_BUILD_BATCH_SIZE 0)
  endif()
endfunction()

function(gpusched_area name)
  cmake_parse_arguments(ARG "" "" "DEPENDS;LIBS;COMPILED_LIBS" ${ARGN})
  set(target gpusched_${name})
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cpp)
  set(deps "")
  foreach(dep IN LISTS ARG_DEPENDS)
    list(APPEND deps gpusched_${dep})
  endforeach()
  if(sources)
    add_library(${target} STATIC ${sources})
    target_include_directories(${target} PUBLIC
      $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
      $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
      PRIVATE ${PROJECT_SOURCE_DIR}/src)
    set(compiled_libs "")
    foreach(lib IN LISTS ARG_COMPILED_LIBS)
      list(APPEND compiled_libs $<BUILD_INTERFACE:${lib}>)
    endforeach()
    target_link_libraries(${target} PUBLIC ${deps} ${ARG_LIBS} PRIVATE ${compiled_libs})
    target_compile_features(${target} PUBLIC cxx_std_20)
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    gpusched_set_warnings(${target})
    gpusched_unity(${target})
    set_property(GLOBAL APPEND PROPERTY GPUSCHED_COMPILED_AREAS ${name})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE
      $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
      $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
    target_link_libraries(${target} INTERFACE ${deps} ${ARG_LIBS})
    target_compile_features(${target} INTERFACE cxx_std_20)
  endif()
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  add_library(gpusched::${name} ALIAS ${target})
  set(GPUSCHED_AREA_TARGETS ${GPUSCHED_AREA_TARGETS} ${target} PARENT_SCOPE)
  set_property(GLOBAL APPEND PROPERTY GPUSCHED_AREAS ${name})
  set_property(GLOBAL PROPERTY GPUSCHED_AREA_DEPENDS_${name} ${ARG_DEPENDS})
  set_property(GLOBAL PROPERTY GPUSCHED_AREA_LIBS_${name} ${ARG_LIBS})
endfunction()

# A program of gpusched's own build links the separately compiled families (GPUSCHED_SEPARATE_COMPILATION,
# top-level CMakeLists.txt); without that option it compiles them inline like any consumer.
function(gpusched_use_compiled target)
  # PUBLIC for the installed libraries (io, sim): their users compile the families the same way.
  set(scope PRIVATE)
  if(ARGN)
    set(scope ${ARGN})
  endif()
  if(GPUSCHED_SEPARATE_COMPILATION)
    target_link_libraries(${target} ${scope} gpusched_compiled)
  endif()
endfunction()
