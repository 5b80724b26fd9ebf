#!/usr/bin/env bash
# Builds the benchmarks (Release, ./build-bench) and runs
# bench/local_fabric once (the simulated device between two processes, no
# harness: out/bench-local-fabric.{json,log}) and bench/cm_connect
# (connection setup through the simulated connection manager:
# out/bench-cm-connect.{json,log}), then
# bench/interposer_overhead once per harness mode, each in its own process
# (libverbfault.so reads its configuration once, when it loads):
#   no-plan  nothing set: every call passes through the interposer;
#   active   a seed and rules that match every poll, post and arm but never
#            fire: the hooks, the fault decisions, every runtime check and
#            the thread scheduler (on under a seed) run, and nothing is
#            injected;
#   free     the same with VERBFAULT_THREADS=free: no thread scheduler. The
#            table's last column divides active's ratio by this one's: what
#            the scheduler costs a verbs call of a one-thread program;
#   trace    the same, writing the trace file out/bench-trace.jsonl (some
#            GB: every benchmarked call is a record; deleted once measured
#            unless BENCH_KEEP_TRACE=1). BENCH_TRACE=PATH writes it there
#            instead: several GB outgrow the page cache's dirty limits, and
#            then the disk's write bandwidth sets the trace ratios (e.g.
#            BENCH_TRACE=/dev/shm/bench-trace.jsonl measures the harness
#            without the disk).
# Each run writes out/bench-<mode>.json (Google Benchmark's JSON, medians
# of the repetitions) and out/bench-<mode>.log (its output). The script then
# prints every ratio per mode in one Markdown table, with its goal, and the
# trace's bytes per record.
#
# Every ratio is of two measurements of the same run, so it holds on a noisy
# machine where absolute times do not. Extra arguments go to every run
# (e.g. --benchmark_filter=RdmaWrite). REPETITIONS (default 5) sets
# --benchmark_repetitions.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build_dir="${BENCH_BUILD_DIR:-build-bench}"
# The test suite keeps its default (on) so that the same directory serves
# `ctest` of a Release build too; only the benchmark is built here.
cmake --preset release -B "$build_dir" >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target interposer_overhead local_fabric cm_connect sweep_speed
mkdir -p out

# The local fabric: RDMA WRITE 64 KiB and SEND ping-pong between this
# process and a peer it starts, against memcpy and a pipe (its own ratios).
fabric_line="$build_dir/bench/local_fabric --benchmark_out=out/bench-local-fabric.json --benchmark_out_format=json --benchmark_repetitions=${REPETITIONS:-5} --benchmark_report_aggregates_only=true"
for word in "$@"; do fabric_line+=" $(printf '%q' "$word")"; done
echo "== local fabric: $fabric_line"
"$build_dir/bench/local_fabric" --benchmark_out=out/bench-local-fabric.json --benchmark_out_format=json \
  --benchmark_repetitions="${REPETITIONS:-5}" --benchmark_report_aggregates_only=true "$@" 2>&1 |
  tee out/bench-local-fabric.log

# Connection setup through the simulated connection manager (librdmacm in
# one process): connect to ESTABLISHED against a pipe round trip.
echo "== connection manager: $build_dir/bench/cm_connect"
"$build_dir/bench/cm_connect" --benchmark_out=out/bench-cm-connect.json --benchmark_out_format=json \
  --benchmark_repetitions="${REPETITIONS:-5}" --benchmark_report_aggregates_only=true "$@" 2>&1 |
  tee out/bench-cm-connect.log

# A seed of a sweep (--jobs 1) and of `verbfault run` against one bare
# run of the sample (libverbfault.so preloaded, no harness).
sweep_line="$build_dir/bench/sweep_speed $build_dir/harness/cli/verbfault $build_dir/harness/libverbfault.so $build_dir/scenarios/sample_rc/sample_rc $build_dir/bench/sample_rc_slow_start --benchmark_out=out/bench-sweep-speed.json --benchmark_out_format=json --benchmark_repetitions=${REPETITIONS:-5} --benchmark_report_aggregates_only=true"
echo "== sweep speed: $sweep_line"
"$build_dir/bench/sweep_speed" "$build_dir/harness/cli/verbfault" "$build_dir/harness/libverbfault.so" \
  "$build_dir/scenarios/sample_rc/sample_rc" "$build_dir/bench/sample_rc_slow_start" --benchmark_out=out/bench-sweep-speed.json \
  --benchmark_out_format=json --benchmark_repetitions="${REPETITIONS:-5}" \
  --benchmark_report_aggregates_only=true "$@" 2>&1 | tee out/bench-sweep-speed.log

