#!/usr/bin/env bash
# The whole test suite: install what is needed, build, run every test; then
# the thread scheduler's tests again under ThreadSanitizer (ctest label
# `tsan`, in a build of their own: build-tsan, TSAN_BUILD_DIR overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build_dir="${BUILD_DIR:-build}"
(cd "$build_dir" && ctest --output-on-failure -j "$(nproc)" --timeout 600)
tsan_dir="${TSAN_BUILD_DIR:-build-tsan}"
cmake -S . -B "$tsan_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVERBFAULT_TSAN=ON \
  -DVERBFAULT_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$tsan_dir" --target scheduler_tests -j "$(nproc)"
# TSan ends a test with exit status 66 when it reports a race.
ctest --test-dir "$tsan_dir" -L tsan --output-on-failure --timeout 600
# ---- AddressSanitizer + UBSan (issue 16): the whole suite again in
# build-asan/, after the default suite; scripts/test-asan.sh says how.
scripts/test-asan.sh
# ---- end of AddressSanitizer + UBSan
