# CMake helpers for users' tests (installed with the package; included by
# find_package(verbfault)).
#
# verbfault_add_seeded_test(NAME <name> COMMAND <program> [<arg>...]
#                           SEEDS <n> [FIRST_SEED <s>]
#                           [FAULTS <rule>...] [PLAN <file>]
#                           [ENVIRONMENT <VAR=value>...])
#
# Registers the test n times with CTest, as <name>.seed<k> for the seeds
# k = s .. s+n-1 (s defaults to 1), each run with VERBFAULT_SEED=k and the
# plan (VERBFAULT_FAULTS / VERBFAULT_PLAN) in its environment. The program
# is linked against verbfault::verbfault (or preloads libverbfault.so); a
# failing seed is replayed by running its test alone.
function(verbfault_add_seeded_test)
  cmake_parse_arguments(ARG "" "NAME;SEEDS;FIRST_SEED;PLAN" "COMMAND;FAULTS;ENVIRONMENT" ${ARGN})
  if(NOT ARG_NAME OR NOT ARG_COMMAND OR NOT ARG_SEEDS)
    message(FATAL_ERROR "verbfault_add_seeded_test: NAME, COMMAND and SEEDS are required")
  endif()
  if(NOT ARG_SEEDS MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR "verbfault_add_seeded_test(${ARG_NAME}): SEEDS '${ARG_SEEDS}': expected a number >= 1")
  endif()
  if(NOT DEFINED ARG_FIRST_SEED)
    set(ARG_FIRST_SEED 1)
  endif()
  set(environment ${ARG_ENVIRONMENT})
  if(ARG_FAULTS)
    # One rule per list element; VERBFAULT_FAULTS separates them with ';',
    # which a CTest ENVIRONMENT entry must escape.
    string(REPLACE ";" "\\;" faults "${ARG_FAULTS}")
    list(APPEND environment "VERBFAULT_FAULTS=${faults}")
  endif()
  if(ARG_PLAN)
    get_filename_component(plan "${ARG_PLAN}" ABSOLUTE)
    list(APPEND environment "VERBFAULT_PLAN=${plan}")
  endif()
  math(EXPR last "${ARG_FIRST_SEED} + ${ARG_SEEDS} - 1")
  foreach(seed RANGE ${ARG_FIRST_SEED} ${last})
    add_test(NAME ${ARG_NAME}.seed${seed} COMMAND ${ARG_COMMAND})
    set_tests_properties(${ARG_NAME}.seed${seed} PROPERTIES
      ENVIRONMENT "VERBFAULT_SEED=${seed};${environment}")
  endforeach()
endfunction()
