#!/usr/bin/env bash
# Copy the results.json of the final runs (completed or diverged: what the plan counts as done) under each ROOT into
# DEST, keeping their paths (DEST/ROOT/runs/...): runs done elsewhere travel to a bare machine as their results.json,
# which the reports read, so a recipe there trains only what is missing. Interrupted runs are left behind.
# Usage: scripts/stage_done_runs.sh DEST ROOT [ROOT ...]     (device_stage.sh: .stage/runs; device_check.sh restores)
set -euo pipefail
export PYTHONPATH="$(cd "$(dirname "$0")/.." && pwd)/src${PYTHONPATH:+:$PYTHONPATH}"  # the project of this tree
"${PYTHON:-python3}" - "$@" <<'PY'  # the Python given (PYTHON=.venv/bin/python), else python3
import shutil, sys
from pathlib import Path
from gatelab.core.results import finished_results
dest, n = Path(sys.argv[1]), 0
for root in map(Path, sys.argv[2:]):
    for f in sorted(root.rglob("results.json")) if root.is_dir() else []:
        if finished_results(f.parent) is not None:
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dest / f)
            n += 1
print(f"staged {n} final run(s) into {dest}")
PY
