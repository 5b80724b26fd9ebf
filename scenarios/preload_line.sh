# Sourced by the scripts that preload libverbfault.so themselves
# (local_fabric/run_pair.sh, run_faults.sh, pyverbs/run_suite.sh).
#
# preload_line LIB: the value of LD_PRELOAD for LIB. A LIB built with
# AddressSanitizer (VERBFAULT_SANITIZE, cmake/Sanitizers.cmake) needs ASan's
# runtime to be the first library of the process ("ASan runtime does not
# come first in initial library list"), which in a program built without it
# (ibv_rc_pingpong, python3) it is only when preloaded first: the runtime
# LIB links, as ld.so resolves it (ldd(1)), goes first then.
#
# foreign_asan_options LIB: the ASAN_OPTIONS for a program this project does
# not build (python3, perftest, ibverbs-utils) under preload_line LIB: with
# a sanitized LIB, LeakSanitizer off. Those programs leak by themselves at
# exit (python3 236 KB in 228 objects for `import pyverbs.device`, ib_write_bw
# -h a strdup) and are not ours to fix; the library's own leaks are checked
# in the programs the project builds, which run the same code (sample_rc,
# verbs_pair, the tests).
preload_line() {
  local runtime
  runtime=$(ldd "$1" 2>/dev/null | awk '$1 ~ /^libasan\.so/ && $3 ~ /^\// { print $3; exit }')
  if [[ -n $runtime ]]; then
    printf '%s:%s\n' "$runtime" "$1"
  else
    printf '%s\n' "$1"
  fi
}

foreign_asan_options() {
  if [[ $(preload_line "$1") != "$1" ]]; then
    printf '%s\n' "${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  else
    printf '%s\n' "${ASAN_OPTIONS-}"
  fi
}
