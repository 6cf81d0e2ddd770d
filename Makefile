# gatelab Make targets: one per paper table or figure. The sweep grids (regimes, seeds, step sizes,
# beta x eps, reduced scales) live in conf/experiment/; this file only chains them.
# Data: DATA=<dir> (default $GATELAB_DATA, else ../shared/data when it exists).
# JOBS=N runs N jobs at once on this machine (joblib, 1 CPU thread each); EPOCHS=N and SEEDS=0,1
# override the experiment's settings (the report records the scale it was made at); BATCH=1 (default)
# trains the seeds of a cell stacked in one process, BATCH=0 one after another (faster for conv nets
# on a CPU); SGD_SWEEP=1 sweeps the SGD step size over {0.1, 0.01, 0.001} (paper §6.1); ROW=1 trains
# each Table 2 row (regimes x seeds x step sizes) in one process, stacked by regime family.
PYTHON ?= python
DATA ?= $(or $(GATELAB_DATA),$(wildcard ../shared/data))
JOBS ?= 1
EPOCHS ?=
SEEDS ?=
BATCH ?= 1
SGD_SWEEP ?= 0
ROW ?= 0
FIG_SCALE ?= quick

DATA_ARG = $(if $(DATA),data.root=$(abspath $(DATA)),)
LAUNCH = $(if $(filter-out 1,$(JOBS)),hydra/launcher=joblib hydra.launcher.n_jobs=$(JOBS) threads=1,)
RUN_ARGS = progress=false $(DATA_ARG) $(LAUNCH) $(if $(EPOCHS),epochs=$(EPOCHS)) $(if $(SEEDS),seeds=[$(SEEDS)]) \
	$(if $(filter 0,$(BATCH)),stack_seeds=false)
CMD = make $(MAKECMDGOALS)$(if $(filter 1,$(ROW)), ROW=1)$(if $(EPOCHS), EPOCHS=$(EPOCHS))$(if $(SEEDS), SEEDS=$(SEEDS))$(if $(filter-out 1,$(JOBS)), JOBS=$(JOBS))$(if $(filter 1,$(SGD_SWEEP)), SGD_SWEEP=1)
T2_ROOT = outputs/table2$(if $(EPOCHS),-$(EPOCHS)ep)
T4_ROOT = outputs/table4$(if $(EPOCHS),-$(EPOCHS)ep)
TABLE2_ROWS = fc_sgd fc_adam vconv_sgd vconv_adam gconv_sgd gconv_adam

# The experiments of one Table 2 row: the row, the SGD sweep if asked, a reduced scale ($(2), optional).
t2_exps = table2_$(1)$(if $(and $(findstring sgd,$(1)),$(filter 1,$(SGD_SWEEP))),$(comma)sgd_sweep)$(if $(2),$(comma)$(2))
comma := ,

# One Table 2 row ($(1)) into out_root $(2), at scale $(3): every regime but FLNPF (the grid of
# conf/experiment/table2_<row>.yaml), then FLNPF from the ReLU runs of the same step size and seeds.
# ROW=1: the whole row (5 regimes x seeds, x the 3 SGD step sizes with SGD_SWEEP=1) in one process,
# nets of one regime family stacked (gatelab.training.rows.train_row); same run directories either way.
define table2_row
$(if $(filter 1,$(ROW)),$(call table2_row_stacked,$(1),$(2),$(3)),$(call table2_row_jobs,$(1),$(2),$(3)))
endef
define table2_row_jobs
	$(PYTHON) run.py -m '+experiment=[$(call t2_exps,$(1),$(3))]' out_root=$(2) $(RUN_ARGS)
	$(PYTHON) run.py -m '+experiment=[$(call t2_exps,$(1),$(3))]' regime=flnpf out_root=$(2) $(RUN_ARGS)