bench="$build_dir/bench/interposer_overhead"
trace="${BENCH_TRACE:-out/bench-trace.jsonl}"
never='partial_poll nth=1000000000000; completion_error(rem_access_err) nth=1000000000000; spurious_cq_event nth=1000000000000'
# BM_PollCqEmpty polls an empty CQ on purpose: the check that ends a spin
# on empty polls is off, every other check runs (its counter still counts).
checks=-liveness.spinning
modes=(no-plan active free trace)
declare -A mode_env=(
  [no-plan]=""
  [active]="VERBFAULT_SEED=1|VERBFAULT_FAULTS=$never|VERBFAULT_CHECKS=$checks"
  [free]="VERBFAULT_SEED=1|VERBFAULT_FAULTS=$never|VERBFAULT_CHECKS=$checks|VERBFAULT_THREADS=free"
  [trace]="VERBFAULT_SEED=1|VERBFAULT_FAULTS=$never|VERBFAULT_CHECKS=$checks|VERBFAULT_TRACE=$trace"
)

# A word as it would be typed in a shell: quoted when it has to be.
quote() {
  if [[ "$1" =~ ^[A-Za-z0-9_./=:,+-]+$ ]]; then printf '%s' "$1"; else printf "'%s'" "$1"; fi
}

commands=()
for mode in "${modes[@]}"; do
  # Nothing of the caller's harness configuration leaks into a mode.
  vars=()
  [ -z "${mode_env[$mode]}" ] || IFS='|' read -r -a vars <<<"${mode_env[$mode]}"
  args=(--benchmark_out="out/bench-$mode.json" --benchmark_out_format=json
    --benchmark_repetitions="${REPETITIONS:-5}" --benchmark_report_aggregates_only=true "$@")
  line="env -u VERBFAULT_SEED -u VERBFAULT_PLAN -u VERBFAULT_FAULTS -u VERBFAULT_TRACE -u VERBFAULT_CHECKS -u VERBFAULT_THREADS"
  for word in "${vars[@]}" "$bench" "${args[@]}"; do
    if [[ "$word" == *=* && "$word" != -* ]]; then
      line+=" ${word%%=*}=$(quote "${word#*=}")"
    else
      line+=" $(quote "$word")"
    fi
  done
  commands+=("$line")
  echo "== $mode: $line"
  [ "$mode" != trace ] || rm -f "$trace"
  env -u VERBFAULT_SEED -u VERBFAULT_PLAN -u VERBFAULT_FAULTS -u VERBFAULT_TRACE \
    -u VERBFAULT_CHECKS -u VERBFAULT_THREADS "${vars[@]}" "$bench" "${args[@]}" 2>&1 | tee "out/bench-$mode.log"
done

# ratio lines: "ratio NAME (MODE): X"; the mode is the column.
ratio() {  # mode, what -> the value, or "-"
  local value
  value=$(grep -F "ratio $2" "out/bench-$1.log" | sed -E 's/.*: ([0-9.]+)$/\1/' | head -n 1)
  printf '%s' "${value:--}"
}
# Whether a value meets a goal "<= X" or ">= X" ("" when there is none).
verdict() {  # value, op, bound
  [ -n "$2" ] && [ "$1" != - ] || return 0
  if awk -v v="$1" -v b="$3" -v op="$2" 'BEGIN { exit !(op == "<=" ? v <= b : v >= b) }'; then
    printf ' (ok)'
  else
    printf ' (**missed**)'
  fi
}

echo
echo "## Benchmarks ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, medians of ${REPETITIONS:-5})"
echo
echo "Commands:"
echo
echo "    $fabric_line"
echo "    $sweep_line"
for line in "${commands[@]}"; do echo "    $line"; done
echo
echo "| ratio | no plan | harness active | harness active, trace file | goal | scheduler: active / free |"
echo "| --- | --- | --- | --- | --- | --- |"
for name in BM_PollCqEmpty BM_PostSendAndPoll BM_SendRecvRoundTrip64 BM_RdmaWrite64K; do
  what="$name interposed/direct"
  a=$(ratio no-plan "$what")
  b=$(ratio active "$what")
  c=$(ratio trace "$what")
  f=$(ratio free "$what")
  s=-
  [ "$b" = - ] || [ "$f" = - ] || s=$(awk -v b="$b" -v f="$f" 'BEGIN { printf "%.2f", b / f }')
  if [ "$name" = BM_RdmaWrite64K ]; then
    # The active and trace goals are the fast paths'; a 64 KiB write is
    # the copy, which the harness does not touch.
    echo "| $what | $a$(verdict "$a" '<=' 1.1) | $b | $c | no plan <= 1.1 | $s |"
  else
    echo "| $what | $a$(verdict "$a" '<=' 1.1) | $b$(verdict "$b" '<=' 2) | $c$(verdict "$c" '<=' 3) | no plan <= 1.1, active <= 2, trace <= 3 | $s |"
  fi
done
what="BM_RdmaWrite64K/BM_Memcpy64K throughput"
a=$(ratio no-plan "$what")
b=$(ratio active "$what")
c=$(ratio trace "$what")
echo "| RDMA WRITE 64K / memcpy 64K throughput (direct) | $a$(verdict "$a" '>=' 0.5) | $b$(verdict "$b" '>=' 0.5) | $c$(verdict "$c" '>=' 0.5) | >= 0.5 | |"
# The local fabric's ratios (one run, no harness: the "no plan" column).
fabric_ratio() {  # what -> the value, or "-"
  local value
  value=$(grep -F "ratio $1" out/bench-local-fabric.log | sed -E 's/.*: ([0-9.]+)( \(goal.*)?$/\1/' | head -n 1)
  printf '%s' "${value:--}"
}
a=$(fabric_ratio "BM_RemoteWrite64K/BM_Memcpy64K throughput")
echo "| local fabric: RDMA WRITE 64K across processes / memcpy 64K throughput | $a$(verdict "$a" '>=' 0.3) | | | >= 0.3 | |"
a=$(fabric_ratio "BM_RemoteSendPingPong64/BM_PipePingPong64 latency")
echo "| local fabric: SEND 64 B ping-pong / pipe ping-pong latency | $a$(verdict "$a" '<=' 5) | | | <= 5 | |"

sweep_ratio() {  # what -> the value, or "-"
  local value
  value=$(grep -F "$1" out/bench-sweep-speed.log | sed -E 's/.*: ([0-9.]+)$/\1/' | head -n 1)
  printf '%s' "${value:--}"
}
a=$(sweep_ratio "ratio BM_SweepPerSeedExec/BM_BareRun:")
echo "| a seed of \`verbfault sweep --jobs 1\` / one bare run of the sample | $a$(verdict "$a" '<=' 1.2) | | | <= 1.2 (issue 37) | |"
a=$(sweep_ratio "ratio BM_SweepPerSeed/BM_BareRun:")
echo "| a seed of \`verbfault sweep --jobs 1 --fork-server\` / one bare run of the sample | $a$(verdict "$a" '<=' 0.5) | | | <= 0.5 (issue 37) | |"
a=$(sweep_ratio "ratio BM_SweepPerSeedExec/BM_BareRun slow start:")
echo "| the same from exec, for the sample with 50 ms of start-up | $a | | | | |"
a=$(sweep_ratio "ratio BM_SweepPerSeed/BM_BareRun slow start:")
echo "| the same through the fork server, for the sample with 50 ms of start-up | $a$(verdict "$a" '<=' 0.1) | | | <= 0.1 (issue 37) | |"
a=$(sweep_ratio "ratio BM_RunPerSeed/BM_BareRun:")
echo "| \`verbfault run --seed S\` / one bare run of the sample | $a | | | | |"
echo "| sweep seeds/s of the sample, one job: from exec / fork server | $(sweep_ratio "seeds/s BM_SweepPerSeedExec:") / $(sweep_ratio "seeds/s BM_SweepPerSeed:") | | | | |"
echo "| sweep seeds/s of the sample with 50 ms of start-up: from exec / fork server | $(sweep_ratio "seeds/s BM_SweepPerSeedExec slow start:") / $(sweep_ratio "seeds/s BM_SweepPerSeed slow start:") | | | | |"

# The library's last line at exit: "verbfault: seed N, trace hash H (R records)".
records=$(sed -nE 's/^verbfault: seed .*, trace hash .* \(([0-9]+) records\)$/\1/p' out/bench-trace.log |
  tail -n 1)
echo
if [ -n "$records" ] && [ "$records" -gt 0 ] && [ -f "$trace" ]; then
  bytes=$(stat -c %s "$trace")
  echo "Trace: $trace, $bytes bytes, $records records:" \
    "$(awk -v b="$bytes" -v r="$records" 'BEGIN { printf "%.1f", b / r }') bytes per record."
  if [ "${BENCH_KEEP_TRACE:-0}" != 1 ]; then
    rm -f "$trace"
    echo "($trace deleted; BENCH_KEEP_TRACE=1 keeps it.)"
  fi
else
  echo "Trace: no record count on stderr or no $trace: bytes per record unknown."
fi
