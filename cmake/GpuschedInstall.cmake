include(CMakePackageConfigHelpers)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/gpusched DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ${GPUSCHED_AREA_TARGETS} gpusched EXPORT gpuschedTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET gpusched_tool)
  install(TARGETS gpusched_tool RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT gpuschedTargets NAMESPACE gpusched:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gpusched)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/gpuschedConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gpuschedConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gpusched)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gpuschedConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/gpuschedConfig.cmake ${PROJECT_BINARY_DIR}/gpuschedConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gpusched)
