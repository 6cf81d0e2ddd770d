#!/bin/bash
# #14 stream 1 (session 3): the FC Adam row at the paper text's 3e-4, 100 epochs, 5 regimes x 5 seeds stacked.
set -x
cd /work/snap-t2
export PYTHONPATH=/work/snap-t2/src OMP_NUM_THREADS=1
R=/work/main/outputs/table2-mnist-full
COMMON="out_root=$R data.root=/work/shared/data progress=false hydra/launcher=joblib hydra.launcher.n_jobs=1 threads=1"
python run.py -m "+experiment=[table2_fc_adam]" optimizer.lr=3e-4 $COMMON
python run.py -m "+experiment=[table2_fc_adam]" optimizer.lr=3e-4 regime=flnpf $COMMON
echo ALLDONE
