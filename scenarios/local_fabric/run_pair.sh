#!/usr/bin/env bash
# Runs one unmodified Debian client/server verbs program as two processes
# on the simulated device vfsim0, joined in a local fabric, and checks the
# outcome (README.md).
#
#   run_pair.sh [--lib PATH] [--port N] [--timeout S] [--grace S] [--workdir DIR]
#               [--server-env K=V]... [--client-env K=V]... [--expect pass|ended] TEST
#   run_pair.sh --list
#
# The server runs with LD_PRELOAD=<libverbfault.so>,
# VERBFAULT_FABRIC=lf-<TEST>-<pid of this script>, VERBFAULT_PROC=0; once
# it listens on its TCP port, the client (VERBFAULT_PROC=1) connects to
# 127.0.0.1. Both are waited for, up to --timeout seconds (60), then killed;
# once one side has ended, the other gets --grace seconds (10; 5 after a
# failure) to end too, or the pair fails as a hang.
# A passing pair: both exit 0; the two sides' addresses (LID, QPN, PSN)
# cross over (the client's remote address is the server's local one and
# the other way round) and differ (no process talks to itself); the result
# lines are there with the right sizes and counts and positive rates; with
# -c, the pingpong server found the data the client sent. ibv_xsrq_pingpong
# is the exception: XRC is not simulated, so both sides must fail cleanly
# (a message, an exit status 1..127, within a few seconds).
# --server-env/--client-env add variables to one side's environment (a
# fault plan: VERBFAULT_FAULTS=..., VERBFAULT_TRACE=...). With --expect
# ended (a pair under faults) the pair passes when both sides end by
# themselves, neither hangs nor dies of a signal, whatever their exit
# status: the verdict line gives both statuses ("server exit status N,
# client exit status M"), and the caller judges the logs (run_faults.sh).
#
# Exit status: 0 pass, 1 fail (the reason is one line, first, then the end
# of both sides' output), 2 bad usage. Each side's output is kept in
# DIR/server.log and DIR/client.log (default: a fresh temporary folder),
# this script's own stderr in DIR/run_pair.stderr. selftest/ tests it.
set -uo pipefail

me=run_pair

# The tests: name -> program, kind, the arguments both sides get (the
# client gets the server's address after them), the message size and
# iteration count the result lines must show. Kinds: pingpong (the
# libibverbs examples: "N bytes in ..." / "N iters in ..."), perftest_bw,
# perftest_lat (perftest's result table), xrc_fails (ibv_xsrq_pingpong).
tests=(ibv_rc_pingpong ibv_rc_pingpong_events ibv_uc_pingpong ibv_ud_pingpong
       ibv_rc_pingpong_roce ibv_ud_pingpong_roce
       ibv_srq_pingpong ibv_xsrq_pingpong
       ib_send_bw ib_send_lat ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_atomic_bw)

