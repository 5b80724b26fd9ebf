#!/usr/bin/env bash
# The whole test suite: install what is needed, build, run every test; then
# the multi-threaded tests again under ThreadSanitizer (scripts/test-tsan.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build_dir="${BUILD_DIR:-build}"
(cd "$build_dir" && ctest --output-on-failure -j "$(nproc)" --timeout 600)
# --- ThreadSanitizer (ctest label tsan, build-tsan): scripts/test-tsan.sh ---
scripts/test-tsan.sh
# --- end ThreadSanitizer ---
# ---- AddressSanitizer + UBSan (issue 16): the whole suite again in
# build-asan/, after the default suite; scripts/test-asan.sh says how.
scripts/test-asan.sh
# ---- end of AddressSanitizer + UBSan
