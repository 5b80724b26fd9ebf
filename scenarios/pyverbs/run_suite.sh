#!/usr/bin/env bash
# rdma-core's own test suite (Debian's python3-pyverbs ships it in
# /usr/share/doc/rdma-core/tests, some files gzipped) against a simulated
# device, under LD_PRELOAD, with Debian's python3.
#
#   run_suite.sh --lib LIB --dev vfsim0 --skips FILE [--min-ok N] [--workdir DIR]
#
# Passes when no test fails or errors, at least N pass, and every skip's
# reason matches a line of FILE (extended regexes; `#` starts a comment):
# a skip for a reason nobody listed is a failure, so a feature that stops
# working cannot hide as a skip. The environment (VERBFAULT_SIM_PROFILE ...)
# is passed through. The tests' own log is kept in the work directory.
set -euo pipefail

lib="" dev="vfsim0" skips="" min_ok=0 workdir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --lib) lib="$2"; shift 2 ;;
    --dev) dev="$2"; shift 2 ;;
    --skips) skips="$2"; shift 2 ;;
    --min-ok) min_ok="$2"; shift 2 ;;
    --workdir) workdir="$2"; shift 2 ;;
    *) echo "run_suite.sh: unknown option '$1' (expected --lib, --dev, --skips, --min-ok, --workdir)" >&2; exit 2 ;;
  esac
done
[ -n "$lib" ] && [ -f "$lib" ] || { echo "run_suite.sh: --lib '$lib': expected the path of libverbfault.so" >&2; exit 2; }
[ -n "$skips" ] && [ -f "$skips" ] || { echo "run_suite.sh: --skips '$skips': expected the file of allowed skip reasons" >&2; exit 2; }
lib=$(realpath "$lib")  # the tests run from their own directory
# shellcheck source=../preload_line.sh
source "$(dirname "$0")/../preload_line.sh"
preload=$(preload_line "$lib")
# python3 is not built here: no leak reports from it (preload_line.sh).
export ASAN_OPTIONS="$(foreign_asan_options "$lib")"

python=/usr/bin/python3
source_dir=/usr/share/doc/rdma-core/tests
if [ ! -f "$source_dir/run_tests.py" ] || ! "$python" -c 'import pyverbs' 2>/dev/null; then
  echo "run_suite.sh: rdma-core's tests are not installed (apt-get install python3-pyverbs)" >&2
  exit 77  # ctest: skipped, not passed
fi

# A fabric of the suite's own: the rdmacm tests fork an active and a
# passive side, which meet on it (each joins as a member of its own).
export VERBFAULT_FABRIC="${VERBFAULT_FABRIC:-pyverbs-$$}"

workdir="${workdir:-$(mktemp -d)}"
rm -rf "$workdir/tests"
mkdir -p "$workdir"
cp -r "$source_dir" "$workdir/tests"
gunzip -f "$workdir"/tests/*.gz
log="$workdir/pyverbs.log"
status=0
(cd "$workdir/tests" && LD_PRELOAD="$preload" timeout 600 "$python" run_tests.py --dev "$dev" -v) \
  >"$log" 2>&1 || status=$?

ok=$(grep -cE '\.\.\. ok$' "$log" || true)
failed=$(grep -E '\.\.\. (FAIL|ERROR)$' "$log" || true)
ran=$(grep -E '^Ran [0-9]+ tests' "$log" || true)
echo "run_suite.sh: $dev: ${ran:-no summary}; ok $ok; log $log"
if [ -z "$ran" ]; then
  echo "run_suite.sh: the suite did not finish (exit $status); its last lines:" >&2
  tail -20 "$log" >&2
  exit 1
fi

verdict=0
if [ -n "$failed" ]; then
  echo "run_suite.sh: failing tests:" >&2
  echo "$failed" >&2
  grep -E '^(FAIL|ERROR): |Error: ' "$log" | head -20 >&2
  verdict=1
fi
if [ "$ok" -lt "$min_ok" ]; then
  echo "run_suite.sh: $ok tests passed, expected at least $min_ok" >&2
  verdict=1
fi

# Every skip reason, counted; each must match an allowed pattern.
patterns=$(grep -vE '^\s*(#|$)' "$skips")
grep -oE "\.\.\. skipped .*" "$log" | sed -E "s/^\.\.\. skipped //" | sort | uniq -c | sort -rn \
  >"$workdir/skips.txt" || true
while read -r count reason; do
  [ -n "$reason" ] || continue
  if ! grep -qE -f <(echo "$patterns") <<<"$reason"; then
    echo "run_suite.sh: $count test(s) skipped for a reason not in $skips: $reason" >&2
    verdict=1
  fi
done <"$workdir/skips.txt"
echo "run_suite.sh: skips by reason:"
cat "$workdir/skips.txt"
exit $verdict