endef
T2_REGIMES_ARG = 'regimes=[relu$(comma)frnpf_ii$(comma)frnpf_di$(comma)dlnpf$(comma)flnpf]'
SGD_LRS_ARG = 'lrs=[0.1$(comma)0.01$(comma)0.001]'
define table2_row_stacked
	$(PYTHON) run.py '+experiment=[table2_$(1)$(if $(3),$(comma)$(3))]' $(T2_REGIMES_ARG) \
		$(if $(and $(findstring sgd,$(1)),$(filter 1,$(SGD_SWEEP))),$(SGD_LRS_ARG)) out_root=$(2) $(RUN_ARGS)

endef
quick_of = $(if $(findstring fc_,$(1)),quick_fc,quick_conv)

# Table 4 into out_root $(1), reduced scale $(2) (optional): DLN and ReLU, then soft-ReLU over beta x eps.
define table4_runs
	$(PYTHON) run.py -m '+experiment=[table4$(if $(2),$(comma)$(2))]' out_root=$(1) $(RUN_ARGS)
	$(PYTHON) run.py -m '+experiment=[table4_soft$(if $(2),$(comma)$(2))]' out_root=$(1) $(RUN_ARGS)
endef

.PHONY: help install test run table2 table2-mnist table2-mnist-full table2-quick report figure3 bench table4 table4-quick dgn-figures exp6 \
	table2-conv-reduced table4-conv-reduced \
	races races-quick races-report routing-reduced routing-paper routing-isolation routing-report routing-toy routing-features \
	routing-backbone

help:
	@echo "make install        pip install -e .[dev]"
	@echo "make test           the test suite (CPU, tiny generated data)"
	@echo "make run            python run.py (MNIST / FC / ReLU / Adam, 10 epochs)"
	@echo "make table2         Table 2 of paper 001: 6 rows x 5 regimes x 5 seeds, paper code's epochs and step sizes"
	@echo "make table2-mnist   its two FC/MNIST rows"
	@echo "make table2-mnist-full  the FC rows at the code's lengths, Adam at 1e-4 and 3e-4 (#14; hours on a CPU, resumable)"
	@echo "make table2-quick   all rows at reduced scale (2-core CPU, under 30 min)"
	@echo "make table4         Table 4 of paper 002: DLN, ReLU, soft-ReLU beta x eps, 5 seeds (CIFAR-10)"
	@echo "make table4-quick   the same at reduced scale (2-core CPU)"
	@echo "make table2-conv-reduced / table4-conv-reduced  the conv rows and Table 4 at the GPU-minutes scale (EPOCHS=N)"
	@echo "make figure3        Figure 3 equivalents (FIG_SCALE=quick|paper) -> outputs/reports/figure3"
	@echo "make dgn-figures    paper 002 Figures 1-4 (Gram spectra, convergence vs depth) and 7-8 (FIG_SCALE)"
	@echo "make exp6           paper 002 experiment 6: train only the gates of a CIFAR-10 conv net"
	@echo "make races          paper 004 Table 1 + Figs 1, 3-5: 5 seeds, IMP at every N, Fig 3a to N=4000, d=1000"
	@echo "make races-quick    the same at reduced scale (3 seeds, N=4000 one seed; about 25 min on 2 cores)"
	@echo "make races-report   re-render outputs/reports/races-quick from outputs/races-quick"
	@echo "make routing-reduced paper 003 routing nets, reduced (MNIST 6000/1000, M=20, 15 epochs, 3 seeds): K, gain, leaky, rot"
	@echo "make routing-paper  paper 003 at its scale (GPU cluster): M=40 and 100, 1000 epochs, 10 seeds"
	@echo "make routing-report re-render outputs/reports/routing-reduced"
	@echo "make routing-isolation what moves the zero-shot threshold: M, epochs, images, step size one at a time, then M=40 with 12000 and 18000 images (~4 h, 1 core)"
	@echo "make routing-backbone train a ResNet-20 for the CIFAR task when resnet20-12fca82f.th is not at hand (GPU)"
	@echo "make routing-features CIFAR backbone features of the reduced scale (cached) and the backbone's accuracy"
	@echo "make routing-toy    paper 003 Figs 3-6: the toy task and XoR against the reduced ODEs (seconds)"
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
	$(PYTHON) -m gatelab.papers.npf table2 --runs $(T2_ROOT) --out outputs/reports/table2 --command "$(CMD)"

