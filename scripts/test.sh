#!/usr/bin/env bash
# The whole test suite: install what is needed, build, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build_dir="${BUILD_DIR:-build}"
cd "$build_dir"
ctest --output-on-failure -j "$(nproc)" --timeout 600
