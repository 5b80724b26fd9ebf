#!/usr/bin/env bash
# Client/server pairs in a local fabric under faults, each side checked
# (README.md, "Faults between two processes").
#
#   run_faults.sh [--lib PATH] [--verbs-pair PATH] [--port N] [--workdir DIR] CASE
#   run_faults.sh --list
#
# pingpong.* cases: the unmodified ibv_rc_pingpong through run_pair.sh
# --expect ended, both sides with the same fault rule (VERBFAULT_FAULTS, a
# proc= selector says whose), VERBFAULT_SEED=1, VERBFAULT_FREEDOMS=canonical
# (the device's completion order between the send and receive queues of
# one CQ is arrival order, so that the first error pingpong prints is the
# one that caused the rest) and a trace per side; the case passes when each
# side's exit status and the line it printed are the expected ones and the
# fault's record is in the trace of the side it was injected in.
#
# verbs.* cases: verbs_pair (verbs_pair.cpp), a target (member 0) and a
# requester (member 1), without injected faults except verbs.port_down
# (the target's port goes down by a plan rule): each side checks what it
# observes itself and says PASS; here both must, the target's exit status
# must be the expected one (verbs.kill: killed by SIGKILL), and the pair
# must end within 20 s of wall clock although the requester's transport
# timer is 2.4 hours per try (timeout 31, retry_cnt 7: virtual time).
#
# Exit status: 0 pass, 1 fail (one line first, then both sides' output), 2
# bad usage.
set -uo pipefail

me=run_faults
here=$(cd "$(dirname "$0")" && pwd)
cases=(pingpong.rnr_exhausted pingpong.flush pingpong.cq_overflow pingpong.port_down
       verbs.kill verbs.rnr verbs.rnr_late verbs.target_err verbs.cq_overflow verbs.port_down)

usage() {
  echo "usage: $0 [--lib PATH] [--verbs-pair PATH] [--port N] [--workdir DIR] CASE | --list" >&2
  echo "cases: ${cases[*]}" >&2
  exit 2
}

lib=""; verbs_pair=""; port=""; workdir=""; name=""
while (($#)); do
  case $1 in
    --lib) lib=${2-}; shift 2 || usage ;;
    --verbs-pair) verbs_pair=${2-}; shift 2 || usage ;;
    --port) port=${2-}; shift 2 || usage ;;
    --workdir) workdir=${2-}; shift 2 || usage ;;
    --list) printf '%s\n' "${cases[@]}"; exit 0 ;;
    -h|--help) usage ;;
    -*) echo "$me: unknown option $1" >&2; usage ;;
    *) [[ -z $name ]] || usage; name=$1; shift ;;
  esac
done
[[ -n $name ]] || usage
index=""
for i in "${!cases[@]}"; do [[ ${cases[$i]} == "$name" ]] && index=$i; done
[[ -n $index ]] || { echo "$me: unknown case '$name'" >&2; usage; }
top=$(cd "$here/../.." && pwd)
[[ -n $lib ]] || lib=$top/build/harness/libverbfault.so
[[ -n $verbs_pair ]] || verbs_pair=$top/build/scenarios/local_fabric/verbs_pair
[[ -n $port ]] || port=$((18700 + index))
[[ -n $workdir ]] || workdir=$(mktemp -d "${TMPDIR:-/tmp}/lff-$name.XXXXXX")
rm -rf "$workdir" && mkdir -p "$workdir" || exit 1
# Bash reports a side killed by a signal on its stderr: to a file.
exec 2> "$workdir/run_faults.stderr"

fail() {
  echo "$me: $name: FAIL: $*"
  for role in server client target requester; do
    [[ -e $workdir/$role.log ]] || continue
    echo "--- $role, output ($workdir/$role.log), last 25 lines:"
    tail -n 25 "$workdir/$role.log" | sed 's/^/    /'
  done
  exit 1
}

# ---------------------------------------------------------------- pingpong

# rule, then per side (server, client): exit status, a line the side must
# print (exactly), the side whose trace has the fault, the fault's name.
# Member 0 is the server, 1 the client. The liveness line: a side left
# waiting for a message its peer will never send polls an empty CQ; once
# the peer is gone nothing can arrive, and the harness ends it (122)
# instead of letting it spin forever.
spin="verbfault: check liveness.spinning on cq#0"
pingpong_case() {
  case $1 in
    pingpong.rnr_exhausted)  # the client's 2nd SEND is RNR-NAKed until the retries run out
      rule='rnr_retry_exhausted qp#0 opcode=send proc=1 nth=2'
      server_want=(122 "$spin*"); client_want=(1 "Failed status RNR retry counter exceeded (13) for wr_id 2")
      fault_side=client; fault='"fault":"rnr_retry_exhausted"*"status":"rnr_retry_exc_err"' ;;
    pingpong.flush)  # the client's QP goes to ERR before its 2nd SEND: its 500 receives are flushed first
      rule='flush qp#0 side=send proc=1 nth=2'
      server_want=(122 "$spin*"); client_want=(1 "Failed status Work Request Flushed Error (5) for wr_id 1")
      fault_side=client; fault='"fault":"flush"' ;;
    pingpong.cq_overflow)  # the server's CQ overflows at its 50th poll: the polls fail, its QP goes to ERR
      # The client's next SEND races the overflow, as on hardware: after it,
      # nothing answers (transport retries run out); before it, the server's
      # HCA took and acknowledged the SEND, whose completion the overflow
      # then lost, and the client waits for a reply that never comes.
      rule='cq_overflow cq#0 proc=0 nth=50'
      server_want=(1 "poll CQ failed -5"); client_want=(1 "Failed status transport retry counter exceeded (12) for wr_id 2")
      client_alt=(122 "$spin*")
      fault_side=server; fault='"fault":"cq_overflow"' ;;
    pingpong.port_down)  # the server's port goes down mid-run: its SEND finds no path
      rule='port_down qp#0 proc=0 nth=520'
      server_want=(1 "Failed status transport retry counter exceeded (12) for wr_id 2"); client_want=(122 "$spin*")
      fault_side=server; fault='"fault":"port_down"' ;;
  esac
}