table2-mnist:
	$(foreach row,fc_sgd fc_adam,$(call table2_row,$(row),$(T2_ROOT),))
	$(PYTHON) -m gatelab.papers.npf table2 --runs $(T2_ROOT) --arch fc --out outputs/reports/table2-mnist --command "$(CMD)"

# Issue #14: both FC/MNIST rows at the code's lengths (SGD 0.01 300 epochs, Adam 100 epochs at the
# code's 1e-4 and the paper's 3e-4), resumable; one report per Adam step size.
T2_FULL = outputs/table2-mnist-full
table2-mnist-full:
	$(call table2_row,fc_adam,$(T2_FULL),)
	$(PYTHON) run.py -m '+experiment=[table2_fc_adam]' optimizer.lr=3e-4 out_root=$(T2_FULL) $(RUN_ARGS)
	$(PYTHON) run.py -m '+experiment=[table2_fc_adam]' optimizer.lr=3e-4 regime=flnpf out_root=$(T2_FULL) $(RUN_ARGS)
	$(call table2_row,fc_sgd,$(T2_FULL),)
	$(PYTHON) -m gatelab.papers.npf table2 --runs $(T2_FULL) --arch fc --lr adam=1e-4 --out outputs/reports/table2-mnist-full --command "$(CMD)"
	$(PYTHON) -m gatelab.papers.npf table2 --runs $(T2_FULL) --arch fc --lr adam=3e-4 --out outputs/reports/table2-mnist-full/adam3e-4 --command "$(CMD)"

table2-quick:
	$(foreach row,$(TABLE2_ROWS),$(call table2_row,$(row),outputs/table2-quick,$(call quick_of,$(row))))
	$(PYTHON) -m gatelab.papers.npf table2 --runs outputs/table2-quick --out outputs/reports/table2-quick --command "$(CMD) (reduced: conf/experiment/quick_fc.yaml, quick_conv.yaml)"

# Issue #19: the conv half at a reduced scale for one GPU (conf/experiment/conv_reduced.yaml): the GCONV and
# VCONV Adam rows (5 regimes, each row in one process, stacked by family) and Table 4 (DLN, ReLU, soft-ReLU
# beta in {1, 4, 16} at eps=0.1), EPOCHS= epochs each; CONV_REDUCED_ARGS adds overrides (the smoke mode's tiny data).
CONV_REDUCED_ARGS ?=
CONV_NOTE = REDUCED SCALE, not the paper's: conf/experiment/conv_reduced.yaml (first 10,000/2,000 CIFAR-10 images, 3 seeds, bf16)$(if $(EPOCHS), $(EPOCHS) epochs)$(if $(CONV_REDUCED_ARGS), + $(CONV_REDUCED_ARGS))
T2_CONV = outputs/table2-conv-reduced
T4_CONV = outputs/table4-conv-reduced
table2-conv-reduced:
	$(PYTHON) run.py '+experiment=[table2_gconv_adam,conv_reduced]' $(T2_REGIMES_ARG) out_root=$(T2_CONV) $(RUN_ARGS) $(CONV_REDUCED_ARGS)
	$(PYTHON) run.py '+experiment=[table2_vconv_adam,conv_reduced]' $(T2_REGIMES_ARG) out_root=$(T2_CONV) $(RUN_ARGS) $(CONV_REDUCED_ARGS)
	$(PYTHON) -m gatelab.papers.npf table2 --runs $(T2_CONV) --arch gconv vconv --seeds 3 --out outputs/reports/table2-conv-reduced --command "$(CMD)" --note "$(CONV_NOTE)"

table4-conv-reduced:
	$(PYTHON) run.py '+experiment=[table4,conv_reduced]' 'regimes=[dln,relu]' out_root=$(T4_CONV) $(RUN_ARGS) $(CONV_REDUCED_ARGS)
	$(PYTHON) run.py -m '+experiment=[table4_soft,conv_reduced]' regime.beta=1,4,16 regime.eps=0.1 out_root=$(T4_CONV) $(RUN_ARGS) $(CONV_REDUCED_ARGS)
	$(PYTHON) -m gatelab.papers.dgn table4 --runs $(T4_CONV) --seeds 3 --out outputs/reports/table4-conv-reduced --command "$(CMD)" --note "$(CONV_NOTE)"

