#!/usr/bin/env bash
# The main job: install what is needed, build, and run the conformance
# battery (`verbfault conform`, the default battery: a no-fault baseline,
# then every fault kind a correct program survives, 3 seeds each) on the
# bundled sample RDMA application on the simulated device. Writes
#   out/report.html  the report to open in a browser (matrix, timelines)
#   out/report.xml   JUnit XML for CI;  out/report.json  for tools
#   out/report.md    a pull-request comment;  out/runs/  each run's log,
#                    trace and (when it does not conform) replay file
# then runs the same battery on the sample's deliberately buggy variant
# (`sample_rc --buggy`) into out/buggy/, so that a newcomer sees what a
# program that does not conform looks like. Exit status 0 when the sample
# conforms and the buggy variant is caught.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build_dir="${BUILD_DIR:-build}"
verbfault="$build_dir/harness/cli/verbfault"
sample="$build_dir/scenarios/sample_rc/sample_rc"
rm -rf out/report.* out/runs out/buggy
mkdir -p out

echo "== the sample: $sample"
"$verbfault" conform --report out -- "$sample"

echo
echo "== the sample with two bugs: $sample --buggy"
set +e
"$verbfault" conform --report out/buggy -- "$sample" --buggy >out/buggy.log 2>&1
status=$?
set -e
tail -n 2 out/buggy.log
if [ "$status" -ne 1 ]; then
  echo "main.sh: the buggy sample's conformance run exited $status; expected 1 (does not conform)" >&2
  cat out/buggy.log >&2
  exit 1
fi
echo
echo "Open out/report.html (and out/buggy/report.html) in a browser."
