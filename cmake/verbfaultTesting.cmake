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

# verbfault_add_fault_tests(NAME <name> COMMAND <program> [<arg>...]
#                           [BATTERY default|<file>] [CLASSES <class>...]
#                           [SEEDS <n>] [TIMEOUT <s>] [REPORT_DIR <dir>])
# verbfault_add_fault_tests(NAME <name> COMMAND <program> [<arg>...]
#                           SWEEP <a>..<b> [SWARM] [FAULTS <rule>...]
#                           [PLAN <file>] [PASS_STATUS <status>...]
#                           [TIMEOUT <s>] [REPORT_DIR <dir>])
#
# Turns one test command into ctests that run it under `verbfault`. The
# first form: one ctest per fault class of the battery, <name>.<class>,
# each `verbfault conform --class <class>`, its report (report.xml for CI,
# report.html) in <dir>/<name>/<class>. The second: one ctest per seed,
# <name>.seed<s>, each `verbfault sweep --seeds s..s`, its report in
# <dir>/<name>/seed-<s>. <dir> is REPORT_DIR, by default
# ${CMAKE_BINARY_DIR}/verbfault-reports. A class or seed that fails prints
# the `verbfault run` line that reproduces it, which
# `ctest --output-on-failure` shows. TIMEOUT is the wall clock of one run
# (verbfault's --timeout); the tests are labelled `verbfault`.
# docs/using.md, "Fault classes as ctests".
function(verbfault_add_fault_tests)
  set(where "verbfault_add_fault_tests")
  cmake_parse_arguments(PARSE_ARGV 0 ARG "SWARM"
    "NAME;BATTERY;SEEDS;TIMEOUT;REPORT_DIR;SWEEP;PLAN" "COMMAND;CLASSES;FAULTS;PASS_STATUS")
  if(ARG_KEYWORDS_MISSING_VALUES)
    list(GET ARG_KEYWORDS_MISSING_VALUES 0 keyword)
    message(FATAL_ERROR "${where}: ${keyword}: no value (expected ${keyword} followed by its value)")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${where}: unexpected argument '${ARG_UNPARSED_ARGUMENTS}': expected NAME <name> COMMAND <program> [<arg>...] and the options")
  endif()
  if(NOT ARG_NAME)
    message(FATAL_ERROR "${where}: NAME: missing (expected NAME <name>, the tests' name prefix)")
  endif()
  set(where "verbfault_add_fault_tests(${ARG_NAME})")
  if(NOT ARG_COMMAND)
    message(FATAL_ERROR "${where}: COMMAND: missing (expected COMMAND <program> [<arg>...])")
  endif()
  if(DEFINED ARG_SEEDS AND NOT ARG_SEEDS MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR "${where}: SEEDS '${ARG_SEEDS}': expected a number >= 1")
  endif()
  if(DEFINED ARG_TIMEOUT AND NOT ARG_TIMEOUT MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR "${where}: TIMEOUT '${ARG_TIMEOUT}': expected whole seconds >= 1")
  endif()
  if(DEFINED ARG_SWEEP)
    # The two forms run different commands: a battery's classes are
    # conform's, a plan and pass statuses sweep's.
    foreach(option BATTERY CLASSES SEEDS)
      if(DEFINED ARG_${option})
        message(FATAL_ERROR "${where}: ${option} with SWEEP: expected one of them (${option} is for a battery's fault classes, SWEEP for seeds under a plan)")
      endif()
    endforeach()
    if(NOT ARG_SWEEP MATCHES "^(0|[1-9][0-9]*)\\.\\.(0|[1-9][0-9]*)$")
      message(FATAL_ERROR "${where}: SWEEP '${ARG_SWEEP}': expected <a>..<b>, two seeds")
    endif()
    set(first "${CMAKE_MATCH_1}")
    set(last "${CMAKE_MATCH_2}")
    # math(EXPR) is 64-bit signed; verbfault's seeds go up to 2^64 - 1.
    string(LENGTH "${last}" digits)
    if(digits GREATER 18)
      message(FATAL_ERROR "${where}: SWEEP '${ARG_SWEEP}': expected seeds of at most 18 digits")
    endif()
    math(EXPR count "${last} - ${first} + 1")
    if(count LESS 1)
      message(FATAL_ERROR "${where}: SWEEP '${ARG_SWEEP}': expected <a>..<b> with a <= b")
    endif()
    # One ctest a seed: a range that large belongs in one `verbfault sweep`.
    if(count GREATER 10000)
      message(FATAL_ERROR "${where}: SWEEP '${ARG_SWEEP}': expected at most 10000 seeds (one ctest each; run a longer sweep as one `verbfault sweep`)")
    endif()
  else()
    foreach(option SWARM FAULTS PLAN PASS_STATUS)
      if(ARG_${option})
        message(FATAL_ERROR "${where}: ${option} without SWEEP: expected SWEEP <a>..<b> with it (a battery's classes bring their own faults)")
      endif()
    endforeach()
  endif()
  if(ARG_PASS_STATUS)
    # "0,1" as verbfault writes it, or a CMake list.
    string(REPLACE "," ";" ARG_PASS_STATUS "${ARG_PASS_STATUS}")
    foreach(status IN LISTS ARG_PASS_STATUS)
      if(NOT status MATCHES "^[0-9]+$" OR status GREATER 255)
        message(FATAL_ERROR "${where}: PASS_STATUS '${status}': expected exit statuses 0..255")
      endif()
    endforeach()
  endif()
  if(NOT DEFINED ARG_REPORT_DIR)
    set(ARG_REPORT_DIR "${CMAKE_BINARY_DIR}/verbfault-reports")
  endif()
  get_filename_component(report_dir "${ARG_REPORT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")

  # The verbfault program: the installed package's (verbfault::cli, from
  # verbfaultConfig.cmake), or the target of a build that has verbfault
  # in-tree (add_subdirectory), which exists only once it is built.
  if(TARGET verbfault::cli)
    set(cli "$<TARGET_FILE:verbfault::cli>")
    get_target_property(cli_now verbfault::cli IMPORTED_LOCATION)
    if(NOT EXISTS "${cli_now}")
      message(FATAL_ERROR "${where}: the verbfault program '${cli_now}': not found (expected the package's bin/verbfault beside its library)")
    endif()
  elseif(TARGET verbfault_cli)
    set(cli "$<TARGET_FILE:verbfault_cli>")
    set(cli_now "")
  else()
    message(FATAL_ERROR "${where}: no verbfault program: expected find_package(verbfault) (the target verbfault::cli) or verbfault built in this project (verbfault_cli)")
  endif()

  # add_test puts a target's file in place of its name only for the first
  # word, which here is verbfault: the program under test is resolved here.
  list(POP_FRONT ARG_COMMAND program)
  if(TARGET "${program}")
    set(program "$<TARGET_FILE:${program}>")
  endif()
  set(command "${program}" ${ARG_COMMAND})

  set(run_options "")
  if(DEFINED ARG_TIMEOUT)
    list(APPEND run_options --timeout ${ARG_TIMEOUT})
  endif()

  if(DEFINED ARG_SWEEP)
    if(ARG_SWARM)
      list(APPEND run_options --swarm)
    endif()
    foreach(rule IN LISTS ARG_FAULTS)
      list(APPEND run_options --fault "${rule}")
    endforeach()
    if(ARG_PLAN)
      get_filename_component(plan "${ARG_PLAN}" ABSOLUTE)
      if(NOT EXISTS "${plan}")
        message(FATAL_ERROR "${where}: PLAN '${ARG_PLAN}': not found (expected a plan file, ${plan})")
      endif()
      list(APPEND run_options --plan "${plan}")
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${plan}")
    endif()
    if(ARG_PASS_STATUS)
      list(JOIN ARG_PASS_STATUS "," statuses)
      list(APPEND run_options --pass-status ${statuses})
    endif()
    foreach(seed RANGE ${first} ${last})
      set(test "${ARG_NAME}.seed${seed}")
      add_test(NAME "${test}"
        COMMAND "${cli}" sweep --seeds ${seed}..${seed} ${run_options}
                --report "${report_dir}/${ARG_NAME}/seed-${seed}" -- ${command})
      _verbfault_fault_test_properties("${test}" 1)
    endforeach()
    return()
  endif()

  set(battery default)
  if(DEFINED ARG_BATTERY AND NOT ARG_BATTERY STREQUAL "default")
    get_filename_component(battery "${ARG_BATTERY}" ABSOLUTE)
    if(NOT EXISTS "${battery}")
      message(FATAL_ERROR "${where}: BATTERY '${ARG_BATTERY}': not found (expected default or a battery file, ${battery})")
    endif()
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${battery}")
  endif()
  # The classes are the battery's, which only verbfault reads (the default
  # one is built into it): asked at configure time, so that each is a test.
  if(ARG_CLASSES)
    set(classes ${ARG_CLASSES})
    list(REMOVE_DUPLICATES classes)
  elseif(NOT cli_now)
    message(FATAL_ERROR "${where}: CLASSES: missing (expected the classes to run: with verbfault built in this project there is no verbfault program at configure time to list the battery's)")
  endif()
  if(cli_now)
    execute_process(COMMAND "${cli_now}" conform --list-classes --battery "${battery}"
      RESULT_VARIABLE status OUTPUT_VARIABLE listed ERROR_VARIABLE error)
    if(NOT status EQUAL 0)
      string(STRIP "${error}" error)
      message(FATAL_ERROR "${where}: BATTERY '${battery}': verbfault cannot list its classes: ${error}")
    endif()
    string(STRIP "${listed}" listed)
    string(REPLACE "\n" ";" known "${listed}")
    if(NOT known)
      message(FATAL_ERROR "${where}: BATTERY '${battery}': no fault classes listed (expected at least one)")
    endif()
    if(ARG_CLASSES)
      foreach(class IN LISTS classes)
        if(NOT class IN_LIST known)
          list(JOIN known ", " known_text)
          message(FATAL_ERROR "${where}: CLASSES '${class}': not a class of the battery '${battery}' (expected one of ${known_text})")
        endif()
      endforeach()
    else()
      set(classes ${known})
    endif()
  endif()
  if(DEFINED ARG_SEEDS)
    list(APPEND run_options --seeds ${ARG_SEEDS})
    set(runs ${ARG_SEEDS})
  else()
    set(runs "")  # the battery's own count, which --list-classes does not say
  endif()
  foreach(class IN LISTS classes)
    set(test "${ARG_NAME}.${class}")
    add_test(NAME "${test}"
      COMMAND "${cli}" conform --battery "${battery}" --class "${class}" ${run_options}
              --report "${report_dir}/${ARG_NAME}/${class}" -- ${command})
    _verbfault_fault_test_properties("${test}" "${runs}")
  endforeach()
endfunction()

# The properties every test of verbfault_add_fault_tests gets: the label,
# and with TIMEOUT a ctest time limit that leaves verbfault the time to end
# a slow run itself (and print its reproduce line) rather than be killed by
# ctest with nothing said; `runs` is the number of runs, when known.
macro(_verbfault_fault_test_properties test runs)
  set_tests_properties("${test}" PROPERTIES LABELS verbfault)
  if(DEFINED ARG_TIMEOUT AND NOT "${runs}" STREQUAL "")
    math(EXPR _verbfault_limit "${ARG_TIMEOUT} * ${runs} + 60")
    set_tests_properties("${test}" PROPERTIES TIMEOUT ${_verbfault_limit})
  endif()
endmacro()