# A *_roce test runs both sides on RoCE v2 ports (VERBFAULT_SIM_PROFILE=roce:
# no LIDs, addressed by GID) with -g 0, the GID index RoCE programs pass;
# both sides must then print a GID, and different ones.
define_test() {
  server_row=1  # perftest: the server prints the result row too
  test_env=(); need_gid=0
  case $1 in
    ibv_rc_pingpong)        prog=ibv_rc_pingpong; kind=pingpong; size=16384; iters=100
                            args=(-d vfsim0 -s "$size" -n "$iters" -c) ;;
    ibv_rc_pingpong_events) prog=ibv_rc_pingpong; kind=pingpong; size=4096; iters=100
                            args=(-d vfsim0 -s "$size" -n "$iters" -c -e) ;;
    ibv_uc_pingpong)        prog=ibv_uc_pingpong; kind=pingpong; size=4096; iters=100
                            args=(-d vfsim0 -s "$size" -n "$iters" -c) ;;
    ibv_ud_pingpong)        prog=ibv_ud_pingpong; kind=pingpong; size=1024; iters=100
                            args=(-d vfsim0 -s "$size" -n "$iters" -c) ;;
    ibv_rc_pingpong_roce)   prog=ibv_rc_pingpong; kind=pingpong; size=16384; iters=100
                            args=(-d vfsim0 -g 0 -s "$size" -n "$iters" -c)
                            test_env=(VERBFAULT_SIM_PROFILE=roce); need_gid=1 ;;
    ibv_ud_pingpong_roce)   prog=ibv_ud_pingpong; kind=pingpong; size=1024; iters=100
                            args=(-d vfsim0 -g 0 -s "$size" -n "$iters" -c)
                            test_env=(VERBFAULT_SIM_PROFILE=roce); need_gid=1 ;;
    ibv_srq_pingpong)       prog=ibv_srq_pingpong; kind=pingpong; size=4096; iters=100
                            args=(-d vfsim0 -s "$size" -n "$iters" -c) ;;  # 16 QPs on one SRQ
    ibv_xsrq_pingpong)      prog=ibv_xsrq_pingpong; kind=xrc_fails; size=0; iters=5
                            args=(-d vfsim0 -n "$iters") ;;  # its -c is the number of clients
    ib_send_bw|ib_write_bw|ib_read_bw)
                            prog=$1; kind=perftest_bw; size=65536; iters=1000
                            args=(-d vfsim0 -F -s "$size" -n "$iters") ;;
    ib_atomic_bw)           prog=$1; kind=perftest_bw; size=8; iters=1000  # always 8 bytes
                            args=(-d vfsim0 -F -n "$iters") ;;
    ib_send_lat|ib_write_lat)
                            prog=$1; kind=perftest_lat; size=2; iters=1000
                            args=(-d vfsim0 -F -s "$size" -n "$iters") ;;
    ib_read_lat)            prog=$1; kind=perftest_lat; size=2; iters=1000; server_row=0
                            args=(-d vfsim0 -F -s "$size" -n "$iters") ;;
    *) return 1 ;;
  esac
}

usage() {
  echo "usage: $0 [--lib PATH] [--port N] [--timeout S] [--grace S] [--workdir DIR] [--server-env K=V]... [--client-env K=V]... [--expect pass|ended] TEST | --list" >&2
  echo "tests: ${tests[*]}" >&2
  exit 2
}

lib=""; port=""; timeout=60; grace_ok=10; workdir=""; name=""; expect=pass
server_env=(); client_env=()
while (($#)); do
  case $1 in
    --lib) lib=${2-}; shift 2 || usage ;;
    --port) port=${2-}; shift 2 || usage ;;
    --timeout) timeout=${2-}; shift 2 || usage ;;
    --grace) grace_ok=${2-}; shift 2 || usage ;;
    --workdir) workdir=${2-}; shift 2 || usage ;;
    --server-env|--client-env)
      [[ ${2-} =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || { echo "$me: $1 '${2-}': expected NAME=VALUE" >&2; exit 2; }
      if [[ $1 == --server-env ]]; then server_env+=("$2"); else client_env+=("$2"); fi
      shift 2 ;;
    --expect)
      [[ ${2-} == pass || ${2-} == ended ]] || { echo "$me: --expect '${2-}': expected pass or ended" >&2; exit 2; }
      expect=$2; shift 2 ;;
    --list) printf '%s\n' "${tests[@]}"; exit 0 ;;
    -h|--help) usage ;;
    -*) echo "$me: unknown option $1" >&2; usage ;;
    *) [[ -z $name ]] || usage; name=$1; shift ;;
  esac
done
[[ -n $name ]] || usage
define_test "$name" || { echo "$me: unknown test '$name'" >&2; usage; }
[[ $timeout =~ ^[1-9][0-9]*$ ]] || { echo "$me: --timeout '$timeout': expected seconds" >&2; exit 2; }
[[ $grace_ok =~ ^[1-9][0-9]*$ ]] || { echo "$me: --grace '$grace_ok': expected seconds" >&2; exit 2; }
if [[ -z $lib ]]; then
  lib=$(cd "$(dirname "$0")/../.." && pwd)/build/harness/libverbfault.so
fi
if [[ -z $port ]]; then
  for i in "${!tests[@]}"; do [[ ${tests[$i]} == "$name" ]] && port=$((18500 + i)); done
