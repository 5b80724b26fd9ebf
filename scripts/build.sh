#!/usr/bin/env bash
# Configures and builds verbfault in ./build (BUILD_DIR overrides).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
# The preset `default` (CMakePresets.json); BUILD_TYPE overrides its build type.
cmake --preset default -B "$build_dir" ${BUILD_TYPE:+-DCMAKE_BUILD_TYPE="$BUILD_TYPE"} >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
