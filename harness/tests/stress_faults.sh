#!/usr/bin/env bash
# stress.faults: stress_shared_queues under `verbfault run` with a plan that
# injects completion errors (IBV_WC_REM_ACCESS_ERR, 10) and flushes into the
# senders' SEND_WITH_IMM, cuts polls short and delays completions. The
# program accounts for every work request itself (exit 0); here its count
# of injected errors must equal the trace's completion_error faults, and
# the flush faults must each have flushed a send.
#
#   stress_faults.sh VERBFAULT_CLI STRESS_PROGRAM OPERATIONS THREADS_MODE
set -euo pipefail
cli="$1" program="$2" operations="$3" threads="$4"
trace="$(mktemp --suffix=.jsonl)"
trap 'rm -f "$trace"' EXIT
output="$("$cli" run --seed 7 --threads "$threads" --trace "$trace" \
  --fault 'completion_error(rem_access_err) opcode=send_with_imm p=0.002' \
  --fault 'flush opcode=send_with_imm p=0.001' \
  --fault 'partial_poll p=0.2' \
  --fault 'delayed_completion(2) p=0.01' \
  -- "$program" "$operations" --faults 10 2>&1)" || {
  echo "$output"
  echo "stress_faults: the run failed"
  exit 1
}
echo "$output" | grep -v '^verbfault:   #'
line="$(echo "$output" | grep '^stress_shared_queues: ')"
injected="$(echo "$line" | sed -n 's/.*errors: \([0-9]*\) injected.*/\1/p')"
flushed="$(echo "$line" | sed -n 's/.*, \([0-9]*\) flushed.*/\1/p')"
traced_errors="$(grep -ac '"fault":"completion_error"' "$trace" || true)"
traced_flushes="$(grep -ac '"fault":"flush"' "$trace" || true)"
echo "stress_faults: program: $injected injected, $flushed flushed; trace: $traced_errors completion_error, $traced_flushes flush faults"
[ "$injected" -gt 0 ] || { echo "stress_faults: no error was injected"; exit 1; }
[ "$traced_flushes" -gt 0 ] || { echo "stress_faults: no flush fired"; exit 1; }
[ "$injected" -eq "$traced_errors" ] || { echo "stress_faults: injected errors != the trace's"; exit 1; }
[ "$flushed" -ge "$traced_flushes" ] || { echo "stress_faults: fewer flushes than flush faults"; exit 1; }
