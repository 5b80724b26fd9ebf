# Runs one property of property_tests_broken (a device that drops
# completions) and requires that it FAILS, with rapidcheck's counterexample
# shrunk to a small case: at most MAX_STEPS generated steps or messages.
if(NOT DEFINED MAX_STEPS)
  set(MAX_STEPS 8)
endif()
execute_process(COMMAND ${PROGRAM} --gtest_filter=${FILTER}
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(status EQUAL 0)
  message(FATAL_ERROR "${FILTER} passed over a device that drops completions:\n${all}")
endif()
if(NOT all MATCHES "Falsifiable after [0-9]+ tests?( and [0-9]+ shrinks?)?")
  message(FATAL_ERROR "${FILTER} failed without a shrunk counterexample:\n${all}")
endif()
# Steps of a command sequence, or elements of a generated list.
string(REGEX MATCHALL "\n(PostPair|Poll|QpFatal|Arm|Write|TakeEvent|Ack)" steps "${all}")
string(REGEX MATCHALL "<[?][?][?]>" messages "${all}")
list(LENGTH steps step_count)
list(LENGTH messages message_count)
if(step_count GREATER MAX_STEPS OR message_count GREATER MAX_STEPS)
  message(FATAL_ERROR "${FILTER}: the counterexample did not shrink to ${MAX_STEPS} steps:\n${all}")
endif()
message(STATUS "${FILTER} fails over the broken device as it must; counterexample:\n${all}")
