# gatelab Make targets. Data: DATA=<dir> (default $GATELAB_DATA, else ../shared/data when it exists).
# Sweeps: JOBS=N runs N jobs at once on this machine (joblib, 1 CPU thread each); EPOCHS=N and
# SEEDS=0,1 override the paper's settings (the report records the scale it was made at); BATCH=1
# (default) trains the seeds of a cell together in one process (seeds=[...]), BATCH=0 one per seed.
PYTHON ?= python
DATA ?= $(or $(GATELAB_DATA),$(wildcard ../shared/data))
JOBS ?= 1
EPOCHS ?=
SEEDS ?=
BATCH ?= 1
ALL_SEEDS := 0,1,2,3,4

DATA_ARG = $(if $(DATA),data.root=$(abspath $(DATA)),)
LAUNCH = $(if $(filter-out 1,$(JOBS)),hydra/launcher=joblib hydra.launcher.n_jobs=$(JOBS) threads=1,)
SEED_ARGS = $(if $(filter 1,$(BATCH)),seeds=[$(or $(SEEDS),$(ALL_SEEDS))] seed=0,$(if $(SEEDS),seed=$(SEEDS)))
RUN_ARGS = progress=false $(DATA_ARG) $(LAUNCH) $(if $(EPOCHS),epochs=$(EPOCHS)) $(SEED_ARGS)
T2_ROOT = outputs/table2$(if $(EPOCHS),-$(EPOCHS)ep)
CMD = make $(MAKECMDGOALS)$(if $(EPOCHS), EPOCHS=$(EPOCHS))$(if $(SEEDS), SEEDS=$(SEEDS))$(if $(filter-out 1,$(JOBS)), JOBS=$(JOBS))

TABLE2_ROWS = fc_sgd fc_adam vconv_sgd vconv_adam gconv_sgd gconv_adam
# Reduced scale for a 2-core CPU (table2-quick): few epochs, first examples only, 2 seeds, one SGD step.
QUICK_FC = epochs=3 dataset.limit_train=10000 dataset.limit_test=2000
QUICK_CONV = epochs=2 dataset.limit_train=1000 dataset.limit_test=500
quick_args = $(if $(findstring fc_,$(1)),$(QUICK_FC) $(if $(findstring sgd,$(1)),optimizer.lr=0.1),$(QUICK_CONV) $(if $(findstring sgd,$(1)),optimizer.lr=0.01))

# One Table 2 row: every regime but FLNPF, then FLNPF from the ReLU run of the same step size and seed.
# $(1) row, $(2) out_root, $(3) extra overrides
define table2_row
	$(PYTHON) run.py -m +experiment=table2_$(1) regime=relu,frnpf_ii,frnpf_di,dlnpf out_root=$(2) $(RUN_ARGS) $(3)
	$(PYTHON) run.py -m +experiment=table2_$(1) regime=flnpf regime.source=auto out_root=$(2) $(RUN_ARGS) $(3)

endef

FIG_SCALE ?= quick
T4_ROOT = outputs/table4$(if $(EPOCHS),-$(EPOCHS)ep)
T4_BETAS = 1,2,4,8,12,16,20,24
# Reduced Table 4 for a 2-core CPU: first 640/500 examples, 2 epochs, 2 seeds (about 13 min with JOBS=2).
QUICK_T4 = epochs=2 dataset.limit_train=640 dataset.limit_test=500

# Table 4: DLN and ReLU, then soft-ReLU over beta x eps. $(1) out_root, $(2) extra overrides
define table4_runs
	$(PYTHON) run.py -m +experiment=table4 regime=dln,relu out_root=$(1) $(RUN_ARGS) $(2)
	$(PYTHON) run.py -m +experiment=table4 regime=soft_relu regime.beta=$(T4_BETAS) regime.eps=0.1,0.4 out_root=$(1) $(RUN_ARGS) $(2)
endef

.PHONY: help install test run table2 table2-mnist table2-quick report figure3 bench table4 table4-quick dgn-figures exp6

