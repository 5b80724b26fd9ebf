#!/usr/bin/env bash
# The main job: install what is needed, build, and run the bundled sample
# RDMA application on the simulated device, once plainly and then under a
# battery of faults (one plan per fault kind). Writes a conformance report,
# out/conformance.md: for each plan, how the application ended and what the
# runtime checks found. An application conforms when every fault ends in a
# clean success or a clean reported failure: no hang, no check finding (but
# resources left alive at exit).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build_dir="${BUILD_DIR:-build}"
mkdir -p out
verbfault="$build_dir/harness/cli/verbfault"
sample="$build_dir/scenarios/sample_rc/sample_rc"
seed="${SEED:-1}"

plans=(
  ""
  "cq_overflow cq#0 nth=5"
  "flush qp#1 nth=3"
  "rnr_retry_exhausted qp#0 opcode=send nth=2"
  "retry_exhausted qp#1 nth=2"
  "completion_error(rem_access_err) qp#0 nth=2"
  "spurious_cq_event p=0.3"
  "coalesce_cq_event p=0.3"
  "drop_cq_event cq#0 nth=2"
  "partial_poll p=0.5"
  "delayed_completion(2) p=0.2"
  "async_event(qp_fatal) qp#0 nth=6"
  "verb_failure(post_send,ENOMEM) qp#1 nth=2"
  "port_down qp#0 nth=5"
  "device_fatal qp#0 nth=6"
)

report=out/conformance.md
{
  echo "# Conformance of sample_rc on the simulated device (seed $seed)"
  echo
  echo "| plan | exit | the application said | runtime checks | verdict |"
  echo "| --- | --- | --- | --- | --- |"
} >"$report"
conforming=0
for plan in "${plans[@]}"; do
  args=(run --seed "$seed")
  [ -n "$plan" ] && args+=(--fault "$plan")
  set +e
  output="$("$verbfault" "${args[@]}" -- "$sample" 2>&1)"
  status=$?
  set -e
  said="$(printf '%s\n' "$output" | grep '^sample_rc: ' | tail -1 | sed 's/^sample_rc: //; s/|/\\|/g' || true)"
  checks="$(printf '%s\n' "$output" | grep -o 'verbfault: check [a-z_.]*' | sed 's/verbfault: check //' | sort -u | paste -sd, - || true)"
  # What a program leaves to the kernel at exit does not count against it.
  blocking="$(printf '%s' "$checks" | tr , '\n' | grep -v '^resource.leak_at_exit$' | paste -sd, - || true)"
  if { [ "$status" -eq 0 ] || [ "$status" -eq 1 ]; } && [ -z "$blocking" ]; then
    verdict="conforms"
    conforming=$((conforming + 1))
  else
    verdict="**does not conform**"
  fi
  echo "| \`${plan:-(no fault)}\` | $status | $said | ${checks:-none} | $verdict |" >>"$report"
done
echo >>"$report"
echo "$conforming of ${#plans[@]} plans: the application conforms." >>"$report"
cat "$report"
