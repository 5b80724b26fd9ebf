#!/usr/bin/env bash
# Builds the benchmarks (Release, ./build-bench) and runs them. Each prints
# its result as a ratio against a baseline measured in the same run. Run
# with the harness active, e.g.
#   VERBFAULT_SEED=1 VERBFAULT_FAULTS='flush qp#99 nth=1' \
#   VERBFAULT_CHECKS=-liveness.spinning scripts/bench.sh
# (the empty-poll benchmark is, to the liveness check, a program spinning
# forever).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build_dir="${BENCH_BUILD_DIR:-build-bench}"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DVERBFAULT_BUILD_TESTS=OFF \
  -DVERBFAULT_BUILD_BENCHMARKS=ON >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target interposer_overhead
"$build_dir/bench/interposer_overhead" --benchmark_repetitions="${REPETITIONS:-5}" \
  --benchmark_report_aggregates_only=true "$@"
