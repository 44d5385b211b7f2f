# install(EXPORT) per component, so find_package(gpusched COMPONENTS packing gang) loads only those
# targets (and the components they depend on) and looks up only their dependencies; see
# cmake/gpuschedConfig.cmake.in. Public headers, including their detail/ headers, are installed;
# private headers (src/cli/*.hpp, tests/test_util.hpp) live outside include/ and are not.
include(CMakePackageConfigHelpers)
set(GPUSCHED_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/gpusched)

get_property(installed_areas GLOBAL PROPERTY GPUSCHED_AREAS)
foreach(area IN LISTS installed_areas)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/gpusched/${area}
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gpusched FILES_MATCHING PATTERN "*.hpp")
  install(TARGETS gpusched_${area} EXPORT gpusched-${area}-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT gpusched-${area}-targets NAMESPACE gpusched:: DESTINATION ${GPUSCHED_CMAKE_DIR})
endforeach()
# gpusched.hpp includes every family and the readers; gpusched::gpusched links every area.
install(FILES ${PROJECT_SOURCE_DIR}/include/gpusched/gpusched.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gpusched)
install(TARGETS gpusched EXPORT gpusched-all-targets)
install(EXPORT gpusched-all-targets NAMESPACE gpusched:: DESTINATION ${GPUSCHED_CMAKE_DIR})
# The separately compiled families (GPUSCHED_SEPARATE_COMPILATION) that io and sim were built
# against: installed with io, whose component loads it; gpusched/compiled.hpp for programs that opt in.
if(TARGET gpusched_compiled)
  install(TARGETS gpusched_compiled EXPORT gpusched-io-targets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(FILES ${PROJECT_SOURCE_DIR}/include/gpusched/compiled.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gpusched)
# A policy written in C (docs/policies.md): the C API's header and io/policy_plugin.hpp include it, and a
# plugin needs nothing else, so it is installed with either.
install(FILES ${PROJECT_SOURCE_DIR}/include/gpusched/c/policy.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gpusched/c)
# The C API: its header, the shared library and its own export set, found as the component "c"
# (no dependency to look up: everything it uses is linked into it).
if(TARGET gpusched_c)
  install(FILES ${PROJECT_SOURCE_DIR}/include/gpusched/c/gpusched.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gpusched/c)
  install(TARGETS gpusched_c EXPORT gpusched-c-targets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT gpusched-c-targets NAMESPACE gpusched:: DESTINATION ${GPUSCHED_CMAKE_DIR})
endif()
if(TARGET gpusched_tool)
  install(TARGETS gpusched_tool RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# The component graph, written into the package config: "area:dep1,dep2;area2:..."
set(GPUSCHED_COMPONENT_GRAPH "")
foreach(area IN LISTS installed_areas)
  get_property(area_deps GLOBAL PROPERTY GPUSCHED_AREA_DEPENDS_${area})
  list(JOIN area_deps "," area_deps)
  list(APPEND GPUSCHED_COMPONENT_GRAPH "${area}:${area_deps}")
endforeach()
if(TARGET gpusched_c)
  list(APPEND GPUSCHED_COMPONENT_GRAPH "c:")
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/gpuschedConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gpuschedConfig.cmake INSTALL_DESTINATION ${GPUSCHED_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gpuschedConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/gpuschedConfig.cmake ${PROJECT_BINARY_DIR}/gpuschedConfigVersion.cmake
        DESTINATION ${GPUSCHED_CMAKE_DIR})
