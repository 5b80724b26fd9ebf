#!/usr/bin/env bash
# The self-test of run_pair.sh: it runs pairs of fake_verbs_program.py
# (symlinked under the real programs' names, first in PATH), which print
# what the real programs print, correct or wrong in one way at a time
# (FAKE_MODE), and checks run_pair.sh's verdict: its exit status and its
# first line. Passes today, while the real pairs (ctest -L local_fabric)
# fail for want of a fabric; it is what says that run_pair.sh will accept a
# good pair and name what is wrong with a bad one.
#
#   run_selftest.sh [--lib PATH] [--port N] [--workdir DIR]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
run_pair=$here/../run_pair.sh
lib=$(cd "$here/../../.." && pwd)/build/harness/libverbfault.so
port=19500
workdir=""
while (($#)); do
  case $1 in
    --lib) lib=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --workdir) workdir=$2; shift 2 ;;
    *) echo "usage: $0 [--lib PATH] [--port N] [--workdir DIR]" >&2; exit 2 ;;
  esac
done
[[ -n $workdir ]] || workdir=$(mktemp -d "${TMPDIR:-/tmp}/lf-selftest.XXXXXX")
rm -rf "$workdir/bin"
mkdir -p "$workdir/bin"
for prog in $("$run_pair" --list | sed 's/_events$//' | sort -u); do
  ln -s "$here/fake_verbs_program.py" "$workdir/bin/$prog"
done
export PATH=$workdir/bin:$PATH

failures=0
n=0
# expect EXIT_STATUS FIRST_LINE_SUBSTRING FAKE_MODE TEST [run_pair options]
expect() {
  local want_rc=$1 want=$2 mode=$3 test=$4
  shift 4
  n=$((n + 1))
  local out rc first
  out=$(FAKE_MODE=$mode "$run_pair" --lib "$lib" --port $((port + n)) --workdir "$workdir/$n-$mode-$test" "$@" "$test" 2>&1)
  rc=$?
  first=$(head -n1 <<< "$out")
  if [[ $rc == "$want_rc" && $first == *"$want"* ]]; then
    echo "ok   $mode $test: $first"
  else
    echo "FAIL $mode $test: expected exit status $want_rc and \"$want\", got $rc:"
    sed 's/^/     /' <<< "$out"
    failures=$((failures + 1))
  fi
}

# Correct pairs of every kind pass.
expect 0 "PASS" ok ibv_rc_pingpong
expect 0 "PASS" ok ibv_rc_pingpong_events
expect 0 "PASS" ok ibv_uc_pingpong
expect 0 "PASS" ok ibv_ud_pingpong           # "PSN 0x...: GID" in its local address
expect 0 "(16 QPs each)" ok ibv_srq_pingpong
expect 0 "PASS" ok ib_send_bw
expect 0 "PASS" ok ib_write_lat
expect 0 "PASS" ok ib_read_lat               # its server prints no result row
expect 0 "PASS" ok ib_atomic_bw              # 8 bytes
expect 0 "both sides fail cleanly" ok ibv_xsrq_pingpong

# Each way a pair goes wrong is named.
expect 1 "talks to itself" self ibv_rc_pingpong
expect 1 "talks to itself" self ibv_srq_pingpong
expect 1 "talks to itself" self ib_read_bw
expect 1 "is not the server's local address" swap ibv_uc_pingpong
expect 1 "is not the server's local address" swap ib_write_bw
expect 1 "data check (-c) failed" invalid_data ibv_rc_pingpong
expect 1 "did 99 iterations, expected 100" wrong_iters ibv_srq_pingpong
expect 1 "#bytes 131072, expected 65536" wrong_bytes ib_write_bw
expect 1 "the client failed: killed by signal 6" client_crash ibv_ud_pingpong
expect 1 "the client failed: killed by signal 6" client_crash ib_send_lat
expect 1 "timed out after 2 s" client_hang ib_send_bw --timeout 2
expect 1 "the server is still running 1 s after the client ended (exit status 0): a hang" server_hang ibv_rc_pingpong --grace 1
expect 1 "the server ended (exit status 1) before listening" server_fail ibv_rc_pingpong
expect 1 "the client printed an error: \"Failed to close connection" error_line ib_send_lat
expect 1 "XRC works now" xrc_works ibv_xsrq_pingpong
expect 1 "errno 22" xrc_errno ibv_xsrq_pingpong
expect 1 "killed by signal 6" xrc_crash ibv_xsrq_pingpong

# A port another process listens on is skipped (port + 1000).
n=$((n + 1))
busy=$((port + n))
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(1); print("listening", flush=True); time.sleep(30)' "$busy" > "$workdir/busy.out" &
busy_pid=$!
for _ in $(seq 100); do grep -q listening "$workdir/busy.out" 2>/dev/null && break; sleep 0.05; done
out=$(FAKE_MODE=ok "$run_pair" --lib "$lib" --port "$busy" --workdir "$workdir/$n-busy" ibv_rc_pingpong 2>&1)
rc=$?
kill "$busy_pid" 2>/dev/null; wait "$busy_pid" 2>/dev/null
first=$(head -n1 <<< "$out")
if [[ $rc == 0 && $first == *"PASS"*"(TCP port $((busy + 1000)))"* ]]; then
  echo "ok   busy port $busy: $first"
else
  echo "FAIL busy port $busy: expected a pass on TCP port $((busy + 1000)), got $rc:"
  sed 's/^/     /' <<< "$out"
  failures=$((failures + 1))
fi

echo "$((n - failures)) of $n self-test cases passed"
((failures == 0))
