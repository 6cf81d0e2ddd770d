"""The confirmation targets (issue #55): each a recipe at a scale, or a figure command, whose report decides items of
the papers, run again on held-out seeds (:mod:`gatelab.papers.confirm`)."""
from __future__ import annotations

from dataclasses import dataclass

RUNS_ROOT, REPORTS_ROOT = "outputs/confirm", "outputs/reports/confirm"  # a target's runs, its reports


@dataclass(frozen=True)
class Target:
    """A recipe at a scale whose report decides ``items`` (paper, item), run again on held-out seeds."""
    name: str
    recipe: str
    scale: str
    items: tuple
    least: int  # the recipe's own seeds per cell: a feature or published claim runs as many
    most: int  # the bound a price here allows (the "fix the number you will run")
    why: str = ""
    figure: tuple = ()  # a figure command that trains its own nets ("{out}", "{seed}": its folder, the held-out seed)
    report: str = ""  # a figure target's report folder (under outputs/reports/)
    runs: str = ""  # where a figure target's command trains run.py runs ("{runs}": outputs/confirm/<runs>): runs.csv lists them


TARGETS = (  # cheapest first (prices: docs/recipes.md's table on this kind of machine)
    Target("routing-toy", "", "", tuple(("003", i) for i in ("Fig 3", "Fig 4e-f", "Fig 4g-h", "Fig 5b", "Fig 5c",
                                                             "Fig 6")), 1, 1,
           "about 20 s: one held-out seed draws every net of the toy figures (Fig 5b is an ODE: the same numbers)",
           ("gatelab.papers.routing", "toy", "--out", "{out}", "--seed", "{seed}"), "routing-toy"),
    Target("dgn-figure10", "", "", (("002", "Fig 10 (experiment 8)"),), 1, 1, "seconds: one seed draws its 5 nets a depth",
           ("gatelab.papers.dgn", "figure10", "--out", "{out}", "--seed", "{seed}"), "dgn-figures-paper"),
    Target("dgn-figure2", "", "", (("002", "Fig 2"),), 1, 1, "minutes: one seed draws its 1000 nets a depth",
           ("gatelab.papers.dgn", "figure2", "--nets", "1000", "--out", "{out}", "--seed", "{seed}"),
           "dgn-figure2-nets"),
    Target("dgn-figures1-4", "", "", (("002", "Fig 1 (experiment 1)"), ("002", "Fig 3 (experiment 1)"),
                                      ("002", "Fig 4 (experiment 2)"), ("001", "Figs 6-7")), 1, 1,
           "210 fresh nets (runs 100 on) of 1000 GD steps: 2.1 h on a Zen 3 at 1 thread (2026-12-07), w=500 nets 1-4 min each",
           ("gatelab.papers.dgn", "figures1-4", "--scale", "paper", "--out", "{out}", "--seed", "{seed}"),
           "dgn-figures-paper"),
    Target("races-figure7", "", "", (("004", "Fig 7"),), 3, 3, "minutes: three fresh probe draws of Algorithm 1",
           ("gatelab.papers.races", "figure7", "--data", "{data}", "--out", "{out}", "--sizes", "50,100,200,400,800",
            "--seeds", "{seeds}"), "races-appendix"),
    Target("figure3", "", "", (("001", "Fig 3 middle"), ("001", "Fig 3 right"), ("002", "Fig 6")), 1, 1,
           "two runs of 30 epochs and their kernels at every epoch: under an hour on a CPU",
           ("gatelab.papers.npf", "figure3", "--scale", "paper", "--panels", "middle", "right", "--runs", "{runs}",
            "--out", "{out}", "seed={seed}", "data.root={data}", "progress=false"), "figure3-paper", "figure3-paper"),
    Target("dgn-figures7-8", "", "", (("002", "Fig 7 (experiments 3-5)"), ("002", "Fig 8 (experiment 3)")), 5, 8,
           "6 runs a seed of 100 epochs on Binary-MNIST and ν every 10 epochs",
           ("gatelab.papers.dgn", "figures7-8", "--scale", "paper", "--runs", "{runs}", "--out", "{out}",
            "--seed", "{seed}", "--seeds", "{n}", "data.root={data}", "progress=false"), "dgn-figures-paper",
           "dgn7-paper"),
    Target("dgn-figure5", "dgn-figure5", "reduced", (("002", "Fig 5"),), 3, 5, "3 min at 3 seeds"),
    Target("races", "races", "paper", tuple(("004", i) for i in (
        "Table 1 (Appendix G)", "Fig 1", "Fig 3a", "Fig 3b", "Fig 4", "Fig 5", "Fig 8")), 5, 5,
        "priced 95 min at 5 seeds on a Zen 4, measured about 4x that: one job of 5 stacked nets, 41 s against 10 s, "
        "half of it each epoch's evaluation (2026-12-08); carried with its facts and IMP masks"),
    Target("table2-mnist", "table2-mnist", "full", (("001", "Table 2: FC rows"), ("001", "Table 2: FC Adam at 3e-4")),
           5, 5, "2.3-4 h at 5 seeds"),
    Target("routing", "routing", "reduced", tuple(("003", i) for i in (
        "Fig 8 iii", "Fig 8 iv", "Fig 9 i", "Fig 9 ii", "Fig 7d, 10 ii", "Fig 10 iii", "Fig 7b, 8 i")), 3, 8,
        "2.3 h at 3 seeds here; 8 seeds about 6 h"),
    Target("routing-m100", "routing", "reduced-m100", tuple(("003", i) for i in ("Fig 7c, 8 ii", "Fig 10 i")), 3, 5,
           "M=100 at the reduced scale: hours on a CPU (the dry run prices it)"),
    Target("figure3-left", "", "", (("001", "Fig 3 left"),), 3, 5,
           "the left panel at the reduced scale (GCONV, 2,000/1,000 CIFAR-10 images): about half an hour a seed on a CPU",
           ("gatelab.papers.npf", "figure3", "--scale", "reduced", "--panels", "left", "--left-seeds", "{seeds}",
            "--runs", "{runs}", "--out", "{out}", "data.root={data}", "progress=false"), "figure3-reduced",
           "figure3-reduced"),
    Target("exp6", "exp6", "reduced", (("002", "Experiment 6"),), 3, 5, "1.6 h at 3 seeds"),
    Target("table4", "table4", "conv-reduced", (("002", "Table 4 (experiment 7)"),), 5, 5, "4.3 h at 5 seeds"),
    Target("table2-conv", "table2", "conv-reduced", (("001", "Table 2: CIFAR-10 rows"),), 5, 5, "16 h at 5 seeds"),
)
NOT_BUILT: dict[str, str] = {}  # items whose runs no command can yet draw on held-out seeds (none left)
