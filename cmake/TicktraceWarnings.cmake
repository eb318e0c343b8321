# ticktrace_set_warnings(target): the warning set every ticktrace target builds with.
function(ticktrace_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
                         -Wnon-virtual-dtor -Wcast-align -Wnull-dereference)
endfunction()
