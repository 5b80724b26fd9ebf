#!/usr/bin/env bash
# Regenerates the committed provider reports (reports/providers/): vfsim0
# here, rxe0 inside a throw-away VM with Soft-RoCE (testing/vm/vm-run.sh:
# qemu-system-x86, busybox-static, cpio and kmod, and Debian's kernel it
# downloads), then the side-by-side README.md. Build first
# (scripts/build.sh). Review the diff: a changed verdict is a changed
# device.
set -euo pipefail
cd "$(dirname "$0")/../.."
verbfault=build/harness/cli/verbfault
out=reports/providers
mkdir -p "$out"
"$verbfault" provider-report --device vfsim0 --report "$out"
testing/vm/vm-run.sh --provider rxe --quiet --timeout 480 --share "$PWD" --cwd "$PWD" \
  --libs-of "$verbfault" --libs-of build/harness/libverbfault.so \
  --libs-of build/reports/provider/verbfault-provider-probe \
  -- "$verbfault" provider-report --device rxe0 --report "$out"
mv "$out/provider-vfsim0.json" "$out/vfsim0.json"
mv "$out/provider-rxe0.json" "$out/rxe0.json"
rm -f "$out/provider-vfsim0.md" "$out/provider-rxe0.md"
{
  "$verbfault" provider-report --compare "$out/vfsim0.json" "$out/rxe0.json"
  cat <<'TEXT'

## Regenerating

`reports/provider/regenerate.sh` (after `scripts/build.sh`) runs
`verbfault provider-report --device vfsim0` here and `--device rxe0` inside
a throw-away VM with Soft-RoCE (`testing/vm/vm-run.sh`: qemu-system-x86,
busybox-static, cpio, kmod, Debian's kernel), then writes this page
with `--compare`. `ctest -R provider_report` holds fresh runs against
`vfsim0.json` and `rxe0.json` (verdicts and values) and names every check
that changed; the schema is `reports/schema/provider-report.schema.json`.
TEXT
} > "$out/README.md"
