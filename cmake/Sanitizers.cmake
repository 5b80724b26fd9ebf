# VERBFAULT_SANITIZE: AddressSanitizer and UBSan over everything built here
# (scripts/test-asan.sh builds it in build-asan/ and runs the whole suite).
#
# The tests preload libverbfault.so (built with ASan then) into programs
# built without it: Debian's ibv_rc_pingpong, perftest, python3 for pyverbs.
# ASan starts only when its runtime is the first library of the process, so
# wherever the project preloads (verbfault run, provider-report, the test
# scripts) the runtime found here goes first in LD_PRELOAD.
#
# UB stops the program (-fno-sanitize-recover) as an ASan error does, so a
# finding fails the test; the ctest environment is
# sanitizer_environment.cmake.in.
if(NOT VERBFAULT_SANITIZE)
  # Nothing to preload in an ordinary build.
  function(verbfault_preload_sanitizer_runtime target)
  endfunction()
  function(verbfault_without_sanitizers target)
  endfunction()
  return()
endif()

add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined
                    -fno-omit-frame-pointer)
add_link_options(-fsanitize=address,undefined)
# GCC 12 under -fsanitize=address warns "may be used uninitialized" inside
# libstdc++'s <regex> (a std::function moved in _NFA, in every test that
# uses std::regex): a false positive of the instrumented code, which GCC's
# manual says the sanitizers make more frequent. The normal build keeps
# the warning.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  add_compile_options(-Wno-maybe-uninitialized)
endif()

# The runtime the compiler links (GCC 12: libasan.so.8), resolved so that
# LD_PRELOAD names the file ld.so would load for libverbfault.so's NEEDED.
execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libasan.so
                OUTPUT_VARIABLE asan_runtime OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT IS_ABSOLUTE "${asan_runtime}" OR NOT EXISTS "${asan_runtime}")
  message(FATAL_ERROR "VERBFAULT_SANITIZE: `${CMAKE_CXX_COMPILER} -print-file-name=libasan.so` "
                      "gave '${asan_runtime}': expected the path of ASan's runtime (libasan)")
endif()
file(REAL_PATH "${asan_runtime}" VERBFAULT_SANITIZER_RUNTIME)
message(STATUS "verbfault: sanitizer runtime preloaded first: ${VERBFAULT_SANITIZER_RUNTIME}")

# Gives `target`'s sources VERBFAULT_SANITIZER_RUNTIME, the runtime's path,
# to put first in an LD_PRELOAD they compose.
function(verbfault_preload_sanitizer_runtime target)
  target_compile_definitions(${target} PRIVATE
    VERBFAULT_SANITIZER_RUNTIME="${VERBFAULT_SANITIZER_RUNTIME}")
endfunction()

# ASAN_OPTIONS/UBSAN_OPTIONS for every test: ctest reads this file with the
# tests (TEST_INCLUDE_FILES) and the tests inherit its environment.
# A program that stands for a user's application, bugs included (the
# field-failure programs): its bugs are what the harness is to expose, the
# way they show in a normal build (an abort after reading an error
# completion's undefined opcode, a SIGSEGV from indexing by its undefined
# imm_data), not as sanitizer reports. Built as an unmodified program is:
# the tests preload the sanitizer runtime and the harness into it.
function(verbfault_without_sanitizers target)
  target_compile_options(${target} PRIVATE -fno-sanitize=all)
  target_link_options(${target} PRIVATE -fno-sanitize=all)
endfunction()

set(VERBFAULT_SANITIZER_FINDINGS_DIR ${PROJECT_BINARY_DIR}/sanitizer-findings)
configure_file(${CMAKE_CURRENT_LIST_DIR}/sanitizer_environment.cmake.in
               ${PROJECT_BINARY_DIR}/sanitizer_environment.cmake @ONLY)
set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY TEST_INCLUDE_FILES
             ${PROJECT_BINARY_DIR}/sanitizer_environment.cmake)
