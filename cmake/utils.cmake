# Per-target warning and sanitizer settings (no global add_compile_options).

function(ddft_enable_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wno-sign-conversion -Wnon-virtual-dtor)
  if(DDFT_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

function(ddft_enable_sanitizers target)
  if(DDFT_SANITIZE)
    string(REPLACE ";" "," _san "${DDFT_SANITIZE}")
    target_compile_options(${target} PRIVATE -fsanitize=${_san} -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=${_san})
  endif()
endfunction()

function(ddft_target_defaults target)
  ddft_enable_warnings(${target})
  ddft_enable_sanitizers(${target})
endfunction()
