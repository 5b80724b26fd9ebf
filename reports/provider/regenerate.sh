#!/usr/bin/env bash
# Regenerates the committed provider reports (reports/providers/): vfsim0
# here, rxe0 and siw0 inside throw-away VMs with Soft-RoCE and Soft-iWARP
# (testing/vm/vm-run.sh: qemu-system-x86, busybox-static, cpio and kmod,
# and Debian's kernel it downloads), then the side-by-side README.md. Build first
# (scripts/build.sh). Review the diff: a changed verdict is a changed
# device.
set -euo pipefail
cd "$(dirname "$0")/../.."
verbfault=build/harness/cli/verbfault
out=reports/providers
mkdir -p "$out"
"$verbfault" provider-report --device vfsim0 --report "$out"
for provider in rxe siw; do
  testing/vm/vm-run.sh --provider "$provider" --quiet --timeout 480 --share "$PWD" --cwd "$PWD" \
    --libs-of "$verbfault" --libs-of build/harness/libverbfault.so \
    --libs-of build/reports/provider/verbfault-provider-probe \
    -- "$verbfault" provider-report --device "${provider}0" --report "$out"
done
for device in vfsim0 rxe0 siw0; do
  mv "$out/provider-$device.json" "$out/$device.json"
  rm -f "$out/provider-$device.md"
done
{
  "$verbfault" provider-report --compare "$out/vfsim0.json" "$out/rxe0.json" "$out/siw0.json"
  cat <<'TEXT'

## Regenerating

`reports/provider/regenerate.sh` (after `scripts/build.sh`) runs
`verbfault provider-report --device vfsim0` here, and `--device rxe0` and
`--device siw0` inside throw-away VMs with Soft-RoCE and Soft-iWARP
(`testing/vm/vm-run.sh`: qemu-system-x86, busybox-static, cpio, kmod,
Debian's kernel; siw.ko built from Debian's linux-source, which Debian's
kernels leave it out of), then writes this page with `--compare`. siw's
QPs connect through the rdma_cm (an iWARP QP reaches RTS only over a
connection a peer accepted), so the checks that need a peer that never
answers are inconclusive there. `ctest -R provider_report` holds fresh runs against
`vfsim0.json`, `rxe0.json` and `siw0.json` (verdicts and values) and names every check
that changed; the schema is `reports/schema/provider-report.schema.json`.
TEXT
} > "$out/README.md"
