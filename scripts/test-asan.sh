#!/usr/bin/env bash
# The whole test suite again under AddressSanitizer and UBSan: a build of
# its own (VERBFAULT_SANITIZE, build-asan/; ASAN_BUILD_DIR overrides), then
# every test the default suite runs. Fails on a failing test, and on any
# sanitizer report written during the run, even by a program whose failure
# a test expected: every report is a file of build-asan/sanitizer-findings
# (cmake/sanitizer_environment.cmake.in), printed here.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${ASAN_BUILD_DIR:-build-asan}"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
# -O1 -g1 (line tables: every report still names file and line): GCC 12
# compiles ASan + UBSan code at -O2 -g 2.5 times slower (40 s instead of
# 15 s for fakes/tests/test_operations.cpp, measured), and this build is
# the largest part of CI's time. -O1 is what ASan's documentation advises.
# (The preset `asan` of CMakePresets.json.)
cmake --preset asan -B "$dir" "${launcher[@]}" >/dev/null
start=$SECONDS
cmake --build "$dir" -j "$(nproc)"
built=$((SECONDS - start))
findings="$dir/sanitizer-findings"
rm -rf "$findings"
mkdir -p "$findings"
start=$SECONDS
status=0
# Label not_sanitized: tests of the release build only (its packages and
# their consumers, the rxe VM's guest) or that replace malloc themselves
# (the hot paths' allocation count); each says why in its CMakeLists.txt.
ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" --timeout 600 -LE not_sanitized ||
  status=$?
echo "test-asan.sh: build ${built} s, ctest $((SECONDS - start)) s"
reports=$(find "$findings" -type f | sort)
if [ -n "$reports" ]; then
  for report in $reports; do
    echo "==== sanitizer report $report"
    cat "$report"
  done
  echo "test-asan.sh: $(wc -l <<<"$reports") sanitizer report(s), above (files in $findings)" >&2
  status=1
fi
scripts/failed-tests.sh "$dir"
exit "$status"