help:
	@echo "make install        pip install -e .[dev]"
	@echo "make test           the test suite (CPU, tiny generated data)"
	@echo "make run            python run.py (MNIST / FC / ReLU / Adam, 10 epochs)"
	@echo "make table2         Table 2 of paper 001: 6 rows x 5 regimes x 5 seeds (SGD: 3 step sizes), paper epochs"
	@echo "make table2-mnist   its two FC/MNIST rows"
	@echo "make table2-quick   all rows at reduced scale (2-core CPU, under 30 min)"
	@echo "make table4         Table 4 of paper 002: DLN, ReLU, soft-ReLU beta x eps, 5 seeds (CIFAR-10)"
	@echo "make table4-quick   the same at reduced scale (2-core CPU)"
	@echo "make figure3        Figure 3 equivalents (FIG_SCALE=quick|paper) -> outputs/reports/figure3"
	@echo "make dgn-figures    paper 002 Figures 1-4 (Gram spectra, convergence vs depth) and 7-8 (FIG_SCALE)"
	@echo "make exp6           paper 002 experiment 6: train only the gates of a CIFAR-10 conv net"
	@echo "make bench          seconds per epoch per seed: single-run vs seed-batched path"
	@echo "make report         re-render outputs/reports/table2 from outputs/table2"

install:
	$(PYTHON) -m pip install -e ".[dev]"

test:
	$(PYTHON) -m pytest -q tests

run:
	$(PYTHON) run.py $(DATA_ARG)

table2:
	$(foreach row,$(TABLE2_ROWS),$(call table2_row,$(row),$(T2_ROOT),))
	$(PYTHON) -m gatelab.report table2 --runs $(T2_ROOT) --out outputs/reports/table2 --command "$(CMD)"

table2-mnist:
	$(foreach row,fc_sgd fc_adam,$(call table2_row,$(row),$(T2_ROOT),))
	$(PYTHON) -m gatelab.report table2 --runs $(T2_ROOT) --arch fc --out outputs/reports/table2-mnist --command "$(CMD)"

table2-quick: SEEDS = 0,1
table2-quick:
	$(foreach row,$(TABLE2_ROWS),$(call table2_row,$(row),outputs/table2-quick,$(call quick_args,$(row))))
	$(PYTHON) -m gatelab.report table2 --runs outputs/table2-quick --out outputs/reports/table2-quick --seeds 2 --command "$(CMD) (reduced: FC $(QUICK_FC); conv $(QUICK_CONV))"

table4:
	$(call table4_runs,$(T4_ROOT),)
	$(PYTHON) -m gatelab.report table4 --runs $(T4_ROOT) --out outputs/reports/table4 --command "$(CMD)"

table4-quick: SEEDS = 0,1
table4-quick:
	$(call table4_runs,outputs/table4-quick,$(QUICK_T4))
	$(PYTHON) -m gatelab.report table4 --runs outputs/table4-quick --out outputs/reports/table4-quick --seeds 2 --command "$(CMD) (reduced: $(QUICK_T4))"

dgn-figures:
	$(PYTHON) -m gatelab.figures dgn --scale $(FIG_SCALE) --out outputs/reports/dgn-figures
	$(PYTHON) -m gatelab.figures dgn7 --scale $(FIG_SCALE) --runs outputs/dgn7-$(FIG_SCALE) --out outputs/reports/dgn-figures $(DATA_ARG)

# Paper 002 experiment 6: only the gates of the CIFAR-10 conv net train (published: 56% test).
EXP6_EPOCHS ?= 60
exp6:
	$(PYTHON) run.py dataset=cifar10 arch=vconv regime=gates_only optimizer=adam epochs=$(EXP6_EPOCHS) progress=false out_root=outputs/exp6 $(DATA_ARG) $(EXP6_ARGS)

bench:
	$(PYTHON) scripts/bench.py

report:
	$(PYTHON) -m gatelab.report table2 --runs $(T2_ROOT) --out outputs/reports/table2 --command "$(CMD)"

figure3:
	$(PYTHON) -m gatelab.figures figure3 --scale $(FIG_SCALE) --runs outputs/figure3-$(FIG_SCALE) --out outputs/reports/figure3 $(DATA_ARG)
