#!/usr/bin/env bash
# Runs one program of a stack above verbs (UCX, Open MPI, libfabric,
# qperf) as two or more processes on the simulated device vfsim0, joined
# in a local fabric, and checks the result line (README.md).
#
#   run_stack.sh [--lib PATH] [--mpi-program PATH] [--ucp-program PATH] [--port N] [--timeout S]
#                [--workdir DIR] [--verbfault CLI] TEST
#   run_stack.sh --list | --list-harness
#
# TEST is ucx_<perftest test>_<size>_<transport>_<profile>, e.g.
# ucx_ucp_put_bw_4k_rc_roce: ucx_perftest -t ucp_put_bw -s 4096 over UCX's
# rc_verbs (with ud_verbs for its wire-up) or ud_verbs alone, on a port of
# the built-in profile ib or roce. UCX is told which device and transports
# to use (UCX_NET_DEVICES=vfsim0:1, UCX_TLS): on one host it would
# otherwise take shared memory. Nothing else is set.
#
# TEST qperf_<test>: `qperf -t 1 <test>` against a qperf server, on the
# profile ib (qperf addresses its peer by LID): every test qperf lists for
# an InfiniBand device. A pass: both started, the client exits 0 and its
# result line has a positive number (and its recv_bw, when it prints
# send_bw); the server, which serves until
# killed, is ended then. qperf frees its PD before the MR on it (rd_close:
# ibv_dealloc_pd, then ibv_dereg_mr), which fails with EBUSY on every
# provider: under --verbfault that resource.destroy_order finding (on pd#0,
# then context#0 at ibv_close_device) is expected of each side and checked,
# and no other.
#
# TEST fi_info_<profile>: `fi_info -p verbs`, one process. A pass: it
# lists vfsim0 as a verbs MSG domain with the RDM endpoint of libfabric's
# RXM layer on it (verbs;ofi_rxm), and vfsim0-dgram as a DGRAM domain with
# the RDM endpoint of its RXD layer (verbs;ofi_rxd).
#
# TEST fi_<endpoint>_pingpong_<profile>: `fi_pingpong -c` (-c checks every
# byte) between two processes, every size from 64 B to 1 MiB: rdm is
# `-p verbs -e rdm` as libfabric picks its layer, addressed by 127.0.0.1;
# msg is `-p verbs -e msg` (a verbs RC connection through the connection
# manager) and rxm `-p "verbs;ofi_rxm" -e rdm` (RXM over such
# connections) and dgram `-p verbs -e dgram` (UD, sizes up to the path
# MTU), addressed by the server's port address 198.18.0.1,
# which the verbs provider finds among the system's interfaces (vfib0,
# vfeth0) and fabtests' control connection reaches over TCP. A pass: both
# exit 0 and the client's row of each size counts the iterations asked
# for, sent and acknowledged, with a positive bandwidth at the largest.
#
# TEST cm_<program>_<profile>: a program of rdmacm-utils between two
# processes through the simulated connection manager: rping (-C 100, every
# ping verified on both sides), ucmatose and udaddy (both sides' transfers
# complete, "return status 0"), rdma_server with rdma_client (each "end
# 0"), rstream and riostream (100 transfers of 4 KiB, riostream's by
# RDMA WRITE into the peer's riomap'ed buffer; the result row on both
# sides), and
# --ucp-program (ucp_sockaddr.c: UCX's client-server connection by socket
# address through its rdmacm connection manager, then tagged messages of
# 8 B, 4 KiB and 1 MiB echoed and checked byte for byte, over rc_verbs;
# ucx_perftest 1.13 has no socket-address mode). The
# client is started once the server's id listens, and addresses it by
# 127.0.0.1 on ib, by 198.18.0.1 (the server's port) on roce, where the
# kernel resolves no route to loopback. ctest labels them rdma_cm too.
#
# TEST mpi_<pml>_np<N>_<profile>: `mpirun -np N` of --mpi-program
# (mpi_pingpong.c: 1 MiB there and back between ranks 0 and 1, then an
# allreduce) with Open MPI's pml ucx (UCX as above), or pml ob1 with the
# openib BTL (btl openib,self; btl_openib_allow_ib 1, as Open MPI 4.1 asks
# on every InfiniBand port: without it openib declines IB devices). Each
# rank gets LD_PRELOAD and VERBFAULT_FABRIC through mpirun -x. A pass:
# mpirun exits 0 and rank 0's line says the bytes came back intact and the
# sum is right.
#
# --verbfault CLI: the same programs under `CLI run --seed 1 --trace
# <workdir>/trace.jsonl` with its default settings (the thread scheduler,
# every check, the hang watchdog): the UCX pair as one run of two commands
# (server ::: client), mpirun as the run's one command (its ranks are the
# run's processes 1..N). A pass also asks the run to exit 0 and to report
# no check's finding. --list-harness names the cases run so in ctest.
#
# The server runs with LD_PRELOAD=<libverbfault.so>,
# VERBFAULT_FABRIC=st-<TEST>-<pid of this script>, VERBFAULT_PROC=0; once
# it listens on its TCP port the client (VERBFAULT_PROC=1) connects to
# 127.0.0.1. A pass: both exit 0 within --timeout seconds (60) and the
# client's "Final:" row shows the iterations asked for and a positive
# message rate or bandwidth, and neither side printed a UCX error or
# warning. Exit status: 0 pass, 1 fail (the reason first, then the end of
# both sides' output), 2 bad usage.
set -uo pipefail

