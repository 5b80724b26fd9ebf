#!/usr/bin/env bash
# Builds the fuzzers with clang and libFuzzer (build-fuzz; FUZZ_BUILD_DIR
# overrides) under AddressSanitizer and UBSan, then runs each on its corpus
# (fuzz/corpus/NAME): 30 s each by default (CI), FUZZ_SECONDS overrides;
# --long: the long run (FUZZ_SECONDS, default 1800 s each); FUZZ_RUNS=N
# ends each run after N executions instead (the closing notes' 10 M runs:
# FUZZ_RUNS=10000000 scripts/fuzz.sh --long NAME); FUZZ_JOBS=N fuzzes in N
# processes at once sharing one corpus (-jobs=N: each makes FUZZ_RUNS/N
# executions, rounded up; its output in build-fuzz/jobs/NAME/fuzz-I.log;
# a finding in one stops that one only); as many fuzzers run at once as
# the cores hold (nproc / FUZZ_JOBS). Exits nonzero on
# any finding: the crashing input is left in build-fuzz/findings/NAME/.
# New inputs go to build-fuzz/corpus/NAME, never into the committed corpus
# (merge them with -merge=1: fuzz/README.md).
#   scripts/fuzz.sh [--long] [NAME...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-30}"
runs="${FUZZ_RUNS:-}"
if [ -n "$runs" ] && ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: FUZZ_RUNS=$runs: expected a positive number of executions" >&2
  exit 2
fi
jobs_of_fuzzer="${FUZZ_JOBS:-1}"
if ! [[ "$jobs_of_fuzzer" =~ ^[1-9][0-9]?$ ]]; then
  echo "fuzz.sh: FUZZ_JOBS=$jobs_of_fuzzer: expected a number of processes, 1 to 99" >&2
  exit 2
fi
if [ "${1:-}" = "--long" ]; then
  shift
  seconds="${FUZZ_SECONDS:-1800}"
fi
fuzzers=("$@")
[ ${#fuzzers[@]} -gt 0 ] || fuzzers=(fuzz_plan_yaml fuzz_rule_cli fuzz_cli_options fuzz_verbs_sequence)
# Absolute: the fuzzers of a -jobs run work in a directory of their own.
build_dir="$(realpath -m "${FUZZ_BUILD_DIR:-build-fuzz}")"
build_jobs="${FUZZ_BUILD_JOBS:-2}"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# The preset `fuzz` (CMakePresets.json): clang, every library instrumented
# for coverage (fuzzer-no-link), ASan and UBSan; the fuzzers link libFuzzer
# (fuzz/CMakeLists.txt). libverbfault.so is linked with --no-undefined: the
# ASan runtime is the shared one, so that the library can name its symbols
# (the fuzzers load it from clang's directory). -Wno-unknown-attributes:
# clang 14 has no `symver` attribute (GCC's), so in this build the C
# library's exports that glibc keeps under two versions (the rows of
# harness/frontdoor/libc_table.h with an older one: pthread_create, the
# pthread_rwlock_* and sem_* calls, the clock* variants) are not exported;
# the fuzzers, single-threaded, do not depend on them.
cmake --preset fuzz -B "$build_dir" "${launcher[@]}" >/dev/null
nice cmake --build "$build_dir" -j "$build_jobs" --target "${fuzzers[@]}"

runtime_dir="$(dirname "$(clang++ -print-file-name=libclang_rt.asan-x86_64.so)")"
export LD_LIBRARY_PATH="$runtime_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The runtime is a NEEDED library of each fuzzer, after libstdc++: that
# order is harmless here (libstdc++ defines no allocator), so ASan's check
# of it is off.
export ASAN_OPTIONS="verify_asan_link_order=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
root="$PWD"
# One fuzzer's run: what it says in $build_dir/NAME.out, and NAME.found
# when it found something.
fuzz_one() {
  local name=$1
  local out="$build_dir/$name.out"
  rm -f "$out" "$build_dir/$name.found"
  corpus="$build_dir/corpus/$name"
  findings="$build_dir/findings/$name"
  mkdir -p "$corpus" "$findings"
  dict=()
  [ -f "fuzz/$name.dict" ] && dict=(-dict="$root/fuzz/$name.dict")
  bound=(-max_total_time="$seconds") length="${seconds}s"
  [ -n "$runs" ] && bound=(-runs="$runs") length="$runs executions"
  # -jobs writes each process's output to ./fuzz-I.log: here, not in the
  # checkout (where another fuzz.sh could be writing its own).
  workdir="$build_dir/jobs/$name"
  rm -rf "$workdir"
  mkdir -p "$workdir"
  parallel=()
  if [ "$jobs_of_fuzzer" -gt 1 ]; then
    parallel=(-jobs="$jobs_of_fuzzer" -workers="$jobs_of_fuzzer")
    if [ -n "$runs" ]; then
      each=$(((runs + jobs_of_fuzzer - 1) / jobs_of_fuzzer))
      bound=(-runs="$each") length="$((each * jobs_of_fuzzer)) executions ($each in each of $jobs_of_fuzzer processes)"
    else
      length+=" in each of $jobs_of_fuzzer processes"
    fi
  fi
  echo "fuzz.sh: $name for $length" >"$out"
  # -timeout: an input that runs 10 s is a hang; -rss_limit_mb: a leak or
  # an allocation out of bounds is a finding, not a swap storm.
  run_status=0
  (cd "$workdir" && nice "$build_dir/fuzz/$name" "$corpus" "$root/fuzz/corpus/$name" "${dict[@]}" \
    "${bound[@]}" "${parallel[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
    -print_final_stats=1 -close_fd_mask=1 -artifact_prefix="$findings/") \
    2>"$build_dir/$name.log" || run_status=$?
  logs=("$build_dir/$name.log")
  for ((i = 0; i < jobs_of_fuzzer; i++)); do
    [ ! -f "$workdir/fuzz-$i.log" ] || logs+=("$workdir/fuzz-$i.log")
  done
  if [ "$run_status" -ne 0 ]; then
    {
      echo "fuzz.sh: $name FOUND something: ${logs[*]}, $findings/"
      for log in "${logs[@]}"; do tail -n 40 "$log"; done
    } >>"$out"
    touch "$build_dir/$name.found"
  fi
  grep -E '^stat::|verbs calls|^#[0-9]+ *DONE' "${logs[@]}" >>"$out" || true
}
# As many fuzzers at once as the cores hold (each of FUZZ_JOBS processes):
# each gets a core of its own for its time, as when they ran one by one.
at_once=$(($(nproc) / jobs_of_fuzzer))
[ "$at_once" -ge 1 ] || at_once=1
for name in "${fuzzers[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$at_once" ]; do wait -n || true; done
  fuzz_one "$name" &
done
wait
status=0
for name in "${fuzzers[@]}"; do
  if [ -f "$build_dir/$name.found" ]; then
    cat "$build_dir/$name.out" >&2
    status=1
  else
    cat "$build_dir/$name.out"
  fi
done
exit "$status"