table4:
	$(call table4_runs,$(T4_ROOT),)
	$(PYTHON) -m gatelab.papers.dgn table4 --runs $(T4_ROOT) --out outputs/reports/table4 --command "$(CMD)"

table4-quick:
	$(call table4_runs,outputs/table4-quick,quick_table4)
	$(PYTHON) -m gatelab.papers.dgn table4 --runs outputs/table4-quick --out outputs/reports/table4-quick --command "$(CMD) (reduced: conf/experiment/quick_table4.yaml)"

report:
	$(PYTHON) -m gatelab.papers.npf table2 --runs $(T2_ROOT) --out outputs/reports/table2 --command "$(CMD)"

figure3:
	$(PYTHON) -m gatelab.papers.npf figure3 --scale $(FIG_SCALE) --runs outputs/figure3-$(FIG_SCALE) --out outputs/reports/figure3 $(DATA_ARG)

dgn-figures:
	$(PYTHON) -m gatelab.papers.dgn figures1-4 --scale $(FIG_SCALE) --out outputs/reports/dgn-figures
	$(PYTHON) -m gatelab.papers.dgn figures7-8 --scale $(FIG_SCALE) --runs outputs/dgn7-$(FIG_SCALE) --out outputs/reports/dgn-figures $(DATA_ARG)

# Paper 002 experiment 6: only the gates of the CIFAR-10 conv net train (published: 56% test).
EXP6_EPOCHS ?= 60
exp6:
	$(PYTHON) run.py dataset=cifar10 arch=vconv regime=gates_only optimizer=adam epochs=$(EXP6_EPOCHS) progress=false out_root=outputs/exp6 $(DATA_ARG) $(EXP6_ARGS)

bench:
	$(PYTHON) scripts/bench.py

# Paper 004 (neuron races) into out_root $(1), at reduced scale $(2) (race_quick, optional), with
# extra overrides $(3) for the Fig 3a sweep. Table 1's grid, IMP round 3 at 20/50/70% (rounds 1-2
# and the dense run first), Fig 3a's d x N, and the checks on sigma_0=1e-5 at N=$(4): the input scale
# (normalize=$(5)) and the number of epochs (the isolation report varies one choice at a time); the
# loss_trace runs (the loss drop at every step); Fig 3a's small N at equal steps (full scale).
define race_runs
	$(PYTHON) run.py -m '+experiment=[race$(if $(2),$(comma)$(2))]' out_root=$(1) $(RUN_ARGS)
	$(if $(2),$(PYTHON) run.py -m '+experiment=[race$(comma)$(2)]' dataset.limit_train=4000 seeds=[0] out_root=$(1) $(RUN_ARGS))
	$(PYTHON) run.py -m '+experiment=[race$(if $(2),$(comma)$(2)),race_imp]' $(if $(2),seeds=[0]) out_root=$(1) $(RUN_ARGS)
	$(PYTHON) run.py -m '+experiment=[race$(if $(2),$(comma)$(2)),race_capacity]' $(3) out_root=$(1) $(RUN_ARGS)
	$(PYTHON) run.py -m '+experiment=[race$(if $(2),$(comma)$(2))]' arch.init_std=1e-5 dataset.limit_train=$(4) dataset.normalize=$(5) out_root=$(1) $(RUN_ARGS)
	$(PYTHON) run.py -m '+experiment=[race$(if $(2),$(comma)$(2))]' arch.init_std=1e-5 dataset.limit_train=$(4) epochs=50,300 out_root=$(1) $(RUN_ARGS)
	$(PYTHON) run.py -m '+experiment=[race$(if $(2),$(comma)$(2))]' dataset.limit_train=200 epochs=60 $(RACES_TRACE) out_root=$(1) $(RUN_ARGS)
	$(PYTHON) run.py -m '+experiment=[race$(if $(2),$(comma)$(2))]' dataset.limit_train=800 epochs=15 $(RACES_TRACE) out_root=$(1) $(RUN_ARGS)
	$(if $(2),,$(PYTHON) run.py -m '+experiment=[race,race_capacity]' $(RACES_EQUAL_STEPS) dataset.limit_train=50 epochs=385 out_root=$(1) $(RUN_ARGS))
	$(if $(2),,$(PYTHON) run.py -m '+experiment=[race,race_capacity]' $(RACES_EQUAL_STEPS) dataset.limit_train=100 epochs=200 out_root=$(1) $(RUN_ARGS))
	$(if $(2),,$(PYTHON) run.py -m '+experiment=[race]' dataset.limit_train=4000 arch.init_std=1e-3 epochs=2 $(RACES_TRACE_4000_1e-3) out_root=$(1) $(RUN_ARGS))
	$(if $(2),,$(PYTHON) run.py -m '+experiment=[race]' dataset.limit_train=4000 arch.init_std=1e-5 epochs=4 $(RACES_TRACE_4000_1e-5) out_root=$(1) $(RUN_ARGS))
