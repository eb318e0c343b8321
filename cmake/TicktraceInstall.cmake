# Installs libtrace as a CMake package: find_package(ticktrace CONFIG REQUIRED)
# then target_link_libraries(app ticktrace::trace).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS ticktrace_trace EXPORT ticktraceTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY libtrace/include/ticktrace DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT ticktraceTargets NAMESPACE ticktrace::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ticktrace)
configure_package_config_file(cmake/ticktraceConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/ticktraceConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ticktrace)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ticktraceConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ticktraceConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/ticktraceConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ticktrace)
