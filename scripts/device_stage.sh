#!/usr/bin/env bash
# Stage what the device check needs on a bare GPU machine (no internet, no Hydra, 64 MiB upload) into
# .stage/ (git-ignored), to carry with the device tool's `run` (carry: [".stage"]):
#   .stage/wheels/  hydra-core, omegaconf, antlr4-python3-runtime 4.9.3 (built from its sdist), the joblib and
#                   submitit launchers with submitit (the image has joblib, cloudpickle, typing-extensions)
#   .stage/data/    mnist.npz (11 MB) and a 10,000/2,000-image CIFAR-10 cut (35 MB; the full file is 178 MB)
#   .stage/runs/    the results.json of the reduced conv recipes' completed runs: the check trains only the rest
#   .stage/code.json  HEAD's commit and its files' blob ids: .git does not travel, so the runs there record this commit
#                   and a clean tree only when their files are HEAD's (gatelab.core.code_stamp; commit first)
# Usage: scripts/device_stage.sh [DATA_ROOT]   (default $GATELAB_DATA)
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"  # the project from this tree, installed or not
DATA=${1:-${GATELAB_DATA:?give the data root holding mnist.npz and cifar10.npz}}
mkdir -p .stage/wheels .stage/data
python -m pip download -q --no-deps --only-binary=:all: -d .stage/wheels "hydra-core>=1.3,<1.4" "omegaconf>=2.3,<2.4" \
  "hydra-joblib-launcher>=1.2" "hydra-submitit-launcher>=1.2" "submitit>=1.5"
[ -n "$(ls .stage/wheels/antlr4_python3_runtime-4.9.3*.whl 2>/dev/null)" ] || \
  python -m pip wheel -q --no-deps -w .stage/wheels "antlr4-python3-runtime==4.9.3"
cp "$DATA/mnist.npz" .stage/data/mnist.npz
python -m gatelab.data.datasets cut cifar10 --root "$DATA" --train 10000 --test 2000 --out .stage/data
rm -rf .stage/runs && scripts/stage_done_runs.sh .stage/runs outputs/table4-conv-reduced outputs/table2-conv-reduced
python -m gatelab.core.code_stamp write .stage/code.json
du -sh .stage
