#!/bin/sh
# Validates JUnit XML files against reports/schema/junit.xsd with xmllint.
#
#   check_junit_xsd.sh XSD FILE... [--expect-invalid FILE...]
#
# Each FILE before --expect-invalid must be valid, each after it must not
# be (so that a schema that accepts anything cannot pass). Exit 0 when all
# is as expected, 1 when not, 77 without xmllint (libxml2-utils; ctest:
# skipped).
command -v xmllint >/dev/null 2>&1 || {
  echo "skipped: no xmllint (apt-get install libxml2-utils)"
  exit 77
}
[ $# -ge 2 ] || { echo "usage: $0 XSD FILE... [--expect-invalid FILE...]" >&2; exit 2; }
xsd=$1
shift
xmllint --noout "$xsd" || { echo "$xsd: not well-formed"; exit 1; }
status=0
expect=valid
for file in "$@"; do
  if [ "$file" = --expect-invalid ]; then
    expect=invalid
    continue
  fi
  [ -f "$file" ] || { echo "$file: no such file"; status=1; continue; }
  if output=$(xmllint --noout --schema "$xsd" "$file" 2>&1); then
    if [ $expect = valid ]; then
      echo "$file: valid"
    else
      echo "$file: valid, but it must not be"
      status=1
    fi
  else
    if [ $expect = valid ]; then
      echo "$output"
      status=1
    else
      echo "$file: invalid, as expected: $(echo "$output" | head -n 1)"
    fi
  fi
done
exit $status