me=run_stack
transports=(rc ud)
profiles=(ib roce)
ucx_tests=(tag_lat tag_bw ucp_put_bw ucp_get ucp_am_bw)
sizes=(8 4k 1m)
# Open MPI: pml, ranks, profile (ob1's openib reaches a RoCE port through
# rdma_cm only, the next issue's).
qperf_tests=(rc_bi_bw rc_bw rc_lat rc_rdma_read_bw rc_rdma_read_lat rc_rdma_write_bw
             rc_rdma_write_lat rc_rdma_write_poll_lat rc_compare_swap_mr rc_fetch_add_mr
             ver_rc_compare_swap ver_rc_fetch_add uc_bi_bw uc_bw uc_lat uc_rdma_write_bw
             uc_rdma_write_lat uc_rdma_write_poll_lat ud_bi_bw ud_bw ud_lat)
fi_tests=(fi_info_ib fi_info_roce fi_rdm_pingpong_ib fi_rdm_pingpong_roce fi_msg_pingpong_ib
          fi_msg_pingpong_roce fi_rxm_pingpong_ib fi_rxm_pingpong_roce fi_dgram_pingpong_ib
          fi_dgram_pingpong_roce)
# librdmacm's own programs (rdmacm-utils), through the simulated
# connection manager (issue 33): cm_<program>_<profile>.
cm_programs=(rping ucmatose udaddy mckey rdma_server rstream riostream ucp_sockaddr)
mpi_tests=(mpi_ucx_np2_ib mpi_ucx_np4_ib mpi_ucx_np2_roce mpi_ucx_np4_roce mpi_ob1_np2_ib
           mpi_ob1_np4_ib)

# The cases ctest also runs under `verbfault run`: every UCX test at 4 KiB
# over both transports on ib, a megabyte and a small message on roce, and
# Open MPI with each pml.
harness_tests=(ucx_tag_lat_4k_rc_ib ucx_tag_lat_4k_ud_ib ucx_tag_bw_4k_rc_ib ucx_tag_bw_4k_ud_ib
               ucx_ucp_put_bw_4k_rc_ib ucx_ucp_put_bw_4k_ud_ib ucx_ucp_get_4k_rc_ib
               ucx_ucp_get_4k_ud_ib ucx_ucp_am_bw_4k_rc_ib ucx_ucp_am_bw_4k_ud_ib
               ucx_ucp_put_bw_1m_rc_roce ucx_tag_lat_8_ud_roce mpi_ucx_np2_ib mpi_ucx_np4_roce
               mpi_ob1_np2_ib qperf_rc_lat qperf_rc_bw qperf_uc_lat qperf_ud_lat
               qperf_rc_rdma_read_lat qperf_rc_fetch_add_mr fi_info_ib fi_rdm_pingpong_ib
               fi_rdm_pingpong_roce fi_msg_pingpong_ib fi_rxm_pingpong_roce fi_dgram_pingpong_roce
               cm_rping_ib cm_rping_roce cm_ucmatose_ib cm_udaddy_roce cm_rdma_server_ib
               cm_rstream_ib cm_riostream_ib cm_ucp_sockaddr_ib cm_mckey_roce)

list_tests() {
  local t s x p
  for t in "${ucx_tests[@]}"; do for s in "${sizes[@]}"; do for x in "${transports[@]}"; do
    for p in "${profiles[@]}"; do echo "ucx_${t}_${s}_${x}_${p}"; done
  done; done; done
  printf '%s\n' "${mpi_tests[@]}"
  printf 'qperf_%s\n' "${qperf_tests[@]}"
  printf '%s\n' "${fi_tests[@]}"
  for t in "${cm_programs[@]}"; do for p in "${profiles[@]}"; do echo "cm_${t}_${p}"; done; done
}