if [[ $name == pingpong.* ]]; then
  pingpong_case "$name"
  envs=()
  for side in server client; do
    envs+=(--$side-env "VERBFAULT_FAULTS=$rule" --$side-env VERBFAULT_SEED=1
           --$side-env VERBFAULT_FREEDOMS=canonical --$side-env "VERBFAULT_TRACE=$workdir/$side.trace")
  done
  verdict=$("$here/run_pair.sh" --lib "$lib" --port "$port" --timeout 30 --workdir "$workdir" \
            --expect ended "${envs[@]}" ibv_rc_pingpong)
  rc=$?
  ((rc == 0)) || { echo "$verdict"; exit 1; }
  [[ $verdict =~ server\ exit\ status\ ([0-9]+),\ client\ exit\ status\ ([0-9]+) ]] ||
    fail "run_pair.sh said: $verdict"
  got=("${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}")
  i=0
  for side in server client; do
    want_var=${side}_want[@]; want=("${!want_var}")
    alt_var=${side}_alt[@]; alt=("${!alt_var-}")
    # The other outcome a case allows (${side}_alt), when the status says so.
    ((${#alt[@]} == 2 && got[i] == alt[0])) && want=("${alt[@]}")
    ((got[i] == want[0])) || fail "the $side's exit status is ${got[i]}, expected ${want[0]} (printing \"${want[1]}\")"
    found=0
    while IFS= read -r line; do
      # shellcheck disable=SC2053  # the expected line may end in a glob
      [[ $line == ${want[1]} ]] && { found=1; break; }
    done < "$workdir/$side.log"
    ((found)) || fail "the $side did not print \"${want[1]}\""
    ((++i))
  done
  grep -q "$(sed 's/\*/.*/g' <<< "$fault")" "$workdir/$fault_side.trace" 2>/dev/null ||
    fail "the $fault_side's trace ($workdir/$fault_side.trace) has no record $fault of the injected fault"
  other=$([[ $fault_side == server ]] && echo client || echo server)
  grep -q '"fault":' "$workdir/$other.trace" 2>/dev/null &&
    fail "a fault fired in the $other, whose member index the rule does not select"
  echo "$me: $name: PASS ($rule): server exit ${got[0]} \"${server_want[1]%\*}\", client exit ${got[1]} \"${client_want[1]%\*}\""
  exit 0
fi

# ---------------------------------------------------------------- verbs_pair

[[ -x $verbs_pair ]] || fail "no $verbs_pair (build the verbs_pair target, or give --verbs-pair)"
[[ -r $lib ]] || fail "no $lib"
# shellcheck source=../preload_line.sh
source "$here/../preload_line.sh"
preload=$(preload_line "$lib")
scenario=${name#verbs.}
fabric="lff-$scenario-$$"
target_env=(); want_target=0
case $scenario in
  kill) want_target=137 ;;
  port_down)
    # The target's 4th call on its QP (after the 3 ibv_modify_qp: its post
    # of a receive once connected) takes the port down.
    target_env=(VERBFAULT_SEED=1 "VERBFAULT_FAULTS=port_down qp#0 nth=4" "VERBFAULT_TRACE=$workdir/target.trace") ;;
esac
now_us() { local t=${EPOCHREALTIME//[.,]/}; echo "${t#0}"; }
t0=$(now_us)
env LD_PRELOAD="$preload" VERBFAULT_FABRIC="$fabric" VERBFAULT_PROC=0 "${target_env[@]}" \
  "$verbs_pair" --role target --scenario "$scenario" --port "$port" > "$workdir/target.log" 2>&1 < /dev/null &
target_pid=$!
env LD_PRELOAD="$preload" VERBFAULT_FABRIC="$fabric" VERBFAULT_PROC=1 \
  "$verbs_pair" --role requester --scenario "$scenario" --port "$port" > "$workdir/requester.log" 2>&1 < /dev/null &
requester_pid=$!
trap 'kill -KILL $target_pid $requester_pid 2>/dev/null' EXIT
limit=20
while kill -0 "$target_pid" 2>/dev/null || kill -0 "$requester_pid" 2>/dev/null; do
  if (($(now_us) - t0 > limit * 1000000)); then
    fail "still running after $limit s (a hang; the transport timeouts are virtual time)"
  fi
  sleep 0.05
done
wait "$target_pid" 2>/dev/null; target_rc=$?
wait "$requester_pid"; requester_rc=$?
us=$(( $(now_us) - t0 ))
((requester_rc == 0)) || fail "the requester exited with status $requester_rc"
grep -qx "requester: PASS" "$workdir/requester.log" || fail "the requester did not say PASS"
((target_rc == want_target)) || fail "the target exited with status $target_rc, expected $want_target"
if ((want_target == 0)); then
  grep -qx "target: PASS" "$workdir/target.log" || fail "the target did not say PASS"
fi
if [[ $scenario == port_down ]]; then
  grep -q '"fault":"port_down"' "$workdir/target.trace" 2>/dev/null ||
    fail "the target's trace has no port_down record: the rule did not fire where expected"
fi
first_error=$(grep -m1 -E "status=[^s]" "$workdir/requester.log" | sed 's/^requester: //')
echo "$me: $name: PASS in $((us / 1000000)).$((us % 1000000 / 100000)) s: target exit $target_rc, requester: ${first_error:-no error}"
