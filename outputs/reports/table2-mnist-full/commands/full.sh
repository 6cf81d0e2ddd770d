#!/bin/bash
# Table 2 FC/MNIST rows (#14) at the paper code's lengths: Adam 100 epochs at 1e-4 (code) and 3e-4
# (paper text), SGD 0.01 300 epochs; 5 regimes x 5 seeds, stacked seeds, 2 jobs at a time.
# Resumable: rerunning this script continues every run from its ckpt/last.pt.
set -x
cd /work/snap-t2
export PYTHONPATH=/work/snap-t2/src OMP_NUM_THREADS=1
R=/work/main/outputs/table2-mnist-full
COMMON="out_root=$R data.root=/work/shared/data progress=false hydra/launcher=joblib hydra.launcher.n_jobs=${T2_JOBS:-2} threads=1"
for spec in "table2_fc_adam optimizer.lr=1e-4" "table2_fc_adam optimizer.lr=3e-4" "table2_fc_sgd"; do
  set -- $spec; exp=$1; shift
  python run.py -m "+experiment=[$exp]" $COMMON "$@"
  python run.py -m "+experiment=[$exp]" regime=flnpf $COMMON "$@"
done
echo ALLDONE