usage() {
  echo "usage: $0 [--lib PATH] [--mpi-program PATH] [--ucp-program PATH] [--port N] [--timeout S] [--workdir DIR] [--verbfault CLI] TEST | --list | --list-harness" >&2
  exit 2
}

lib=""; mpi_program=""; ucp_program=""; port=""; timeout=60; workdir=""; name=""; verbfault=""
while (($#)); do
  case $1 in
    --verbfault) verbfault=${2-}; shift 2 || usage ;;
    --list-harness) printf '%s\n' "${harness_tests[@]}"; exit 0 ;;
    --lib) lib=${2-}; shift 2 || usage ;;
    --mpi-program) mpi_program=${2-}; shift 2 || usage ;;
    --ucp-program) ucp_program=${2-}; shift 2 || usage ;;
    --port) port=${2-}; shift 2 || usage ;;
    --timeout) timeout=${2-}; shift 2 || usage ;;
    --workdir) workdir=${2-}; shift 2 || usage ;;
    --list) list_tests; exit 0 ;;
    -h|--help) usage ;;
    -*) echo "$me: unknown option $1" >&2; usage ;;
    *) [[ -z $name ]] || usage; name=$1; shift ;;
  esac
done
[[ -n $name ]] || usage
# The list whole first: `list_tests | grep -q` would end the list early,
# a SIGPIPE that pipefail turns into "unknown test".
mapfile -t all_tests < <(list_tests)
index=""
for i in "${!all_tests[@]}"; do [[ ${all_tests[$i]} == "$name" ]] && index=$i; done
[[ -n $index ]] || { echo "$me: unknown test '$name' (--list names them)" >&2; exit 2; }
[[ $timeout =~ ^[1-9][0-9]*$ ]] || { echo "$me: --timeout '$timeout': expected seconds" >&2; exit 2; }
[[ -n $lib ]] || lib=$(cd "$(dirname "$0")/../.." && pwd)/build/harness/libverbfault.so
[[ -f $lib ]] || { echo "$me: --lib '$lib': no such file" >&2; exit 2; }
[[ -z $verbfault || -x $verbfault ]] || { echo "$me: --verbfault '$verbfault': not an executable" >&2; exit 2; }
[[ -n $port ]] || port=$((20000 + index))
[[ $port =~ ^[0-9]+$ ]] && ((port > 0 && port < 65536)) || { echo "$me: --port '$port': expected 1..65535" >&2; exit 2; }
[[ -n $workdir ]] || workdir=$(mktemp -d "${TMPDIR:-/tmp}/st-$name.XXXXXX") || exit 1
mkdir -p "$workdir" || exit 1
exec 2> "$workdir/run_stack.stderr"  # a side's death is reported in the verdict's words

# shellcheck source=../preload_line.sh
source "$(dirname "$0")/../preload_line.sh"
# The stacks' programs are not ours: no leak reports from them
# (preload_line.sh).
export ASAN_OPTIONS="$(foreign_asan_options "$lib")"
preload=$(preload_line "$lib")

server_pid=""; client_pid=""; server_rc=""; client_rc=""; mpirun_pid=""; mpirun_rc=""
verbfault_pid=""; verbfault_rc=""
fail() {
  echo "$me: $name: FAIL: $*"
  for role in server client mpirun verbfault; do
    [[ -e $workdir/$role.log ]] || continue
    local rc_var=${role}_rc
    echo "--- $role (exit status ${!rc_var:-none: killed}), last 20 lines of $workdir/$role.log:"
    tail -n 20 "$workdir/$role.log" 2>/dev/null | sed 's/^/    /'
  done
  exit 1
}
running() { [[ -n $1 ]] && kill -0 "$1" 2>/dev/null && ! grep -q '^[^)]*) Z' "/proc/$1/stat" 2>/dev/null; }
stop() {
  local pid=$1
  [[ -n $pid ]] || return 0
  running "$pid" && kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 20); do running "$pid" || return 0; sleep 0.05; done
  kill -KILL "$pid" 2>/dev/null
}
trap 'stop "$server_pid"; stop "$client_pid"; stop "$mpirun_pid"; stop "$verbfault_pid"' EXIT
trap 'exit 1' INT TERM HUP

