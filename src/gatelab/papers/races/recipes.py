"""Paper 004's recipe: Table 1 and Figures 1, 3-5 ("It's Not a Lottery, It's a Race").
``python -m gatelab reproduce races --scale quick --dry-run`` prints every job.

Table 1's grid (``conf/experiment/race.yaml``: sigma_0 x N, 5 seeds); IMP round 3 at 20/50/70% (rounds
1-2 and the dense run first); Fig 3a's d x N; the checks on sigma_0=1e-5 (the input scale and the
number of epochs, the step size, one choice at a time: the isolation report); the loss drop at every step
(``loss_trace``); at paper scale Fig 3a's small N at N=200's 5000 steps and the N=4000 loss-drop windows.
"""
from __future__ import annotations

from gatelab.launch.recipes import Options, Recipe, recipe

TRACE = "loss_trace=[0,3000]"  # the first 3000 steps of N=200 (60 epochs) and N=800 (15 epochs)
CAPACITY = ["arch.dense=[10],[30],[100],[300],[1000]", "dataset.limit_train=50,100,200,400,800,2000,4000"]
EQUAL_STEPS = ["arch.dense=[100],[300],[1000]", "checkpoint_steps=[]"]  # Fig 3a below N=200 at N=200's length


@recipe("races", ("paper", "quick"), "Table 1 and Figures 1, 3-5 of paper 004: 5 seeds, IMP at every N, Fig 3a to N=4000")
def races(o: Options) -> Recipe:
    quick = o.scale == "quick"
    root = "outputs/races-quick" if quick else o.root("outputs/races")
    race = "+experiment=[race,race_quick]" if quick else "+experiment=[race]"
    with_ = (lambda extra: f"+experiment=[race,race_quick,{extra}]") if quick else \
        (lambda extra: f"+experiment=[race,{extra}]")
    n, normalize = ("dataset.limit_train=200", "dataset.normalize=unit") if quick else \
        ("dataset.limit_train=200,800", "dataset.normalize=unit,standardize")
    runs = [[race],
            *([[race, "dataset.limit_train=4000", "seeds=[0]"]] if quick else []),
            [with_("race_imp"), *(["seeds=[0]"] if quick else [])],
            [with_("race_capacity"), *([] if quick else CAPACITY)],
            [race, "arch.init_std=1e-5", n, normalize],
            [race, "arch.init_std=1e-5", n, "epochs=50,300"],
            [race, "arch.init_std=1e-5", n, "optimizer.lr=4e-3"],  # the step size: the batch's loss summed
            [race, "dataset.limit_train=200", "epochs=60", TRACE],
            [race, "dataset.limit_train=800", "epochs=15", TRACE]]
    if not quick:
        runs += [["+experiment=[race,race_capacity]", *EQUAL_STEPS, "dataset.limit_train=50", "epochs=385"],
                 ["+experiment=[race,race_capacity]", *EQUAL_STEPS, "dataset.limit_train=100", "epochs=200"],
                 ["+experiment=[race]", "dataset.limit_train=4000", "arch.init_std=1e-3", "epochs=2",
                  "loss_trace=[1250,2000]"],
                 ["+experiment=[race]", "dataset.limit_train=4000", "arch.init_std=1e-5", "epochs=4",
                  "loss_trace=[2000,4000]"]]
    runs = [[*rs, f"out_root={root}"] for rs in runs]
    out = "outputs/reports/races-quick" if quick else "outputs/reports/races"
    reports = [["gatelab.papers.races", "table1", "--runs", root, "--out", out, "--command", "{command}"],
               ["gatelab.papers.races", "table1", "--runs", root, "--out", f"{out}/complete-linkage",
                "--linkage", "complete", "--command", "{command}"],
               ["gatelab.papers.races", "isolation", "--runs", root, "--out", out, "--command", "{command}"],
               ["gatelab.papers.races", "figures", "--runs", root, "--out", out]]
    return Recipe("races", "paper 004", runs, reports=reports)


@recipe("races-appendix", ("paper",), "Figures 6 and 7 of paper 004's appendix: the gradient ratio, the stable cells and what moves them (no training)")
def races_appendix(o: Options) -> Recipe:
    data = ["--data", o.data] if o.data else []
    out = ["--out", "outputs/reports/races-appendix"]
    return Recipe("races-appendix", "paper 004's appendix figures", figures=[
        ["gatelab.papers.races", "figure6", *data, *out], ["gatelab.papers.races", "figure7", *data, *out],
        ["gatelab.papers.races", "figure7-isolation", *data, *out]])


@recipe("races-drop", ("paper",), "What moves Fig 1a's loss drop (paper 004): the step size (the batch's loss summed, "
        "not averaged) and sigma_0, one at a time, then both; every step of N=200's first 3000 traced")
def races_drop(o: Options) -> Recipe:
    root = o.root("outputs/races-drop")
    run = ["+experiment=[race]", "dataset.limit_train=200", "epochs=60", TRACE, "optimizer.lr=1e-3,4e-3",
           "arch.init_std=1e-5,1e-3", f"out_root={root}"]
    return Recipe("races-drop", "paper 004 Fig 1a's loss drop", [run], reports=[
        ["gatelab.papers.races", "drop-isolation", "--runs", root, "--out", "outputs/reports/races-drop",
         "--command", "{command}", *(["--data", o.data] if o.data else [])]])
