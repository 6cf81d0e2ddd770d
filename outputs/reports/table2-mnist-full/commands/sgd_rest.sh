#!/bin/bash
# #14 stream 2 (session 3): SGD 0.01 FRNPF-II to the code's 300 epochs (the third 300-epoch length check,
# after ReLU and FLNPF), then FRNPF-DI and DLNPF at 100 epochs: at 300 epochs ReLU, FLNPF and FRNPF-II
# (to epoch 107) reach their best test accuracy by epoch 12-134 and their seed mean within 0.05 by 25-29.
set -x
cd /work/snap-t2
export PYTHONPATH=/work/snap-t2/src OMP_NUM_THREADS=1
R=/work/main/outputs/table2-mnist-full
COMMON="out_root=$R data.root=/work/shared/data progress=false threads=1"
python run.py "+experiment=[table2_fc_sgd]" regime=frnpf_ii $COMMON
python run.py -m "+experiment=[table2_fc_sgd]" regime=frnpf_di,dlnpf epochs=100 hydra/launcher=joblib hydra.launcher.n_jobs=1 $COMMON
echo ALLDONE