# Whether process $1 listens on TCP port $2 (/proc/net/tcp{,6}: state 0A).
listens() {
  local hex ino fd
  hex=$(printf ':%04X' "$2")
  for ino in $(awk -v p="$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { print $10 }' \
                 /proc/net/tcp /proc/net/tcp6 2>/dev/null); do
    for fd in /proc/"$1"/fd/*; do
      [[ $(readlink "$fd" 2>/dev/null) == "socket:[$ino]" ]] && return 0
    done
  done
  return 1
}

# Under --verbfault: runs `verbfault run` with the arguments given, its
# output in $workdir/verbfault.log, within the time limit; a pass needs
# exit status 0 and no check's finding (the result line is the caller's).
# Waits until every process in $@ ended, within the caller's $deadline.
await() {
  local pid
  for pid in "$@"; do
    while running "$pid"; do
      ((SECONDS < deadline)) || fail "still running after ${timeout} s: a hang"
      sleep 0.05
    done
  done
}

# Waits until the server $server_pid listens on $port, within $deadline.
await_listening() {
  until listens "$server_pid" "$port"; do
    running "$server_pid" || { wait "$server_pid"; server_rc=$?; fail "the server ended before it listened on port $port"; }
    ((SECONDS < deadline)) || fail "the server did not listen on port $port within ${timeout} s"
    sleep 0.05
  done
}

run_harnessed() {
  local deadline=$((SECONDS + timeout))
  "$verbfault" run --library "$lib" --seed 1 --trace "$workdir/trace.jsonl" "$@" \
    > "$workdir/verbfault.log" 2>&1 < /dev/null &
  verbfault_pid=$!
  await "$verbfault_pid"
  wait "$verbfault_pid"; verbfault_rc=$?
  local finding
  finding=$(grep -E '^verbfault: check ' "$workdir/verbfault.log" |
            grep -m 1 -vE "${allowed_findings:-^$}")
  [[ -z $finding ]] || fail "a finding under verbfault run: $finding"
  # A run with findings ends with verbfault's status for them (121).
  if [[ -n ${allowed_findings:-} ]] && grep -qE "$allowed_findings" "$workdir/verbfault.log"; then
    ((verbfault_rc == 121)) || fail "verbfault run's exit status is $verbfault_rc, not 121 for its findings"
  else
    ((verbfault_rc == 0)) || fail "verbfault run's exit status is $verbfault_rc"
  fi
}

run_ucx() {
  # ucx_<test>_<size>_<transport>_<profile>
  rest=${name#ucx_}
  profile=${rest##*_}; rest=${rest%_*}
  transport=${rest##*_}; rest=${rest%_*}
  size_name=${rest##*_}; test=${rest%_*}
  case $size_name in 8) size=8 ;; 4k) size=4096 ;; 1m) size=1048576 ;; esac
  case $transport in rc) tls=rc_verbs,ud_verbs ;; ud) tls=ud_verbs ;; esac
  # A megabyte a hundred times over UD (segments of the MTU, each acked by
  # UCX) takes a minute: ten do.
  iterations=100
  [[ $size_name == 1m ]] && iterations=10
  env_both=(LD_PRELOAD="$preload" VERBFAULT_FABRIC="st-$name-$$" VERBFAULT_SIM_PROFILE="$profile"
            UCX_NET_DEVICES=vfsim0:1 UCX_TLS="$tls")
  server=(ucx_perftest -p "$port")
  client=(ucx_perftest -p "$port" 127.0.0.1 -t "$test" -s "$size" -n "$iterations")

  if [[ -n $verbfault ]]; then
    # verbfault run starts the client once the server listens, each with
    # its own VERBFAULT_PROC, fabric and trace.
    export VERBFAULT_SIM_PROFILE="$profile" UCX_NET_DEVICES=vfsim0:1 UCX_TLS="$tls"
    run_harnessed -- "${server[@]}" ::: "${client[@]}"
    check_ucx_result "$workdir/verbfault.log" "$workdir/verbfault.log"
    return
  fi
  run_bare_pair
  check_ucx_result "$workdir/client.log" "$workdir/server.log"
}

# Runs the caller's ${server[@]} and, once it listens (on $port, or with
# an rdma_cm id when the caller sets server_ready=await_cm_listening),
# ${client[@]}, each with ${env_both[@]} and its VERBFAULT_PROC (0, 1),
# their output in server.log and client.log: both must exit 0 within
# --timeout.
run_bare_pair() {
  deadline=$((SECONDS + timeout))
  env "${env_both[@]}" VERBFAULT_PROC=0 "${server[@]}" > "$workdir/server.log" 2>&1 < /dev/null &
  server_pid=$!
  "${server_ready:-await_listening}"
  env "${env_both[@]}" VERBFAULT_PROC=1 "${client[@]}" > "$workdir/client.log" 2>&1 < /dev/null &
  client_pid=$!
  await "$server_pid" "$client_pid"
  wait "$server_pid"; server_rc=$?
  wait "$client_pid"; client_rc=$?
  ((server_rc == 0)) || fail "the server's exit status is $server_rc"
  ((client_rc == 0)) || fail "the client's exit status is $client_rc"
}

# The client's result in CLIENT_LOG (and no UCX error in either log).
check_ucx_result() {
  local client_log=$1 server_log=$2 final got_iterations rate
  # "Final:  <iterations>  <latency 50%> <avg> <overall>  <bw avg> <bw overall>  <rate avg> <rate overall>"
  final=$(grep -E '^Final:' "$client_log" | tail -n 1)
  [[ -n $final ]] || fail "the client printed no 'Final:' row"
  read -r _ got_iterations _ _ _ _ bandwidth _ rate <<< "$final"
  [[ $got_iterations == "$iterations" ]] || fail "the client's Final row counts $got_iterations iterations, not $iterations"
  # Something moved: the bandwidth of 8-byte messages rounds to 0.00 MB/s,
  # the message rate of 1 MiB ones that take over a second each (UD puts
  # on roce, about 1 s a MiB) to 0.
  awk -v r="$rate" -v b="$bandwidth" 'BEGIN { exit !(r + 0 > 0 || b + 0 > 0) }' ||
    fail "the client's message rate ('$rate') and bandwidth ('$bandwidth') are not positive"
  if grep -E 'UCX +(ERROR|WARN)' "$server_log" "$client_log" > "$workdir/ucx_errors"; then
    fail "UCX reported: $(head -n 1 "$workdir/ucx_errors")"
  fi
  echo "$me: $name: pass: $final"
}

# mpi_<pml>_np<ranks>_<profile>
run_mpi() {
  local rest=${name#mpi_} pml ranks profile pml_args line
  pml=${rest%%_*}; rest=${rest#*_}
  ranks=${rest%%_*}; ranks=${ranks#np}; profile=${rest#*_}
  [[ -n $mpi_program && -x $mpi_program ]] || fail "--mpi-program '$mpi_program': not an executable (mpi_pingpong, built from mpi_pingpong.c)"
  command -v mpirun > /dev/null || fail "mpirun is not installed (Debian: apt-get install openmpi-bin)"
  case $pml in
    ucx) pml_args=(--mca pml ucx -x UCX_NET_DEVICES=vfsim0:1 -x UCX_TLS=rc_verbs,ud_verbs,self) ;;
    ob1) pml_args=(--mca pml ob1 --mca btl openib,self --mca btl_openib_allow_ib 1
                   --mca btl_openib_warn_no_device_params_found 0) ;;
  esac
  # Under a sanitized libverbfault the ranks run with ASan's runtime, and
  # Open MPI's memory patcher (which the openib BTL's registration cache
  # turns on) then jumps into unmapped code at exit, with or without the
  # harness in the process (seen with the normal libverbfault too); it
  # passes with the patcher off.
  if [[ $pml == ob1 && $preload != "$lib" ]]; then pml_args+=(--mca memory ^patcher); fi
  local log=$workdir/mpirun.log
  if [[ -n $verbfault ]]; then
    # mpirun is the run's one command; its ranks inherit the harness.
    export VERBFAULT_SIM_PROFILE="$profile"
    run_harnessed -- mpirun --allow-run-as-root --oversubscribe -np "$ranks" "${pml_args[@]}" \
      "$mpi_program"
    log=$workdir/verbfault.log
    check_mpi_result "$log" "$ranks"
    return
  fi
  local deadline=$((SECONDS + timeout))
  mpirun --allow-run-as-root --oversubscribe -np "$ranks" -x LD_PRELOAD="$preload" \
    -x VERBFAULT_FABRIC="st-$name-$$" -x VERBFAULT_SIM_PROFILE="$profile" -x ASAN_OPTIONS \
    "${pml_args[@]}" "$mpi_program" > "$workdir/mpirun.log" 2>&1 < /dev/null &
  mpirun_pid=$!
  await "$mpirun_pid"
  wait "$mpirun_pid"; mpirun_rc=$?
  ((mpirun_rc == 0)) || fail "mpirun's exit status is $mpirun_rc"
  check_mpi_result "$log" "$ranks"
}

# Rank 0's line in LOG, for RANKS ranks.
check_mpi_result() {
  local log=$1 ranks=$2 line
  line=$(grep -E '^mpi_pingpong: ' "$log" | tail -n 1)
  [[ -n $line ]] || fail "rank 0 printed no 'mpi_pingpong:' line"
  local sum=$((ranks * (ranks + 1) / 2))
  [[ $line == "mpi_pingpong: $ranks ranks, 1 MiB round trip intact, allreduce $sum (expected $sum)" ]] ||
    fail "rank 0 says: $line"
  echo "$me: $name: pass: $line"
}

# qperf_<test>
run_qperf() {
  local test=${name#qperf_} line number
  command -v qperf > /dev/null || fail "qperf is not installed (Debian: apt-get install qperf)"
  local server=(qperf -lp "$port") client=(qperf -lp "$port" 127.0.0.1 -t 1 "$test")
  local log=$workdir/client.log
  if [[ -n $verbfault ]]; then
    export VERBFAULT_SIM_PROFILE=ib
    # The run ends the server once the client ended (--peer-grace).
    allowed_findings='^verbfault: check resource\.destroy_order on (pd|context)#0 '
    run_harnessed --peer-grace 1 -- "${server[@]}" ::: "${client[@]}"
    log=$workdir/verbfault.log
    local count
    count=$(grep -cE "$allowed_findings" "$log")
    ((count == 4)) || fail "expected qperf's own destroy-order defect on each side (4 findings), found $count"
    # The server serves each client in a child it forks: traced as a
    # process of its own, beside the server's trace, and named.
    [[ -s $workdir/trace.0.fork1.jsonl ]] || fail "the qperf server's child left no trace (trace.0.fork1.jsonl)"
    grep -qF "trace $workdir/trace.0.fork1.jsonl" "$log" || fail "verbfault run does not name the server's child's trace"
  else
    local deadline=$((SECONDS + timeout))
    env LD_PRELOAD="$preload" VERBFAULT_FABRIC="st-$name-$$" VERBFAULT_SIM_PROFILE=ib VERBFAULT_PROC=0 \
      "${server[@]}" > "$workdir/server.log" 2>&1 < /dev/null &
    server_pid=$!
    await_listening
    env LD_PRELOAD="$preload" VERBFAULT_FABRIC="st-$name-$$" VERBFAULT_SIM_PROFILE=ib VERBFAULT_PROC=1 \
      "${client[@]}" > "$log" 2>&1 < /dev/null &
    client_pid=$!
    await "$client_pid"
    wait "$client_pid"; client_rc=$?
    ((client_rc == 0)) || fail "the client's exit status is $client_rc"
  fi
  # "    latency  =  175 us", "    bw  =  1.22 GB/sec", "    msg_rate  =  30.4 K/sec",
  # "    send_bw  =  1.73 GB/sec     recv_bw  =  1.09 GB/sec": the first number.
  line=$(grep -E '^ +(latency|bw|msg_rate|send_bw) +=' "$log" | tail -n 1)
  [[ -n $line ]] || fail "the client printed no result line"
  number=$(awk '{ print $3 }' <<< "$line")
  awk -v n="$number" 'BEGIN { exit !(n + 0 > 0) }' || fail "the client's result is '$line', not positive"
  # The unreliable transports' bandwidth tests say what was received too:
  # a receiver that saw nothing (a CQ whose receives never showed behind
  # its send completions) is no pass.
  if [[ $line =~ send_bw ]]; then
    local received
    received=$(grep -E '^ +recv_bw +=' "$log" | tail -n 1)
    number=$(awk '{ print $3 }' <<< "$received")
    awk -v n="$number" 'BEGIN { exit !(n + 0 > 0) }' ||
      fail "the client's recv_bw is '$(tr -s ' ' <<< "$received")', not positive"
    line+=", $(tr -s ' ' <<< "$received")"
  fi
  echo "$me: $name: pass: $test: $(tr -s ' ' <<< "$line")"
}

# fi_info_<profile>
run_fi_info() {
  local profile=${name#fi_info_} log=$workdir/client.log
  command -v fi_info > /dev/null || fail "fi_info is not installed (Debian: apt-get install libfabric-bin)"
  if [[ -n $verbfault ]]; then
    export VERBFAULT_SIM_PROFILE="$profile"
    run_harnessed -- fi_info -p verbs
    log=$workdir/verbfault.log
  else
    env LD_PRELOAD="$preload" VERBFAULT_SIM_PROFILE="$profile" fi_info -p verbs > "$log" 2>&1 < /dev/null
    client_rc=$?
    ((client_rc == 0)) || fail "fi_info's exit status is $client_rc"
  fi
  # Each entry: "provider: P" then "    fabric: F", "    domain: D",
  # "    version: V", "    type: T", "    protocol: P".
  local entries
  entries=$(awk '/^provider:/ { p = $2 } /^ +domain:/ { d = $2 } /^ +type:/ { print p, d, $2 }' "$log")
  local want
  for want in "verbs vfsim0 FI_EP_MSG" "verbs vfsim0-dgram FI_EP_DGRAM" \
              "verbs;ofi_rxd vfsim0-dgram FI_EP_RDM" "verbs;ofi_rxm vfsim0 FI_EP_RDM"; do
    grep -qxF "$want" <<< "$entries" || fail "fi_info lists no '$want' (provider, domain, type)"
  done
  echo "$me: $name: pass: $(tr '\n' ',' <<< "$entries")"
}

# fi_<endpoint>_pingpong_<profile>
run_fi_pingpong() {
  local profile=${name##*_} endpoint=${name#fi_}
  endpoint=${endpoint%%_*}
  command -v fi_pingpong > /dev/null || fail "fi_pingpong is not installed (Debian: apt-get install libfabric-bin)"
  iterations=100
  local how=(-p verbs -e rdm) address=127.0.0.1
  case $endpoint in
    msg) how=(-p verbs -e msg) address=198.18.0.1 ;;
    rxm) how=(-p "verbs;ofi_rxm" -e rdm) address=198.18.0.1 ;;
    dgram) how=(-p verbs -e dgram) address=198.18.0.1 ;;
  esac
  # A datagram is one packet: sizes up to the path MTU (4 KiB on ib, 1 KiB
  # on roce's 1024-byte MTU).
  local sizes=(64 256 1k 4k 64k 1m) largest=1m
  if [[ $endpoint == dgram ]]; then
    sizes=(64 256 1k) largest=1k
    [[ $profile == ib ]] && sizes+=(4k) largest=4k
  fi
  local server=(fi_pingpong "${how[@]}" -c -I "$iterations" -B "$port")
  local client=(fi_pingpong "${how[@]}" -c -I "$iterations" -P "$port" "$address")
  local log=$workdir/client.log
  if [[ -n $verbfault ]]; then
    export VERBFAULT_SIM_PROFILE="$profile"
    run_harnessed -- "${server[@]}" ::: "${client[@]}"
    log=$workdir/verbfault.log
  else
    local env_both=(LD_PRELOAD="$preload" VERBFAULT_FABRIC="st-$name-$$"
                    VERBFAULT_SIM_PROFILE="$profile")
    run_bare_pair
  fi
  # "bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec", then a row
  # per size: "64  100  =100  12k  0.17s  0.08  844.17  0.00". Under
  # verbfault run both sides print into one log: each size twice.
  local size rows row sent acked bandwidth
  for size in "${sizes[@]}"; do
    rows=$(grep -E "^$size +[0-9]" "$log")
    [[ -n $rows ]] || fail "no row for $size bytes"
    while read -r _ sent acked _ _ bandwidth _; do
      [[ $sent == "$iterations" && $acked == "=$iterations" ]] ||
        fail "the row for $size bytes counts $sent sent and $acked acknowledged, not $iterations"
    done <<< "$rows"
  done
  row=$(grep -E "^$largest +[0-9]" "$log" | tail -n 1)
  read -r _ _ _ _ _ bandwidth _ <<< "$row"
  awk -v r="$bandwidth" 'BEGIN { exit !(r + 0 > 0) }' || fail "the bandwidth at $largest is '$bandwidth', not positive"
  echo "$me: $name: pass: $(tr -s ' ' <<< "$row")"
}

# Waits until the server $server_pid has an rdma_cm id listening, within
# $deadline: the simulated connection manager shows each as a listening
# socket "@verbfault-cm/<pid>/<id>" (sim/cm/listening_socket.h).
await_cm_listening() {
  until grep -q "@verbfault-cm/$server_pid/" /proc/net/unix 2>/dev/null; do
    running "$server_pid" || { wait "$server_pid"; server_rc=$?; fail "the server ended before it listened"; }
    ((SECONDS < deadline)) || fail "the server did not listen within ${timeout} s"
    sleep 0.05
  done
}

# cm_<program>_<profile>: the server, then once it listens the client
# (rdma_server's is rdma_client), on port $port. The client addresses the
# server by 127.0.0.1 on InfiniBand; on RoCE by the server's port address,
# 198.18.0.1: a loopback route has no netdev there, and the kernel's
# rdma_resolve_route fails with ENODEV, as rping prints on rxe.
run_cm() {
  local rest=${name#cm_} program profile address
  profile=${rest##*_}; program=${rest%_*}
  if [[ $program == ucp_sockaddr ]]; then
    [[ -n $ucp_program && -x $ucp_program ]] || fail "--ucp-program '$ucp_program': not an executable (ucp_sockaddr, built from ucp_sockaddr.c)"
  else
    command -v "$program" > /dev/null || fail "$program is not installed (Debian: apt-get install rdmacm-utils)"
  fi
  address=127.0.0.1
  [[ $profile == roce ]] && address=198.18.0.1
  local server client
  case $program in
    rping) server=(rping -s -v -C 100 -p "$port"); client=(rping -c -a "$address" -v -C 100 -p "$port") ;;
    ucmatose) server=(ucmatose -p "$port"); client=(ucmatose -s "$address" -p "$port") ;;
    # udaddy's -p is the port space; its port is 7174, on a fabric of the
    # test's own.
    udaddy) server=(udaddy); client=(udaddy -s "$address") ;;
    # mckey: a receiver joins the group 239.1.1.1 and takes 10 datagrams;
    # the sender joins it too and sends them. The receiver counts as ready
    # once it joined (a full member shows a listening socket).
    mckey) server=(mckey -m 239.1.1.1 -C 10); client=(mckey -m 239.1.1.1 -s -C 10) ;;
    rdma_server) server=(rdma_server -p "$port"); client=(rdma_client -s "$address" -p "$port") ;;
    rstream|riostream) server=("$program" -p "$port" -S 4096 -C 100)
                       client=("$program" -s "$address" -p "$port" -S 4096 -C 100) ;;
    ucp_sockaddr) server=("$ucp_program" "$port"); client=("$ucp_program" "$port" "$address")
                  export UCX_NET_DEVICES=vfsim0:1 UCX_TLS=rc_verbs,ud_verbs ;;
  esac
  local server_log=$workdir/server.log client_log=$workdir/client.log
  if [[ -n $verbfault ]]; then
    export VERBFAULT_SIM_PROFILE="$profile"
    # udaddy's server answers its ten messages with ten unsignaled sends on
    # a send queue of ten (udaddy.c post_sends), as mckey's sender sends
    # its datagrams (mckey.c post_sends): one more and ibv_post_send fails
    # with ENOMEM. The check says so; the program's.
    [[ $program == udaddy || $program == mckey ]] &&
      allowed_findings='^verbfault: check resource\.unsignaled_sends_fill_queue on qp#0 '
    # rping's server destroys the connection's id before its QP
    # (rping_run_server: rdma_destroy_id(child_cm_id), then rping_free_qp),
    # which rdma_destroy_id(3) forbids ("free any associated QP ... before
    # calling this routine"). The check says so; the program's.
    [[ $program == rping ]] &&
      allowed_findings='^verbfault: check cm\.destroy_id_with_qp on cm_id#2 '
    run_harnessed -- "${server[@]}" ::: "${client[@]}"
    server_log=$workdir/verbfault.log client_log=$workdir/verbfault.log
  else
    local env_both=(LD_PRELOAD="$preload" VERBFAULT_FABRIC="st-$name-$$"
                    VERBFAULT_SIM_PROFILE="$profile")
    server_ready=await_cm_listening run_bare_pair
  fi
  # What each program prints when it did what it meant to.
  both_logs() { if [[ $server_log == "$client_log" ]]; then cat "$server_log"; else cat "$server_log" "$client_log"; fi; }
  local n
  case $program in
    rping)
      # Under verbfault run both sides write to one log, and a line of one
      # may break a line of the other: each ping is counted by its number.
      n=$(grep -oP '(?<!server )ping data: rdma-ping-[0-9]+' "$client_log" | sort -u | wc -l)
      ((n == 100)) || fail "the client verified $n pings, not 100"
      n=$(grep -oP 'server ping data: rdma-ping-[0-9]+' "$server_log" | sort -u | wc -l)
      ((n == 100)) || fail "the server verified $n pings, not 100" ;;
    ucmatose|udaddy|mckey)
      n=$(both_logs | grep -c '^return status 0$')
      ((n == 2)) || fail "$n of the two sides said 'return status 0'"
      n=$(both_logs | grep -c '^data transfers complete$')
      ((n == 2)) || fail "$n of the two sides completed their transfers" ;;
    rdma_server)
      grep -q '^rdma_server: end 0$' "$server_log" || fail "rdma_server did not end with 0"
      grep -q '^rdma_client: end 0$' "$client_log" || fail "rdma_client did not end with 0" ;;
    rstream|riostream)
      n=$(both_logs | grep -cE '^custom +4k +100 +1 ')
      ((n == 2)) || fail "$n of the two sides printed the result row of 100 transfers of 4k" ;;
    ucp_sockaddr)
      for n in 8 4096 1048576; do
        grep -q "^ucp_sockaddr: client: 20 messages of $n bytes echoed intact$" "$client_log" ||
          fail "the client did not get 20 messages of $n bytes back intact"
      done
      n=$(both_logs | grep -cE '^ucp_sockaddr: (client|server): done$')
      ((n == 2)) || fail "$n of the two sides ended" ;;
  esac
  echo "$me: $name: pass"
}

case $name in
  cm_*) run_cm ;;
  fi_info_*) run_fi_info ;;
  fi_*_pingpong_*) run_fi_pingpong ;;
  ucx_*) run_ucx ;;
  mpi_*) run_mpi ;;
  qperf_*) run_qperf ;;
esac
