# Per-target warning and sanitizer settings (no global add_compile_options).

function(ddft_enable_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wno-sign-conversion -Wnon-virtual-dtor)
  if(DDFT_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# DDFT_SANITIZE ("address;undefined" or "thread") instruments the target and links the runtime.
# UBSan findings are fatal (-fno-sanitize-recover), so a ctest run fails on the first one instead
# of printing it and passing. The fuzz build (DDFT_FUZZ) adds address and undefined on its own and
# puts libFuzzer's coverage hooks in every target (-fsanitize=fuzzer-no-link); the harnesses
# themselves link libFuzzer (tests/fuzz/CMakeLists.txt).
function(ddft_enable_sanitizers target)
  set(_list ${DDFT_SANITIZE})
  if(DDFT_FUZZ)
    list(APPEND _list address undefined)
    list(REMOVE_DUPLICATES _list)
  endif()
  if(NOT _list)
    return()
  endif()
  string(REPLACE ";" "," _san "${_list}")
  target_compile_options(${target} PRIVATE -fsanitize=${_san} -fno-omit-frame-pointer)
  target_link_options(${target} PRIVATE -fsanitize=${_san})
  if("undefined" IN_LIST _list)
    target_compile_options(${target} PRIVATE -fno-sanitize-recover=all)
  endif()
  if(DDFT_FUZZ)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
endfunction()

function(ddft_target_defaults target)
  ddft_enable_warnings(${target})
  ddft_enable_sanitizers(${target})
endfunction()
