#!/usr/bin/env bash
# The whole test suite: install what is needed, build, run every test; then
# the multi-threaded tests again under ThreadSanitizer (scripts/test-tsan.sh);
# then a short run of each fuzzer (scripts/fuzz.sh); then the whole suite
# again under AddressSanitizer and UBSan (scripts/test-asan.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's time, on one line of its own at the stage's end (CI's budget
# is counted from these).
stage_start=$SECONDS
stage_took() {
  echo "test.sh: $1 took $((SECONDS - stage_start)) s"
  stage_start=$SECONDS
}
scripts/install-deps.sh
stage_took "installing the dependencies"
scripts/build.sh
stage_took "the build"
build_dir="${BUILD_DIR:-build}"
status=0
(cd "$build_dir" && ctest --output-on-failure -j "$(nproc)" --timeout 600) || status=$?
stage_took "the test suite"
if [ "$status" -ne 0 ]; then
  scripts/failed-tests.sh "$build_dir"  # again at the end of the log: why, not only which
  exit "$status"
fi
# --- ThreadSanitizer (ctest label tsan, build-tsan): scripts/test-tsan.sh ---
scripts/test-tsan.sh
stage_took "ThreadSanitizer (build and tests)"
# --- end ThreadSanitizer ---
# --- the fuzzers (fuzz/): a clang + libFuzzer build, 30 s each (FUZZ_SECONDS) ---
scripts/fuzz.sh
stage_took "the fuzzers (build and runs)"
# --- end fuzzers ---
# --- AddressSanitizer + UBSan (build-asan, the whole suite): scripts/test-asan.sh ---
scripts/test-asan.sh
stage_took "AddressSanitizer (build and tests)"
# --- end AddressSanitizer ---
