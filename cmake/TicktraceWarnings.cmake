# ticktrace_set_warnings(target): the warning set every ticktrace target builds with.
# (-Wnull-dereference is left out: with g++ 12 it fires on std::vector internals.)
function(ticktrace_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
                         -Wnon-virtual-dtor -Wcast-align)
endfunction()
