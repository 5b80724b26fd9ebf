#!/usr/bin/env bash
# Runs the bundled sample under each fault kind against the REAL rxe
# provider, inside a throw-away VM with Soft-RoCE (testing/vm/vm-run.sh;
# qemu-system-x86, busybox-static, cpio and kmod from scripts/install-deps.sh,
# Debian's kernel downloaded on first use).
# Output: out/rxe-faults.txt. Build first (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" != "--inside" ]; then
  mkdir -p out
  exec testing/vm/vm-run.sh --provider rxe --timeout 600 --share "$PWD" --cwd "$PWD" \
    --libs-of build/harness/cli/verbfault --libs-of build/harness/libverbfault.so \
    --libs-of build/scenarios/sample_rc/sample_rc \
    --script 'bash scripts/rxe-faults.sh --inside > out/rxe-faults.txt 2>&1'
fi
# Inside the VM: rxe0 only (no simulated device), one run per plan.
export VERBFAULT_SIM_DEVICES=0
run() {
  echo "== $*"
  "build/harness/cli/verbfault" run --seed 7 "$@" -- build/scenarios/sample_rc/sample_rc --device rxe0 || true
}
run
run --fault 'completion_error(rem_access_err) qp#0 opcode=send nth=3'
run --fault 'partial_poll p=0.5' --fault 'spurious_cq_event p=0.3' --fault 'delayed_completion(2) p=0.2'
run --fault 'cq_overflow cq#1 nth=3'
run --fault 'port_down qp#0 nth=5'
run --fault 'rnr_retry_exhausted qp#1 nth=2'
run --fault 'async_event(qp_fatal) qp#0 nth=6'
run --fault 'flush qp#1 nth=2'
run --check-determinism --fault 'partial_poll p=0.5' --fault 'coalesce_cq_event p=0.2'