endef
# The loss drop at every step: the first 3000 steps of N=200 (60 epochs) and N=800 (15 epochs) again, the
# training-set loss recorded after each. At N=4000 (full scale only) a traced step costs 20x N=200's, so only
# a window around the drop is traced, chosen from the checkpoint grid (10% down at 1750-2000 for
# sigma_0=1e-3, 3000-4000 for 1e-5); the plateau's level comes from the main run's t=0.
RACES_TRACE = 'loss_trace=[0,3000]'
# Fig 3a below N=200 at N=200's length (5000 steps of batch 4: 385 epochs at N=50, 200 at N=100), full
# scale only: whether the length of training, not N, puts k(N=50) above k(N=200) (figure3_lengths.md; only
# the final k is compared, so no step checkpoints)
RACES_EQUAL_STEPS = 'arch.dense=[100],[300],[1000]' 'checkpoint_steps=[]'
RACES_TRACE_4000_1e-3 = 'loss_trace=[1250,2000]'
RACES_TRACE_4000_1e-5 = 'loss_trace=[2000,4000]'
RACES_ROOT = outputs/races$(if $(EPOCHS),-$(EPOCHS)ep)
RACES_CAPACITY = 'arch.dense=[10],[30],[100],[300],[1000]' dataset.limit_train=50,100,200,400,800,2000,4000

races:
	$(call race_runs,$(RACES_ROOT),,$(RACES_CAPACITY),200$(comma)800,unit$(comma)standardize)
	$(call races_report,$(RACES_ROOT),outputs/reports/races)

races-quick:
	$(call race_runs,outputs/races-quick,race_quick,,200,unit)
	$(call races_report,outputs/races-quick,outputs/reports/races-quick)

# Table 1 and the figures of the runs below $(1) into $(2).
define races_report
	$(PYTHON) -m gatelab.papers.races table1 --runs $(1) --out $(2) --command "$(CMD)"
	$(PYTHON) -m gatelab.papers.races table1 --runs $(1) --out $(2)/complete-linkage --linkage complete --command "$(CMD)"
	$(PYTHON) -m gatelab.papers.races isolation --runs $(1) --out $(2) --command "$(CMD)"
	$(PYTHON) -m gatelab.papers.races figures --runs $(1) --out $(2)
endef

races-report:
	$(call races_report,outputs/races-quick,outputs/reports/races-quick)

# Paper 003 (gated routing networks) into out_root $(1) at scale $(2) (routing_reduced | routing_paper):
# the K sweep (linear), the gain sweep, the leaky and the rotated-input K sweeps; extra overrides $(3).
# (the gain sweep at K=$(5) when given, else routing_gain's K=5: the paper's Fig 10 has K=10 of M=40 and 100)
define routing_runs
	$(PYTHON) run.py -m '+experiment=$(2)' $(3) out_root=$(1) $(RUN_ARGS)
	$(PYTHON) run.py -m '+experiment=[$(2),routing_gain]' $(if $(5),dataset.routing.K=$(5)) $(3) out_root=$(1) $(RUN_ARGS)
	$(PYTHON) run.py -m '+experiment=$(2)' regime=leaky $(3) out_root=$(1) $(RUN_ARGS)
	$(PYTHON) run.py -m '+experiment=$(2)' dataset=routing_mnist_rot $(3) out_root=$(1) $(RUN_ARGS)
	$(PYTHON) run.py -m '+experiment=$(2)' dataset=routing_cifar_rot $(4) $(3) out_root=$(1) $(RUN_ARGS)
