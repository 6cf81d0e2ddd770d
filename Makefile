# gatelab Make targets: one per paper table or figure set, each one line calling its recipe
# (gatelab/papers/<paper>/recipes.py, python -m gatelab reproduce <recipe>): the recipe plans every
# job, checks it, prices it, trains it here (JOBS=N at a time) or on SLURM (SLURM=1), and renders
# the report. DRY=1 prints the plan and its cost instead. Data: DATA=<dir> (default $GATELAB_DATA,
# else ../shared/data when it exists). EPOCHS=N, SEEDS=0,1 override the experiments' (the runs go to
# <out_root>-<N>ep, SEEDS and keyed EXTRA overrides to their own suffix, and their reports beside the recipe's, headed
# NOT THE RECIPE'S SCALE, never into it); BATCH=0 trains a cell's seeds one after another; SGD_SWEEP=1 adds the paper's
# SGD step sizes {0.1, 0.01, 0.001}; ROW=1 trains each Table 2 row in one process; FIG_SCALE picks
# the figures' scale; EXTRA='key=value ...' adds overrides to every run.
PYTHON ?= python
DATA ?= $(or $(GATELAB_DATA),$(wildcard ../shared/data))
JOBS ?= 1
FIG_SCALE ?= quick
R = $(PYTHON) -m gatelab reproduce
ARGS = $(if $(DATA),--data $(abspath $(DATA))) $(if $(filter-out 1,$(JOBS)),--jobs $(JOBS)) $(if $(EPOCHS),--epochs $(EPOCHS)) \
	$(if $(SEEDS),--seeds $(SEEDS)) $(if $(filter 0,$(BATCH)),--no-stack) $(if $(filter 1,$(SGD_SWEEP)),--sgd-sweep) \
	$(if $(filter 1,$(ROW)),--row) $(if $(filter 1,$(SLURM)),--slurm) $(if $(filter 1,$(STATUS)),--status) \
	$(foreach s,$(SLURM_SET),--slurm-set $(s)) $(if $(filter 1,$(DRY)),--dry-run) $(EXTRA)

.PHONY: help install test test-all run table2 table2-mnist table2-mnist-full table2-quick report figure3 bench table4 table4-quick dgn-figures dgn-figure5 dgn-figure5-reduced exp6 exp6-reduced page \
	table2-conv-reduced table2-conv-cpu table4-conv-reduced table4-conv-reduced-grid table4-conv-cpu \
	races races-quick races-report races-appendix races-drop routing-reduced routing-reduced-m100 routing-paper routing-isolation routing-isolation-leaky routing-isolation-decoder routing-isolation-decoder-rot routing-report routing-toy routing-features \
	routing-backbone

help:
	@echo "make install             pip install -c constraints.txt -e .[dev,wandb] (CI's install; PYTHON=.venv/bin/python)"
	@echo "make test                the fast suite (CPU, tiny generated data; no subprocess, SLURM or kill tests)"
	@echo "make test-all            the whole suite (what CI runs)"
	@echo "make run                 python run.py (MNIST / FC / ReLU / Adam, 10 epochs)"
	@echo "Paper tables and figures (DRY=1: the plan and its cost; python -m gatelab recipes lists them):"
	@echo "make table2              Table 2 of paper 001: 6 rows x 5 regimes x 5 seeds, paper code's epochs and step sizes"
	@echo "make table2-mnist        its two FC/MNIST rows"
	@echo "make table2-mnist-full   the FC rows at the code's lengths, Adam at 1e-4 and 3e-4 (hours on a CPU, resumable)"
	@echo "make table2-quick        all rows at reduced scale (2-core CPU)"
	@echo "make table2-conv-reduced / table4-conv-reduced  the conv rows and Table 4 at the GPU-minutes scale (EPOCHS=N)"
	@echo "make table2-conv-cpu     the conv Adam rows at a 2-core CPU's scale (2,000/1,000 images, 4 epochs, fp32)"
	@echo "make table4-conv-reduced-grid  Table 4's whole beta x eps grid at that scale (adds 13 networks to table4-conv-reduced's report)"
	@echo "make table4-conv-cpu     Table 4 (DLN, ReLU, soft-ReLU beta 1,4,16) at a 2-core CPU's scale (2,000/1,000 images, 6 epochs, fp32)"
	@echo "make table4              Table 4 of paper 002: DLN, ReLU, soft-ReLU beta x eps, 5 seeds (CIFAR-10)"
	@echo "make table4-quick        the same at reduced scale (2-core CPU)"
	@echo "make figure3             Figure 3 equivalents (FIG_SCALE=quick|paper; reduced: the left panel, 3 seeds, a CPU's hours)"
	@echo "make dgn-figures         paper 002 Figures 1-4 and 7-8 (FIG_SCALE)"
	@echo "make dgn-figure5         paper 002 Fig 5: ReLU against GaLU on MNIST, random labels and pixels"
	@echo "make dgn-figure5-reduced the same on this CPU's scale (5000/2000 images, 40 epochs)"
	@echo "make exp6                paper 002 experiment 6: train only the gates of a CIFAR-10 conv net"
	@echo "make exp6-reduced        the same on this CPU's scale (10000/2000 images, 5 epochs, 3 seeds)"
	@echo "make races               paper 004 Table 1 + Figs 1, 3-5: 5 seeds, IMP at every N, Fig 3a to N=4000, d=1000"
	@echo "make races-quick         the same at reduced scale (3 seeds, N=4000 one seed)"
	@echo "make races-appendix      paper 004 Figs 6-7: the gradient ratio at init, the stable cells against N and what moves them (no training)"
	@echo "make races-drop          paper 004 Fig 1a: what moves the loss drop (step size, sigma_0; minutes)"
	@echo "make routing-reduced     paper 003 routing nets, reduced (MNIST 6000/1000, M=20, 15 epochs, 3 seeds)"
	@echo "make routing-reduced-m100  M=100 at the reduced scale (Figs 7c, 8 ii, 10 i; DRY=1 prices it)"
	@echo "make routing-paper       paper 003 at its scale (GPU cluster): M=40 and 100, 1000 epochs, 10 seeds"
	@echo "make routing-isolation   what moves the zero-shot threshold, one factor at a time"
	@echo "make routing-isolation-leaky  the same for the leaky net (Fig 9): M, images, epochs"
	@echo "make routing-isolation-decoder  the decoders' init (paper's text against the authors' code), linear and leaky"
	@echo "make routing-isolation-decoder-rot  the same on MNIST rot/perm"
	@echo "make routing-toy         paper 003 Figs 3-6: the toy task and XoR against the reduced ODEs (seconds)"
	@echo "make report / races-report / routing-report  re-render table2 / races-quick / routing-reduced from their runs"
	@echo "make routing-backbone    train a ResNet-20 for the CIFAR task when resnet20-12fca82f.th is not at hand (GPU)"
	@echo "make routing-features    CIFAR backbone features of the reduced scale (cached) and the backbone's accuracy"
	@echo "make bench               seconds per epoch per seed: single-run vs seed-batched path"
	@echo "make page                outputs/reports/README.md: what reproduces, item by item, from the reports' CSVs"

