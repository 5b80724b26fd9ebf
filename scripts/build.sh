#!/usr/bin/env bash
# Configures and builds verbfault in ./build (BUILD_DIR overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
# The preset `default` (CMakePresets.json), or `ci` on CI (CI=true: line
# tables only, a third less compile time); BUILD_TYPE overrides its build
# type.
preset=default
[ "${CI:-}" = true ] && preset=ci
cmake --preset "$preset" -B "$build_dir" ${BUILD_TYPE:+-DCMAKE_BUILD_TYPE="$BUILD_TYPE"} >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
