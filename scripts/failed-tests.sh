#!/usr/bin/env bash
# Prints, after a ctest run that failed, each failed test's output again
# (from BUILD_DIR/Testing/Temporary/LastTest.log, the last LINES lines of
# each, default 80), so that the end of a long log, which is what CI
# shows, says why and not only which. Exits 0.
#   failed-tests.sh BUILD_DIR [LINES]
set -uo pipefail
dir=${1:?usage: failed-tests.sh BUILD_DIR [LINES]}
lines=${2:-80}
log="$dir/Testing/Temporary/LastTest.log"
[ -f "$log" ] || exit 0
# A test's block runs from "N/M Testing: NAME" to its "time elapsed" line;
# a failed one says "Test Failed." (or "Test Timeout" ...) at the start of
# a line (anchored: a test's name may hold "Timeout" or "Killed").
awk -v lines="$lines" '
  /^[0-9]+\/[0-9]+ Testing: / { name = $3; n = 0; in_output = 0; status = "" }
  /^<end of output>$/ { in_output = 0; next }
  in_output { out[++n] = $0; next }
  /^Output:$/ { in_output = 1; getline; next }
  /^(Test (Passed|Failed|Timeout)|Exception|Killed|\*\*\*Not Run)/ { if (status == "") status = $0 }
  /" time elapsed: / {
    if (status != "" && status != "Test Passed.") {
      print "==== " name ": " status " (the last " lines " lines of its output)"
      first = n - lines + 1; if (first < 1) first = 1
      for (i = first; i <= n; i++) print out[i]
    }
  }' "$log"
exit 0