fi
[[ $port =~ ^[0-9]+$ ]] && ((port > 0 && port < 65536)) || { echo "$me: --port '$port': expected 1..65535" >&2; exit 2; }
if [[ -z $workdir ]]; then
  workdir=$(mktemp -d "${TMPDIR:-/tmp}/lf-$name.XXXXXX") || exit 1
fi
mkdir -p "$workdir" || exit 1
# Bash reports a side that dies of a signal ("line N: PID Segmentation
# fault ...") on its stderr, wherever it happens to be: the verdict says it
# in its own words, so this script's stderr goes to a file from here on.
exec 2> "$workdir/run_pair.stderr"
fabric="lf-$name-$$"

# ---------------------------------------------------------------- helpers

server_pid=""; client_pid=""; server_rc=""; client_rc=""; server_cmd=""; client_cmd=""
server_log=$workdir/server.log
client_log=$workdir/client.log

status_text() {  # an exit status as people read it
  if [[ -z $1 ]]; then echo "still running: killed"
  elif (($1 > 128)); then echo "killed by signal $(( $1 - 128 )) (SIG$(kill -l $(( $1 - 128 )) 2>/dev/null))"
  else echo "exit status $1"; fi
}

# The verdict: one line first, then the end of each side's output.
fail() {
  echo "$me: $name: FAIL: $*"
  for role in server client; do
    local log=$workdir/$role.log rc_var=${role}_rc cmd_var=${role}_cmd
    [[ -e $log ]] || continue
    echo "--- $role ($(status_text "${!rc_var:-}")): ${!cmd_var}"
    echo "    output ($log), last 25 lines:"
    tail -n 25 "$log" | sed 's/^/    /'
  done
  exit 1
}

now_us() { local t=${EPOCHREALTIME//[.,]/}; echo "${t#0}"; }
t0=$(now_us)
elapsed() { local us=$(( $(now_us) - t0 )); printf '%d.%01d' $((us / 1000000)) $((us % 1000000 / 100000)); }

# Whether a process we started is still running (a zombie is not).
running() {
  local stat
  [[ -n $1 ]] && read -r stat 2>/dev/null < "/proc/$1/stat" || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != Z ]]
}

# Reaps a side that has ended: its exit status in <role>_rc (128+N: signal N).
reap() {
  local role=$1 pid_var=${1}_pid rc_var=${1}_rc
  [[ -n ${!pid_var} && -z ${!rc_var} ]] || return 0
  wait "${!pid_var}"
  printf -v "$rc_var" '%s' "$?"
}

kill_side() {
  local role=$1 pid_var=${1}_pid
  local pid=${!pid_var}
  [[ -n $pid ]] || return 0
  if running "$pid"; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 20); do running "$pid" || break; sleep 0.05; done
    running "$pid" && kill -KILL "$pid" 2>/dev/null
  fi
  reap "$role"
}
trap 'kill_side server; kill_side client' EXIT
trap 'exit 1' INT TERM HUP

