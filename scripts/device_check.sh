#!/usr/bin/env bash
# One prepared GPU check (issue: GPU training loop), for the device tool's `run`. Ends within about
# 8 minutes on one H100/H200: each step has its own timeout, and whatever finished is in $OUT.
#   Data: CIFAR-10 staged as ../shared/data/README.md says, in $GATELAB_DATA (default /tmp/d);
#   Hydra wheels in .whl/ (hydra-core, omegaconf, antlr4-python3-runtime 4.9.3), carried with the call.
# Steps:
#   1. `python run.py device=cuda` end to end on full CIFAR-10 (GCONV, 3 epochs): placement on real hardware;
#   2. seconds per epoch per seed, single vs seed-stacked (S=5), fp32 (scripts/bench.py --quick);
#   3. per-epoch test accuracy of GCONV and VCONV, relu and dlnpf, eager fp32 (3 epochs each);
#   4. paper 003: seconds per epoch of a routing net at paper scale (MNIST perm/perm M=40, h=128,
#      batch 8, 10 seeds stacked) on 6000 images, for the GPU-hour cost of `make routing-paper`
#      (needs mnist.npz in $GATELAB_DATA too: 11 MB).
set -uo pipefail
OUT=${OUT:-/tmp/out}; DATA=${GATELAB_DATA:-/tmp/d}; mkdir -p "$OUT"
step() { local name=$1 limit=$2; shift 2; echo "== $name (limit ${limit}s)" | tee -a "$OUT/device_check.log"
  local t0=$(date +%s); timeout "$limit" "$@" >> "$OUT/device_check.log" 2>&1; local rc=$?
  echo "== $name: rc=$rc, $(( $(date +%s) - t0 ))s" | tee -a "$OUT/device_check.log"; }
[ -d .whl ] && pip install -q --no-index --find-links .whl hydra-core omegaconf >> "$OUT/device_check.log" 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >> "$OUT/device_check.log" 2>&1
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name())" \
  >> "$OUT/device_check.log" 2>&1
common="progress=false data.root=$DATA out_root=$OUT/runs dataset=cifar10"
step "1 run.py device=cuda gconv relu" 150 python run.py device=cuda arch=gconv regime=relu epochs=3 $common
step "2 bench fp32 (single vs S=5)" 150 python scripts/bench.py --device cuda --quick
for arch in gconv vconv; do for regime in relu dlnpf; do
  step "3 $arch $regime eager fp32" 60 python run.py device=cuda arch=$arch regime=$regime epochs=3 $common
done; done
step "4 routing paper scale, 6000 images, S=10" 120 python run.py device=cuda +experiment=routing_paper \
  dataset.limit_train=6000 dataset.limit_test=1000 dataset.routing.K=20 epochs=2 progress=false data.root=$DATA out_root=$OUT/runs
python - "$OUT" <<'PY' >> "$OUT/device_check.md" 2>&1
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
print("| run | device | seconds per epoch | test accuracy per epoch |\n|---|---|---|---|")
for p in sorted((out / "runs").rglob("results.json")):
    r = json.loads(p.read_text())
    h = r.get("history", [])
    secs = ", ".join(str(e["seconds"]) for e in h)
    accs = ", ".join(f"{e['test_acc']:.4f}" for e in h if e["test_acc"] is not None)
    print(f"| {p.parent.relative_to(out / 'runs')} | {r.get('env', {}).get('device_name')} | {secs} | {accs} |")
PY
grep -E "^(case|fc/|gconv/|speed-up|device:)" "$OUT/device_check.log" >> "$OUT/device_check.md"
rm -rf "$OUT/runs"  # checkpoints are large; the table above holds what matters
cat "$OUT/device_check.md"
