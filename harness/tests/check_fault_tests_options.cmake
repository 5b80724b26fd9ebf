# verbfault_add_fault_tests against an install (WORK_DIR/prefix): each bad
# argument stops the configure with one line naming it and what was
# expected; CLASSES, BATTERY, SEEDS, TIMEOUT, SWEEP, FAULTS and PASS_STATUS
# reach the commands the tests run (on the installed sample_rc).
file(REMOVE_RECURSE ${WORK_DIR})
include(${CMAKE_CURRENT_LIST_DIR}/run_step.cmake)
set(prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
set(sample ${prefix}/bin/sample_rc)
set(lost_events ${prefix}/share/verbfault/batteries/lost-events.yaml)

# configure(<name> <call>): a project calling verbfault_add_fault_tests with `call`,
# configured in WORK_DIR/<name>; leaves the status, stdout and stderr.
function(configure name call)
  set(source ${WORK_DIR}/${name}-src)
  file(WRITE ${source}/CMakeLists.txt
    "cmake_minimum_required(VERSION 3.25)\nproject(${name} LANGUAGES CXX)\n"
    "find_package(verbfault REQUIRED)\nenable_testing()\n${call}\n")
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${source} -B ${WORK_DIR}/${name}
                          -DCMAKE_PREFIX_PATH=${prefix}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(rc "${rc}" PARENT_SCOPE)
  set(out "${out}" PARENT_SCOPE)
  set(err "${err}" PARENT_SCOPE)
endfunction()

# rejected(<name> <call> <regex>): the configure fails, saying `regex`
# (matched with CMake's line wrapping undone).
function(rejected name call regex)
  configure(${name} "${call}")
  string(REGEX REPLACE "[ \n]+" " " said "${err}")
  if(rc EQUAL 0 OR NOT said MATCHES "${regex}")
    message(FATAL_ERROR "${name}: expected the configure to fail saying '${regex}', got (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${name}: rejected as expected")
endfunction()

file(WRITE ${WORK_DIR}/not-a-battery.yaml "format: 1\nentries: 7\n")
rejected(no_name "verbfault_add_fault_tests(COMMAND ${sample})"
  "verbfault_add_fault_tests: NAME: missing \\(expected NAME <name>")
rejected(no_command "verbfault_add_fault_tests(NAME t SEEDS 1)"
  "verbfault_add_fault_tests\\(t\\): COMMAND: missing \\(expected COMMAND <program>")
rejected(seeds_not_a_number "verbfault_add_fault_tests(NAME t SEEDS two COMMAND ${sample})"
  "SEEDS 'two': expected a number >= 1")
rejected(timeout_zero "verbfault_add_fault_tests(NAME t TIMEOUT 0 COMMAND ${sample})"
  "TIMEOUT '0': expected whole seconds >= 1")
rejected(sweep_not_a_range "verbfault_add_fault_tests(NAME t SWEEP 1-3 COMMAND ${sample})"
  "SWEEP '1-3': expected <a>..<b>, two seeds")
rejected(sweep_backwards "verbfault_add_fault_tests(NAME t SWEEP 5..2 COMMAND ${sample})"
  "SWEEP '5..2': expected <a>..<b> with a <= b")
rejected(sweep_and_classes "verbfault_add_fault_tests(NAME t SWEEP 1..2 CLASSES flush COMMAND ${sample})"
  "CLASSES with SWEEP: expected one of them")
rejected(sweep_and_battery "verbfault_add_fault_tests(NAME t SWEEP 1..2 BATTERY default COMMAND ${sample})"
  "BATTERY with SWEEP: expected one of them")
rejected(faults_without_sweep "verbfault_add_fault_tests(NAME t FAULTS flush COMMAND ${sample})"
  "FAULTS without SWEEP: expected SWEEP <a>..<b> with it")
rejected(pass_status_not_a_status "verbfault_add_fault_tests(NAME t SWEEP 1..1 PASS_STATUS 0,x COMMAND ${sample})"
  "PASS_STATUS 'x': expected exit statuses 0..255")
rejected(unknown_class "verbfault_add_fault_tests(NAME t CLASSES flush no_such_class COMMAND ${sample})"
  "CLASSES 'no_such_class': not a class of the battery 'default' \\(expected one of baseline, cq_overflow, flush, ")
rejected(bad_battery "verbfault_add_fault_tests(NAME t BATTERY ${WORK_DIR}/not-a-battery.yaml COMMAND ${sample})"
  "BATTERY '[^']*not-a-battery.yaml': verbfault cannot list its classes: verbfault: [^ ]+")
rejected(missing_battery "verbfault_add_fault_tests(NAME t BATTERY nowhere.yaml COMMAND ${sample})"
  "BATTERY 'nowhere.yaml': not found \\(expected default or a battery file")

# Accepted: the tests are named, run and limited as the options say.
configure(accepted "
verbfault_add_fault_tests(NAME some CLASSES flush baseline SEEDS 2 TIMEOUT 30
  REPORT_DIR reports COMMAND ${sample} --messages 4)
verbfault_add_fault_tests(NAME lost BATTERY ${lost_events} CLASSES drop_cq_event SEEDS 1
  COMMAND ${sample})
verbfault_add_fault_tests(NAME strict SWEEP 3..4 FAULTS \"flush p=0.2 count=1\" COMMAND ${sample})
verbfault_add_fault_tests(NAME lenient SWEEP 3..4 FAULTS \"flush p=0.2 count=1\" PASS_STATUS 0 1
  TIMEOUT 20 COMMAND ${sample})")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "accepted: the configure failed (${rc}):\n${out}\n${err}")
endif()
set(build ${WORK_DIR}/accepted)
run(${CMAKE_CTEST_COMMAND} --test-dir ${build} --show-only=json-v1)
set(json "${out}")
string(JSON count LENGTH "${json}" tests)
set(expected some.flush some.baseline lost.drop_cq_event strict.seed3 strict.seed4
             lenient.seed3 lenient.seed4)
list(LENGTH expected expected_count)
if(NOT count EQUAL expected_count)
  message(FATAL_ERROR "accepted: ${count} tests, expected ${expected}:\n${json}")
endif()
math(EXPR last "${count} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${json}" tests ${i} name)
  list(GET expected ${i} want)
  string(JSON command GET "${json}" tests ${i} command)
  string(JSON properties GET "${json}" tests ${i} properties)
  if(NOT name STREQUAL want)
    message(FATAL_ERROR "accepted: test ${i} is ${name}, expected ${want}")
  endif()
  if(NOT properties MATCHES "\"LABELS\"[^]]*\"verbfault\"")
    message(FATAL_ERROR "accepted: ${name} has no label verbfault: ${properties}")
  endif()
  set(timeout "")
  if(properties MATCHES "\"name\" : \"TIMEOUT\",[ \n]*\"value\" : ([0-9]+)(\\.0)?")
    set(timeout "${CMAKE_MATCH_1}")
  endif()
  # Each entry's expected command words (verbfault first, then in order).
  if(name STREQUAL "some.flush")
    set(words conform --battery default --class flush --timeout 30 --seeds 2
              --report ${build}/reports/some/flush -- ${sample} --messages 4)
    set(want_timeout 120)  # 30 s x 2 runs + 60
  elseif(name STREQUAL "lost.drop_cq_event")
    set(words conform --battery ${lost_events} --class drop_cq_event --seeds 1
              --report ${build}/verbfault-reports/lost/drop_cq_event -- ${sample})
    set(want_timeout "")
  elseif(name STREQUAL "lenient.seed4")
    set(words sweep --seeds 4..4 --timeout 20 --fault "flush p=0.2 count=1" --pass-status 0,1
              --report ${build}/verbfault-reports/lenient/seed-4 -- ${sample})
    set(want_timeout 80)  # 20 s x 1 run + 60
  else()
    continue()
  endif()
  string(JSON first GET "${command}" 0)
  if(NOT first STREQUAL "${prefix}/bin/verbfault")
    message(FATAL_ERROR "accepted: ${name} runs ${first}, expected the installed ${prefix}/bin/verbfault")
  endif()
  set(index 1)
  foreach(word IN LISTS words)
    string(JSON got GET "${command}" ${index})
    if(NOT got STREQUAL word)
      message(FATAL_ERROR "accepted: ${name}: word ${index} of its command is '${got}', expected '${word}':\n${command}")
    endif()
    math(EXPR index "${index} + 1")
  endforeach()
  if(NOT timeout STREQUAL want_timeout)
    message(FATAL_ERROR "accepted: ${name}: TIMEOUT '${timeout}', expected '${want_timeout}': ${properties}")
  endif()
endforeach()

# sample_rc reports the flushed work request and exits 1: a sweep that
# passes only exit status 0 fails on it (printing the reproduce line), one
# with PASS_STATUS 0 1 passes. It waits for a completion event without a
# deadline, so the battery file's drop_cq_event class (not the default
# battery's) finds it waiting forever.
execute_process(COMMAND ${CMAKE_CTEST_COMMAND} --test-dir ${build} --output-on-failure -j 2
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "${out}${err}")
foreach(test some.flush some.baseline lenient.seed3 lenient.seed4)
  if(NOT out MATCHES "Test +#[0-9]+: ${test} [.]+ +Passed")
    message(FATAL_ERROR "accepted: ${test} did not pass:\n${out}")
  endif()
endforeach()
foreach(failing "strict.seed3;--seed 3 --fault 'flush p=0.2 count=1'"
                "strict.seed4;--seed 4 --fault 'flush p=0.2 count=1'"
                "lost.drop_cq_event;--seed 1 --fault 'drop_cq_event p=0.2 count=1'")
  list(GET failing 0 test)
  list(GET failing 1 run)
  if(NOT out MATCHES "Test +#[0-9]+: ${test} [.]+\\*\\*\\*Failed"
     OR NOT out MATCHES "reproduce: verbfault run ${run} -- ${sample}")
    message(FATAL_ERROR "accepted: ${test} did not fail with its reproduce line (verbfault run ${run}):\n${out}")
  endif()
endforeach()
foreach(report reports/some/flush verbfault-reports/strict/seed-3 verbfault-reports/lenient/seed-4)
  if(NOT EXISTS ${build}/${report}/report.xml)
    message(FATAL_ERROR "accepted: no ${build}/${report}/report.xml")
  endif()
endforeach()
