# Sourced by the VM suites (harness/tests/rxe/inside.sh, harness/tests/siw/
# inside.sh): one case of the connection manager's faults at effect level
# on the guest's rdma_cm, through the relay (provider/cm_relay.cpp): one
# connection in one process at the first port's address
# (scenarios/rdma_cm/connect_steps.c; cm_id#0 is librdmacm's probe, the
# listener cm_id#1, the active id cm_id#2, its passive peer cm_id#3).
#
# run_cm WHAT EXPECTED MODE [FAULT]: ok when the run's output matches
# EXPECTED (a basic regular expression: parentheses are themselves, \|
# separates alternatives), else bad with the output. Uses the caller's
# verbfault, build, ok and bad; each case gets a port of its own.
cm_port=${cm_port:-7600}
run_cm() {
  local output
  cm_port=$((cm_port + 1))
  output=$("$verbfault" run --seed 1 --hang-after 2 --timeout 60 ${4:+--fault "$4"} -- \
    "$build/scenarios/rdma_cm/cm_connect_steps" "$cm_port" "${RDMA_IP:-10.0.0.1}" $3 2>&1)
  if grep -q -- "$2" <<<"$output"; then
    ok "rdma_cm on ${RDMA_DEV:-rxe0}: $1"
  else
    bad "rdma_cm on ${RDMA_DEV:-rxe0}: $1 (expected: $2)"
    sed 's/^/        /' <<<"$output"
  fi
}
