#!/usr/bin/env bash
# Confirmation runs on a lent GPU machine (issue #55): targets that only a GPU trains at their scale (exp6 about 3 min,
# table4 about 11 min on an H100), on their held-out seeds, all under LIMIT seconds, from the staged copy.
#   Here first: commit, then scripts/device_stage.sh <data root> (.stage/code.json gives the runs their commit: .git
#   does not travel). There (device tool, carry [".stage"]):  LIMIT=240 bash scripts/device_confirm.sh exp6
# Every final run's results.json comes back packed (confirm --carry) in $OUT/carried.tgz; a run the limit cut is
# lost (no checkpoint travels). Here again: tar -xzf carried.tgz -C outputs/reports/confirm/.carried, commit it, and
# `python -m gatelab confirm exp6` from a worktree at the stamped commit trains what is left and renders the report.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/device-out}; STAGE=${STAGE:-.stage}; LIMIT=${LIMIT:-240}
[ $# -gt 0 ] || { echo "usage: LIMIT=<s> bash scripts/device_confirm.sh TARGET ..." >&2; exit 2; }
mkdir -p "$OUT"; rm -f "$OUT/carried.tgz"; LOG="$OUT/device_confirm.log"; : > "$LOG"; T0=$(mktemp)  # newer: from here
. scripts/device_env.sh
# no stamp, or files that are not the stamped commit's: runs started now could not count, so none starts
python -m gatelab.core.code_stamp check 2>&1 | tee -a "$LOG" || { echo "stopped: the code stamp does not hold" | tee -a "$LOG"; exit 1; }
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available() and torch.cuda.get_device_name())" >> "$LOG" 2>&1
t0=$(date +%s); timeout -k 30 "$LIMIT" python -m gatelab confirm "$@" --data "$GATELAB_DATA" >> "$LOG" 2>&1
echo "== confirm $*: rc=$?, $(( $(date +%s) - t0 ))s (limit ${LIMIT}s)" | tee -a "$LOG"
python -m gatelab confirm "$@" --carry 2>&1 | tee -a "$LOG"
[ -d outputs/reports/confirm/.carried ] && (cd outputs/reports/confirm/.carried && find . -type f -newer "$T0" -print0 \
  | tar -czf "$OUT/carried.tgz" --null -T -)  # the runs packed here, not the carried ones that travelled
ls -la "$OUT" | tee -a "$LOG"
