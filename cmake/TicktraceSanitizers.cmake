# TICKTRACE_SANITIZE=address,undefined or thread applies to every target of the build.
if(TICKTRACE_SANITIZE)
  string(REPLACE " " "" _ticktrace_san "${TICKTRACE_SANITIZE}")
  if(_ticktrace_san MATCHES "thread" AND _ticktrace_san MATCHES "address")
    message(FATAL_ERROR "TICKTRACE_SANITIZE: thread cannot be combined with address")
  endif()
  message(STATUS "ticktrace: sanitizers ${_ticktrace_san}")
  add_compile_options(-fsanitize=${_ticktrace_san} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_ticktrace_san})
  # Tests relax latency bounds under instrumentation. Compilers disagree on
  # the predefined macros (clang 14 has no __SANITIZE_ADDRESS__), so the build
  # says it once for every target.
  add_compile_definitions(TICKTRACE_SANITIZED=1)
endif()
