#!/bin/sh
# A real conformance run for the schema tests: `verbfault conform` of
# sample_rc --buggy, one seed per fault class, the report in DIR.
#
#   conform_sample.sh VERBFAULT SAMPLE_RC DIR
#
# The buggy sample does not conform, so conform must exit 1 (0 would mean
# it found nothing, anything else that it could not run); then the report
# must be there.
[ $# -eq 3 ] || { echo "usage: $0 VERBFAULT SAMPLE_RC DIR" >&2; exit 2; }
verbfault=$1 sample=$2 dir=$3
rm -rf "$dir"
"$verbfault" conform --seeds 1 --jobs 2 --report "$dir" -- "$sample" --buggy
status=$?
if [ $status -ne 1 ]; then
  echo "conform exited $status: expected 1 (sample_rc --buggy does not conform)"
  exit 1
fi
for file in report.json report.xml report.md report.html; do
  [ -s "$dir/$file" ] || { echo "$dir/$file: missing or empty"; exit 1; }
done
echo "conform exited 1, as expected; report in $dir"
