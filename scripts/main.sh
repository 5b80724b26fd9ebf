#!/usr/bin/env bash
# The main job: install what is needed, build, and run the bundled sample
# RDMA application on the simulated device. Its output goes to the terminal
# and to out/sample_rc.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build_dir="${BUILD_DIR:-build}"
mkdir -p out
LD_PRELOAD="$PWD/$build_dir/harness/libverbfault.so" \
  "$build_dir/scenarios/sample_rc/sample_rc" "$@" | tee out/sample_rc.txt
