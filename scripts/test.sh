#!/usr/bin/env bash
# The whole test suite: install what is needed, build, run every test; then
# the multi-threaded tests again under ThreadSanitizer (scripts/test-tsan.sh);
# then a short run of each fuzzer (scripts/fuzz.sh); then the whole suite
# again under AddressSanitizer and UBSan (scripts/test-asan.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build_dir="${BUILD_DIR:-build}"
status=0
(cd "$build_dir" && ctest --output-on-failure -j "$(nproc)" --timeout 600) || status=$?
if [ "$status" -ne 0 ]; then
  scripts/failed-tests.sh "$build_dir"  # again at the end of the log: why, not only which
  exit "$status"
fi
# --- ThreadSanitizer (ctest label tsan, build-tsan): scripts/test-tsan.sh ---
scripts/test-tsan.sh
# --- end ThreadSanitizer ---
# --- the fuzzers (fuzz/): a clang + libFuzzer build, 30 s each (FUZZ_SECONDS) ---
scripts/fuzz.sh
# --- end fuzzers ---
# --- AddressSanitizer + UBSan (build-asan, the whole suite): scripts/test-asan.sh ---
scripts/test-asan.sh
# --- end AddressSanitizer ---
