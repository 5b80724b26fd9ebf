# Installs the build tree into WORK_DIR/prefix, then configures, builds and
# runs examples/ctest-project (EXAMPLE_SOURCE) against it: the tests that
# verbfault_add_fault_tests makes are the battery's classes, the correct
# program passes them all and leaves each class's report, and the buggy
# build fails some class with a reproduce line that does reproduce.
file(REMOVE_RECURSE ${WORK_DIR})
include(${CMAKE_CURRENT_LIST_DIR}/run_step.cmake)
set(prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
set(verbfault ${prefix}/bin/verbfault)

run(${verbfault} conform --list-classes)
string(STRIP "${out}" classes)
string(REPLACE "\n" ";" classes "${classes}")
list(LENGTH classes class_count)
if(class_count LESS 2)
  message(FATAL_ERROR "verbfault conform --list-classes listed ${class_count} classes, expected the default battery's:\n${out}")
endif()

# One seed a class: what is checked here is the ctest integration, not the
# program under many seeds.
set(build ${WORK_DIR}/build)
run(${CMAKE_COMMAND} -S ${EXAMPLE_SOURCE} -B ${build} -DCMAKE_PREFIX_PATH=${prefix} -DEXAMPLE_SEEDS=1)
run(${CMAKE_COMMAND} --build ${build})

run(${CMAKE_CTEST_COMMAND} --test-dir ${build} -N)
if(NOT out MATCHES "Total Tests: ([0-9]+)")
  message(FATAL_ERROR "ctest -N printed no 'Total Tests: N':\n${out}")
endif()
if(NOT CMAKE_MATCH_1 EQUAL class_count)
  message(FATAL_ERROR "ctest -N lists ${CMAKE_MATCH_1} tests, expected one per class of --list-classes (${class_count}):\n${out}")
endif()
foreach(class IN LISTS classes)
  if(NOT out MATCHES "Test +#[0-9]+: pingpong\\.${class}\n")
    message(FATAL_ERROR "ctest -N lists no test pingpong.${class}:\n${out}")
  endif()
endforeach()

run(${CMAKE_CTEST_COMMAND} --test-dir ${build} --output-on-failure -j 2)
if(NOT out MATCHES "100% tests passed, 0 tests failed out of ${class_count}")
  message(FATAL_ERROR "the correct pingpong did not pass all ${class_count} classes:\n${out}")
endif()
foreach(class IN LISTS classes)
  set(report ${build}/verbfault-reports/pingpong/${class})
  foreach(file report.xml report.html)
    if(NOT EXISTS ${report}/${file})
      message(FATAL_ERROR "pingpong.${class} left no ${report}/${file}")
    endif()
  endforeach()
  file(READ ${report}/report.xml xml)
  if(NOT xml MATCHES "<testsuite name=\"${class}\"" OR xml MATCHES "<failure")
    message(FATAL_ERROR "${report}/report.xml: expected the class ${class}, passed:\n${xml}")
  endif()
endforeach()

# The buggy build: ctest fails, and --output-on-failure shows each failed
# class's reproduce line.
set(buggy ${WORK_DIR}/build-buggy)
run(${CMAKE_COMMAND} -S ${EXAMPLE_SOURCE} -B ${buggy} -DCMAKE_PREFIX_PATH=${prefix}
    -DEXAMPLE_SEEDS=1 -DEXAMPLE_BUGGY=ON)
run(${CMAKE_COMMAND} --build ${buggy})
execute_process(COMMAND ${CMAKE_CTEST_COMMAND} --test-dir ${buggy} --output-on-failure -j 2
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "${out}${err}")
if(rc EQUAL 0 OR NOT out MATCHES "The following tests FAILED:\n[^\n]*pingpong\\.([a-z_]+) \\(Failed\\)")
  message(FATAL_ERROR "the buggy pingpong failed no class (ctest exit ${rc}):\n${out}\n${err}")
endif()
set(failed_class ${CMAKE_MATCH_1})
if(NOT out MATCHES "verbfault:   reproduce: (verbfault run --seed [^\n]*)")
  message(FATAL_ERROR "ctest --output-on-failure shows no 'reproduce: verbfault run --seed' line:\n${out}")
endif()
set(reproduce "${CMAKE_MATCH_1}")
file(READ ${buggy}/verbfault-reports/pingpong/${failed_class}/report.xml xml)
if(NOT xml MATCHES "<failure")
  message(FATAL_ERROR "pingpong.${failed_class} failed, but its report.xml has no <failure>:\n${xml}")
endif()

# The line reproduces the failure: the same fault, the program fails again.
separate_arguments(reproduce UNIX_COMMAND "${reproduce}")
list(POP_FRONT reproduce)  # `verbfault`: the installed one
execute_process(COMMAND ${verbfault} ${reproduce} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "the reproduce line passed (exit 0): ${verbfault} ${reproduce}\n${out}\n${err}")
endif()
list(JOIN reproduce " " reproduce)
message(STATUS "reproduced (exit ${rc}): verbfault ${reproduce}")
