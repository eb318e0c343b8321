# Installs libtrace as a CMake package: find_package(ticktrace CONFIG REQUIRED)
# then target_link_libraries(app ticktrace::trace). What it installs needs the
# C++ standard library and Threads alone (docs/api.md); the collector's side
# (ticktrace::reader, on Abseil) and the calibration test seam
# (ticktrace/internal/) stay in the build tree.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS ticktrace_trace EXPORT ticktraceTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY libtrace/include/ticktrace DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        PATTERN internal EXCLUDE)
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

# The tools, for running ticktrace as a service: the binaries, the systemd
# unit (examples/systemd/, one instance per session) with ExecStart pointing
# at the installed collector, and bash completion for every binary (one copy
# of examples/shell/ticktrace.bash per command name, as bash-completion looks
# them up). docs/operations.md says how to use them.
set(TICKTRACE_SYSTEMD_UNIT_DIR "lib/systemd/system" CACHE STRING
    "Where cmake --install puts the systemd unit (relative: under the prefix)")
set(TICKTRACE_BASH_COMPLETION_DIR "${CMAKE_INSTALL_DATADIR}/bash-completion/completions" CACHE
    STRING "Where cmake --install puts bash completion (relative: under the prefix)")
if(TICKTRACE_BUILD_TOOLS)
  set(ticktrace_programs ticktrace-collector ticktrace-view ticktrace-demo
      ticktrace-example-feed ticktrace-example-strategy ticktrace-example-gateway)
  set(ticktrace_installed_programs "")
  foreach(program ${ticktrace_programs})
    if(TARGET ${program})
      list(APPEND ticktrace_installed_programs ${program})
    endif()
  endforeach()
  install(TARGETS ${ticktrace_installed_programs} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  # The loadable SQLite extension (store/sqlite/sqlite_extension.cc) beside
  # the libraries, for `.load <libdir>/libticktrace_sqlite` (docs/store.md).
  # Not part of the CMake package: nothing links it.
  if(TARGET ticktrace_sqlite)
    install(TARGETS ticktrace_sqlite LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  endif()
  foreach(program ${ticktrace_installed_programs})
    install(FILES examples/shell/ticktrace.bash DESTINATION ${TICKTRACE_BASH_COMPLETION_DIR}
            RENAME ${program})
  endforeach()
  if(TARGET ticktrace-collector)
    # Written at install time, so that `cmake --install --prefix P` points the
    # unit at P/bin/ticktrace-collector.
    set(unit_out "${CMAKE_CURRENT_BINARY_DIR}/ticktrace-collector@.service")
    install(CODE "
      set(bindir \"${CMAKE_INSTALL_BINDIR}\")
      if(NOT IS_ABSOLUTE \"\${bindir}\")
        set(bindir \"\${CMAKE_INSTALL_PREFIX}/\${bindir}\")
      endif()
      file(READ \"${CMAKE_CURRENT_SOURCE_DIR}/examples/systemd/ticktrace-collector@.service\" unit)
      string(REPLACE \"/usr/local/bin/ticktrace-collector\" \"\${bindir}/ticktrace-collector\"
             unit \"\${unit}\")
      file(WRITE \"${unit_out}\" \"\${unit}\")")
    install(FILES "${unit_out}" DESTINATION ${TICKTRACE_SYSTEMD_UNIT_DIR})
  endif()
endif()
