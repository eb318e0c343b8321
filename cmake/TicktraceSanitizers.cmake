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
endif()
