#!/usr/bin/env bash
# ThreadSanitizer over everything multi-threaded: the tests labelled `tsan`
# (ctest -L tsan) in a build of their own (build-tsan; TSAN_BUILD_DIR
# overrides): the thread scheduler (scheduler_tests), the simulated
# device's waits, events, channels and shared queues (sim_tests), the local
# fabric's wire and its service thread (tsan.wire_tests, fabric_fork_tests),
# the stress program alone and under `verbfault run` with faults firing
# (stress.shared_queues, stress.faults), the harness with the thread
# scheduler on and off on an eight-thread program (tsan.eight_threads.*).
# TSan ends a test with exit status 66 when it reports anything (the
# harness's tests also fail on its report text): 0 findings is the bar.
set -euo pipefail
cd "$(dirname "$0")/.."
tsan_dir="${TSAN_BUILD_DIR:-build-tsan}"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
# -O1 -g1 (line tables: every report still names file and line): half the
# compile time of -O2 -g with GCC 12 (4 s instead of 9 s for
# fakes/tests/test_operations.cpp, measured).
# (The preset `tsan` of CMakePresets.json.)
cmake --preset tsan -B "$tsan_dir" "${launcher[@]}" >/dev/null
cmake --build "$tsan_dir" -j "$(nproc)" --target scheduler_tests sim_tests wire_tests \
  fabric_fork_tests stress_shared_queues verbfault_cli eight_threads
status=0
TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
  ctest --test-dir "$tsan_dir" -L tsan --output-on-failure -j "$(nproc)" --timeout 600 ||
  status=$?
[ "$status" -eq 0 ] || scripts/failed-tests.sh "$tsan_dir"
exit "$status"