install:  # what CI installs (.ci/run): the pinned versions the suite passed on, the wheel test's setuptools
	$(PYTHON) -m pip install -q -c constraints.txt "setuptools>=70.1" -e ".[dev,wandb]"

# pytest-xdist workers for the fast suite (0: in this process, no workers); the slow tests run one at a time
TEST_JOBS ?= 2
test:
	$(PYTHON) -m pytest -q -n $(TEST_JOBS) -m "not slow" tests

test-all: test
	$(PYTHON) -m pytest -q -m slow tests

run:
	$(PYTHON) run.py $(if $(DATA),data.root=$(abspath $(DATA)))

table2: ; $(R) table2 --scale paper $(ARGS)
table2-mnist: ; $(R) table2-mnist --scale paper $(ARGS)
table2-mnist-full: ; $(R) table2-mnist --scale full $(ARGS)
table2-quick: ; $(R) table2 --scale quick $(ARGS)
table2-conv-reduced: ; $(R) table2 --scale conv-reduced $(ARGS) $(CONV_REDUCED_ARGS)
table2-conv-cpu: ; $(R) table2 --scale conv-cpu $(ARGS)
report: ; $(R) table2 --scale paper --report-only $(ARGS)
table4: ; $(R) table4 --scale paper $(ARGS)
table4-quick: ; $(R) table4 --scale quick $(ARGS)
table4-conv-reduced: ; $(R) table4 --scale conv-reduced $(ARGS) $(CONV_REDUCED_ARGS)
table4-conv-reduced-grid: ; $(R) table4 --scale conv-reduced-grid $(ARGS) $(CONV_REDUCED_ARGS)
table4-conv-cpu: ; $(R) table4 --scale conv-cpu $(ARGS)
figure3: ; $(R) figure3 --scale $(FIG_SCALE) $(ARGS)
dgn-figures: ; $(R) dgn-figures --scale $(FIG_SCALE) $(ARGS)
dgn-figure5: ; $(R) dgn-figure5 --scale paper $(ARGS)
dgn-figure5-reduced: ; $(R) dgn-figure5 --scale reduced $(ARGS)
exp6: ; $(R) exp6 --scale paper $(ARGS)
exp6-reduced: ; $(R) exp6 --scale reduced $(ARGS)
races: ; $(R) races --scale paper $(ARGS)
races-appendix: ; $(R) races-appendix $(ARGS)
races-drop: ; $(R) races-drop $(ARGS)
races-quick: ; $(R) races --scale quick $(ARGS)
races-report: ; $(R) races --scale quick --report-only $(ARGS)
routing-reduced: ; $(R) routing --scale reduced $(ARGS)
routing-reduced-m100: ; $(R) routing --scale reduced-m100 $(ARGS)
routing-paper: ; $(R) routing --scale paper $(ARGS)
routing-isolation: ; $(R) routing-isolation --scale reduced $(ARGS)
routing-isolation-leaky: ; $(R) routing-isolation --scale leaky $(ARGS)
routing-isolation-decoder: ; $(R) routing-isolation --scale decoder $(ARGS)
routing-isolation-decoder-rot: ; $(R) routing-isolation --scale decoder-rot $(ARGS)
routing-report: ; $(R) routing --scale reduced --report-only $(ARGS)
routing-toy: ; $(R) routing-toy $(ARGS)
routing-backbone: ; $(PYTHON) -m gatelab.papers.routing backbone $(if $(DATA),--data $(abspath $(DATA))) $(if $(EPOCHS),--epochs $(EPOCHS))
routing-features: ; $(PYTHON) -m gatelab.papers.routing features $(if $(DATA),data.root=$(abspath $(DATA))) dataset.limit_train=5000 dataset.limit_test=1000
bench: ; $(PYTHON) scripts/bench.py
page: ; $(PYTHON) -m gatelab page