# The inodes of the TCP sockets listening on a port (IPv4 and IPv6).
listen_inodes() {
  local hex
  hex=$(printf ':%04X' "$1")
  awk -v p="$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { print $10 }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
# Whether process $1 listens on TCP port $2.
listens() {
  local ino fd
  for ino in $(listen_inodes "$2"); do
    for fd in /proc/"$1"/fd/*; do
      [[ $(readlink "$fd" 2>/dev/null) == "socket:[$ino]" ]] && return 0
    done
  done
  return 1
}

start_side() {  # role member args...
  local role=$1 member=$2
  shift 2
  local -n side_env=${role}_env
  local extra_env=("${test_env[@]}" "${side_env[@]}")
  printf -v "${role}_cmd" 'LD_PRELOAD=%s VERBFAULT_FABRIC=%s VERBFAULT_PROC=%s %s%s' "$preload" "$fabric" "$member" \
    "$( ((${#extra_env[@]})) && printf '%q ' "${extra_env[@]}")" "$*"
  env LD_PRELOAD="$preload" VERBFAULT_FABRIC="$fabric" VERBFAULT_PROC="$member" "${extra_env[@]}" \
    stdbuf -oL -eL "$@" > "$workdir/$role.log" 2>&1 < /dev/null &
  printf -v "${role}_pid" '%s' "$!"
}

# A side's addresses, one line each: "local|remote LID QPN PSN" in
# lowercase hex without 0x or leading zeros. The pingpong examples print
#   "  local address:  LID 0x0001, QPN 0x000011, PSN 0x2b1f4e, GID ::"
# (ud: "PSN 0x...: GID"), perftest
#   " local address: LID 0x01 QPN 0x0011 PSN 0x2d0698 [RKey ... VAddr ...]".
addresses() {
  awk 'function canon(h) { h = tolower(h); sub(/^0x/, "", h); sub(/^0+/, "", h); return h == "" ? "0" : h }
       match($0, /(local|remote) address: +LID (0x)?[0-9a-fA-F]+,? +QPN (0x)?[0-9a-fA-F]+,? +PSN (0x)?[0-9a-fA-F]+/) {
         s = substr($0, RSTART, RLENGTH); gsub(/,/, "", s); n = split(s, f, / +/)
         print f[1], canon(f[4]), canon(f[6]), canon(f[8])
       }' "$1" 2>/dev/null
}
show() { echo "LID 0x$1 QPN 0x$2"; }

# Checks what the two sides printed about their addresses so far: a side
# whose remote address is its own talks to itself; once both have printed
# all of theirs, the client's remote addresses must be the server's local
# ones (LID, QPN, PSN) and the other way round, and no local address may be
# on both sides. Sets `reason` and returns 1 on a violation; sets
# addresses_done=1 (and address_summary) when everything was checked.
addresses_done=0; address_summary=""; reason=""
check_addresses() {
  local role log rl=() rr=() n i a b
  local -A local_of=() remote_of=() count_of=()
  for role in server client; do
    log=$workdir/$role.log
    mapfile -t rl < <(addresses "$log" | awk '$1 == "local" { print $2, $3, $4 }')
    mapfile -t rr < <(addresses "$log" | awk '$1 == "remote" { print $2, $3, $4 }')
    n=${#rl[@]}
    ((n > 0 && ${#rr[@]} >= n)) || continue
    count_of[$role]=$n
    for ((i = 0; i < n; i++)); do
      read -r -a a <<< "${rl[$i]}"; read -r -a b <<< "${rr[$i]}"
      if [[ ${a[0]} == "${b[0]}" && ${a[1]} == "${b[1]}" ]]; then
        reason="the $role talks to itself: the remote address it got ($(show "${b[0]}" "${b[1]}")) is its own local address$( ((n > 1)) && echo " (QP $i of $n)"): both processes' devices have the same address, no fabric joins them"
        return 1
      fi
    done
    local_of[$role]=$(printf '%s\n' "${rl[@]}")
    remote_of[$role]=$(printf '%s\n' "${rr[@]:0:n}")
  done
  [[ -n ${count_of[server]-} && -n ${count_of[client]-} ]] || return 0
  if [[ ${remote_of[client]} != "${local_of[server]}" ]]; then
    reason="the client's remote address ($(head -n1 <<< "${remote_of[client]}")) is not the server's local address ($(head -n1 <<< "${local_of[server]}")) [LID QPN PSN]"
    return 1
  fi
  if [[ ${remote_of[server]} != "${local_of[client]}" ]]; then
    reason="the server's remote address ($(head -n1 <<< "${remote_of[server]}")) is not the client's local address ($(head -n1 <<< "${local_of[client]}")) [LID QPN PSN]"
    return 1
  fi
  local both
  both=$(comm -12 <(cut -d' ' -f1,2 <<< "${local_of[server]}" | sort) <(cut -d' ' -f1,2 <<< "${local_of[client]}" | sort) | head -n1)
  if [[ -n $both ]]; then
    reason="the server and the client have the same local address ($(show $both)): both processes' devices have the same address"
    return 1
  fi
  read -r -a a <<< "$(head -n1 <<< "${local_of[server]}")"; read -r -a b <<< "$(head -n1 <<< "${local_of[client]}")"
  address_summary="server $(show "${a[0]}" "${a[1]}") <-> client $(show "${b[0]}" "${b[1]}")"
  ((count_of[server] > 1)) && address_summary+=" (${count_of[server]} QPs each)"
  addresses_done=1
  return 0
}

positive() { [[ $1 =~ ^[0-9]*\.?[0-9]+$ && $1 =~ [1-9] ]]; }

# The GID a side printed for its local address ("... GID fe80::...", ud:
# "...: GID ..."); empty when none.
local_gid() {
  sed -n 's/.*local address:.*GID \([0-9a-fA-F:.]*\).*/\1/p' "$1" | head -n1
}
# With need_gid: both sides addressed by GID (not "::") and by different ones.
check_gids() {
  ((need_gid)) || return 0
  local s c
  s=$(local_gid "$workdir/server.log"); c=$(local_gid "$workdir/client.log")
  [[ -n $s && $s != "::" ]] || { reason="the server printed no GID for its local address (\"${s:-none}\"): RoCE needs one"; return 1; }
  [[ -n $c && $c != "::" ]] || { reason="the client printed no GID for its local address (\"${c:-none}\"): RoCE needs one"; return 1; }
  [[ $s != "$c" ]] || { reason="both sides have the GID $s: both processes' devices have the same address"; return 1; }
  address_summary+=", GIDs $s <-> $c"
  return 0
}

# The result lines of one side; sets `reason` and returns 1 when wrong,
# sets <role>_result when right.
check_results() {
  local role=$1 log=$workdir/$1.log line
  line=$(grep -m1 -E "invalid data|Couldn't|Failed|Unable|[Ee]rror" "$log")
  if [[ -n $line ]]; then
    if [[ $line == *"invalid data"* ]]; then
      reason="the $role's data check (-c) failed: \"${line}\": the data the client sent did not arrive"
    else
      reason="the $role printed an error: \"$(sed 's/^ *//' <<< "$line")\""
    fi
    return 1
  fi
  case $kind in
    pingpong)
      local b i
      b=$(grep -E '^[0-9]+ bytes in [0-9.]+ seconds = [^ ]+ Mbit/sec$' "$log" | tail -n1)
      i=$(grep -E '^[0-9]+ iters in [0-9.]+ seconds = [^ ]+ usec/iter$' "$log" | tail -n1)
      [[ -n $b && -n $i ]] || { reason="the $role printed no result lines (\"N bytes in S seconds = R Mbit/sec\", \"N iters in S seconds = U usec/iter\")"; return 1; }
      read -r -a b <<< "$b"; read -r -a i <<< "$i"
      local want_bytes=$((size * iters * 2))
      [[ ${i[0]} == "$iters" ]] || { reason="the $role did ${i[0]} iterations, expected $iters"; return 1; }
      [[ ${b[0]} == "$want_bytes" ]] || { reason="the $role moved ${b[0]} bytes, expected $want_bytes (2 x $size x $iters)"; return 1; }
      # "N bytes in S seconds = R Mbit/sec": R is the 7th word.
      positive "${b[6]}" || { reason="the $role's rate is not a positive number: ${b[6]} Mbit/sec"; return 1; }
      positive "${i[6]}" || { reason="the $role's latency is not a positive number: ${i[6]} usec/iter"; return 1; }
      printf -v "${role}_result" '%s bytes, %s iters, %s Mbit/sec, %s usec/iter' "${b[0]}" "${i[0]}" "${b[6]}" "${i[6]}"
      ;;
    perftest_bw|perftest_lat)
      local header row f
      if [[ $kind == perftest_bw ]]; then header='#bytes +#iterations +BW peak'; else header='#bytes +#iterations +t_min'; fi
      if ! grep -qE "$header" "$log"; then
        ((server_row == 0)) && [[ $role == server ]] && return 0
        reason="the $role printed no result table (header \"$header\")"; return 1
      fi
      row=$(awk -v h="$header" '$0 ~ h { after = 1; next } after && /^ *[0-9]+ +[0-9]+ +[0-9.]/ { print; exit }' "$log")
      [[ -n $row ]] || { reason="the $role printed the result header but no result row"; return 1; }
      read -r -a f <<< "$row"
      [[ ${f[0]} == "$size" ]] || { reason="the $role's result row has #bytes ${f[0]}, expected $size: $row"; return 1; }
      [[ ${f[1]} == "$iters" ]] || { reason="the $role's result row has #iterations ${f[1]}, expected $iters: $row"; return 1; }
      if [[ $kind == perftest_bw ]]; then
        positive "${f[3]-}" && positive "${f[4]-}" || { reason="the $role's bandwidth or message rate is not positive: $row"; return 1; }
        printf -v "${role}_result" '%s bytes x %s: BW average %s MB/sec, %s Mpps' "${f[0]}" "${f[1]}" "${f[3]}" "${f[4]}"
      else
        ((${#f[@]} >= 9)) && positive "${f[5]}" &&
          awk -v lo="${f[2]}" -v avg="${f[5]}" -v hi="${f[3]}" 'BEGIN { exit !(lo + 0 <= avg + 0 && avg + 0 <= hi + 0) }' ||
          { reason="the $role's latencies are not sane (t_min <= t_avg <= t_max, t_avg > 0): $row"; return 1; }
        printf -v "${role}_result" '%s bytes x %s: t_avg %s usec, t_typical %s usec' "${f[0]}" "${f[1]}" "${f[5]}" "${f[4]}"
      fi
      ;;
  esac
  return 0
}

# ---------------------------------------------------------------- the run

command -v "$prog" > /dev/null || fail "$prog is not installed (Debian: apt-get install $([[ $prog == ibv_* ]] && echo ibverbs-utils || echo perftest))"
command -v stdbuf > /dev/null || fail "stdbuf (coreutils) is not installed"
[[ -r $lib ]] || fail "no $lib (build libverbfault first, or give --lib)"
# shellcheck source=../preload_line.sh
source "$(dirname "$0")/../preload_line.sh"
preload=$(preload_line "$lib")
# Both sides are programs this project does not build: no leak reports
# from them (preload_line.sh).
export ASAN_OPTIONS="$(foreign_asan_options "$lib")"

# The server, on the first free port of port, port+1000, ...; started again
# on the next one when it could not bind (another run took the port).
listen_wait=10
started=0
for attempt in 0 1 2 3 4; do
  p=$((port + 1000 * attempt))
  ((p < 65536)) || break
  [[ -z $(listen_inodes "$p") ]] || continue
  server_rc=""
  start_side server 0 "$prog" "${args[@]}" -p "$p"
  deadline=$(( $(now_us) + listen_wait * 1000000 ))
  while running "$server_pid" && ! listens "$server_pid" "$p" && (($(now_us) < deadline)); do
    sleep 0.02
  done
  if ! running "$server_pid"; then
    reap server
    grep -q "Couldn't listen to port" "$server_log" && continue
  fi
  started=1
  break
done
((started)) || fail "found no free TCP port among $port, $((port + 1000)), ... $((port + 4000))"
port=$p

if [[ $kind == xrc_fails ]]; then
  # XRC is not simulated: ibv_open_xrcd fails (EOPNOTSUPP or ENOSYS), and
  # each side must say so and exit with a failure status, without hanging
  # or dying of a signal. The client runs whether or not the server got as
  # far as listening.
  limit=10
  check_clean_failure() {
    local role=$1 log=$workdir/$1.log rc_var=${1}_rc msg
    local rc=${!rc_var}
    [[ -n $rc ]] || fail "the $role is still running after $limit s (a hang; expected a clean failure: XRC is not simulated)"
    grep -qx success "$log" && fail "the $role printed \"success\": XRC works now; make this a passing pair"
    ((rc != 0)) || fail "the $role exited 0 (expected a failure: XRC is not simulated)"
    ((rc < 128)) || fail "the $role was $(status_text "$rc") (expected a clean failure with a message)"
    msg=$(grep -v '^ *$' "$log" | tail -n1)
    [[ -n $msg ]] || fail "the $role exited with status $rc without a message"
    [[ $msg == *"connect"* ]] && fail "the $role failed at the TCP connection (\"$msg\"), not at the XRC setup"
    if [[ $msg =~ XRC\ Domain\ ([0-9]+) ]] && [[ ${BASH_REMATCH[1]} != 95 && ${BASH_REMATCH[1]} != 38 ]]; then
      fail "the $role's ibv_open_xrcd failed with errno ${BASH_REMATCH[1]} (\"$msg\"), expected EOPNOTSUPP (95) or ENOSYS (38)"
    fi
    printf -v "${role}_msg" '%s' "$msg"
  }
  start_side client 1 "$prog" "${args[@]}" -p "$port" 127.0.0.1
  deadline=$(( t0 + limit * 1000000 ))
  while { running "$server_pid" || running "$client_pid"; } && (($(now_us) < deadline)); do sleep 0.02; done
  running "$server_pid" || reap server
  running "$client_pid" || reap client
  check_clean_failure server
  check_clean_failure client
  echo "$me: $name: PASS in $(elapsed) s: both sides fail cleanly (XRC is not simulated): server \"$server_msg\" ($(status_text "$server_rc")), client \"$client_msg\" ($(status_text "$client_rc"))"
  exit 0
fi

[[ -n $server_rc ]] && fail "the server ended ($(status_text "$server_rc")) before listening on TCP port $port"
listens "$server_pid" "$port" || fail "the server is not listening on TCP port $port after $listen_wait s"

start_side client 1 "$prog" "${args[@]}" -p "$port" 127.0.0.1

# Wait for both, checking the addresses as soon as they are printed; a side
# that fails leaves the other a few seconds to end on its own; a side that
# succeeds leaves the other --grace seconds to finish.
deadline=$(( t0 + timeout * 1000000 ))
other_deadline=""
while :; do
  running "$server_pid" || reap server
  running "$client_pid" || reap client
  [[ -n $server_rc && -n $client_rc ]] && break
  ((addresses_done)) || check_addresses || fail "$reason"
  if [[ -n $server_rc || -n $client_rc ]]; then
    if [[ -z $other_deadline ]]; then
      grace=$grace_ok
      [[ ${server_rc:-0} != 0 || ${client_rc:-0} != 0 ]] && ((grace > 5)) && grace=5
      other_deadline=$(( $(now_us) + grace * 1000000 ))
    elif (($(now_us) >= other_deadline)); then
      if [[ -n $server_rc ]]; then done_role=server; left=client; else done_role=client; left=server; fi
      done_rc=${done_role}_rc
      fail "the $left is still running $grace s after the $done_role ended ($(status_text "${!done_rc}")): a hang"
    fi
  fi
  if (($(now_us) >= deadline)); then
    fail "timed out after $timeout s: the server is $([[ -n $server_rc ]] && echo ended || echo still running), the client is $([[ -n $client_rc ]] && echo ended || echo still running); both killed"
  fi
  sleep 0.05
done

# A process talking to itself first: it is why the rest goes wrong.
check_addresses || fail "$reason"
if [[ $expect == ended ]]; then
  ((server_rc < 128)) || fail "the server was $(status_text "$server_rc")"
  ((client_rc < 128)) || fail "the client was $(status_text "$client_rc")"
  echo "$me: $name: ENDED in $(elapsed) s (TCP port $port): server $(status_text "$server_rc"), client $(status_text "$client_rc")"
  exit 0
fi
((server_rc == 0)) || fail "the server failed: $(status_text "$server_rc")"
((client_rc == 0)) || fail "the client failed: $(status_text "$client_rc")"
((addresses_done)) || fail "the two sides did not both print their local and remote addresses (\"local address: LID ..., QPN ...\", \"remote address: ...\")"
server_result=""; client_result=""
check_results server || fail "$reason"
check_results client || fail "$reason"
check_gids || fail "$reason"
echo "$me: $name: PASS in $(elapsed) s (TCP port $port): $address_summary; client: ${client_result}$([[ -n $server_result ]] && echo "; server: $server_result")"
