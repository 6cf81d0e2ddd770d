#!/bin/bash
# #14, second stream: the SGD row's ReLU and FLNPF cells first (the FLNPF-vs-ReLU gap), 300 epochs,
# then the row's other regimes. Runs are locked per directory, so full.sh may run beside it.
set -x
cd /work/snap-t2
export PYTHONPATH=/work/snap-t2/src OMP_NUM_THREADS=1
R=/work/main/outputs/table2-mnist-full
COMMON="out_root=$R data.root=/work/shared/data progress=false threads=1"
python run.py "+experiment=[table2_fc_sgd]" regime=relu $COMMON
python run.py "+experiment=[table2_fc_sgd]" regime=flnpf $COMMON
python run.py -m "+experiment=[table2_fc_sgd]" $COMMON
echo ALLDONE
