# gpusched_area(NAME [DEPENDS area...] [LIBS target...])
#
# An area is one layer or policy family: headers in include/gpusched/NAME/, compiled sources in
# src/NAME/*.cpp, doctest suites in tests/NAME/*.cpp (one executable gpusched_NAME_tests) and
# benchmarks in benchmarks/NAME_*.cpp (one executable each). The library target is gpusched_NAME
# (alias gpusched::NAME); an area without sources is an INTERFACE library.
set(GPUSCHED_AREA_TARGETS "")
function(gpusched_area name)
  cmake_parse_arguments(ARG "" "" "DEPENDS;LIBS" ${ARGN})
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
    target_link_libraries(${target} PUBLIC ${deps} ${ARG_LIBS} fmt::fmt)
    target_compile_features(${target} PUBLIC cxx_std_20)
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    gpusched_set_warnings(${target})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE
      $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
      $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
    target_link_libraries(${target} INTERFACE ${deps} ${ARG_LIBS} fmt::fmt)
    target_compile_features(${target} INTERFACE cxx_std_20)
  endif()
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  add_library(gpusched::${name} ALIAS ${target})
  set(GPUSCHED_AREA_TARGETS ${GPUSCHED_AREA_TARGETS} ${target} PARENT_SCOPE)
  set_property(GLOBAL APPEND PROPERTY GPUSCHED_AREAS ${name})
endfunction()