endef
ROUTING_CIFAR_REDUCED = dataset.limit_train=5000 dataset.limit_test=1000  # h=128 as for MNIST: h=1024 is 96 s an epoch here, 11x
define routing_report
	$(PYTHON) -m gatelab.papers.routing table --runs $(1) --out $(2) --command "$(CMD)"
endef

routing-reduced:
	$(call routing_runs,outputs/routing-reduced,routing_reduced,,$(ROUTING_CIFAR_REDUCED))
	# small gains leave their plateau later (about 1/gain for a 3-layer linear net): gains 0.1 and 0.01 again at 100 epochs
	$(PYTHON) run.py -m '+experiment=[routing_reduced,routing_gain]' arch.init_gain=0.01,0.1 epochs=100 out_root=outputs/routing-reduced $(RUN_ARGS)
	$(call routing_report,outputs/routing-reduced,outputs/reports/routing-reduced)

routing-paper:
	$(call routing_runs,outputs/routing-paper,routing_paper,,'arch.dense=[1024]',10)
	$(PYTHON) run.py -m '+experiment=routing_paper' dataset.routing.M=100 dataset.routing.K=10,20,30,40,50,60,70,80,90 out_root=outputs/routing-paper $(RUN_ARGS)
	$(call routing_report,outputs/routing-paper,outputs/reports/routing-paper)

# Issue #21: what moves the linear net's zero-shot threshold (0.60 at the reduced scale, paper ≈0.40): the
# reduced scale at K/M = 0.4 and 0.5, then one factor changed at a time (images, step size, epochs, M), then M=40
# with twice the images: two steps toward the paper's scale (M=40, 60,000 images) at once; and with three times
# the images at K/M = 0.4 only.
ROUTING_ISO = outputs/routing-isolation
ROUTING_ISO_VARIANTS = base dataset.limit_train=2000 optimizer.lr=3e-3 epochs=30
define routing_iso_run
	$(PYTHON) run.py -m '+experiment=routing_reduced' $(1) out_root=$(ROUTING_ISO) $(RUN_ARGS)

endef
routing-isolation:
	$(foreach v,$(ROUTING_ISO_VARIANTS),$(call routing_iso_run,dataset.routing.K=8$(comma)10 $(filter-out base,$(v))))
	$(call routing_iso_run,dataset.routing.M=40 dataset.routing.K=16$(comma)20)
	$(call routing_iso_run,dataset.routing.M=40 dataset.routing.K=16$(comma)20 dataset.limit_train=12000)
	$(call routing_iso_run,dataset.routing.M=40 dataset.routing.K=16 dataset.limit_train=18000)
	$(PYTHON) -m gatelab.papers.routing isolation --runs $(ROUTING_ISO) --out outputs/reports/routing-isolation --command "$(CMD)"

routing-report:
	$(call routing_report,outputs/routing-reduced,outputs/reports/routing-reduced)

routing-toy:
	$(PYTHON) -m gatelab.papers.routing toy --out outputs/reports/routing-toy

routing-backbone:  # only without resnet20-12fca82f.th: trains one (akamaster's recipe; a GPU: 200 epochs)
	$(PYTHON) -m gatelab.papers.routing backbone $(if $(DATA),--data $(abspath $(DATA))) $(if $(EPOCHS),--epochs $(EPOCHS))

routing-features:  # the reduced scale's cache (minutes on a CPU); paper scale fills its own on first use
	$(PYTHON) -m gatelab.papers.routing features $(DATA_ARG) $(ROUTING_CIFAR_REDUCED)
