"""Paper 003's recipes: the gated routing networks (the K sweep of the linear net, the gain sweep,
the leaky net, the rotated-input sweeps on MNIST and CIFAR-10), what moves the zero-shot threshold
(isolation), and the toy task's figures. ``python -m gatelab reproduce routing --dry-run``."""
from __future__ import annotations

from gatelab.launch.recipes import Options, Recipe, recipe

CIFAR_REDUCED = ["dataset.limit_train=5000", "dataset.limit_test=1000"]  # h=128 as MNIST: h=1024 is 96 s an epoch here


ROT = "dataset=routing_mnist_rot"


def _sweeps(exp: str, cifar: list[str], gain_k: list[str]) -> list[list[str]]:
    """The K sweep (linear), the gain sweep (at K=gain_k when given, else routing_gain's K=5), the
    leaky net, the rotated-input K sweeps on MNIST and CIFAR-10, and on rotated MNIST the leaky net
    (Fig 9 ii) and the gain sweep (Fig 10 iii)."""
    return [[f"+experiment={exp}"], [f"+experiment=[{exp},routing_gain]", *gain_k],
            [f"+experiment={exp}", "regime=leaky"], [f"+experiment={exp}", ROT],
            [f"+experiment={exp}", "dataset=routing_cifar_rot", *cifar],
            [f"+experiment={exp}", "regime=leaky", ROT], [f"+experiment=[{exp},routing_gain]", ROT, *gain_k]]


@recipe("routing", ("reduced", "reduced-m100", "paper"),
        "Paper 003's routing nets: K, gain, leaky and rotated-input sweeps (reduced-m100: M=100 at the reduced scale)")
def routing(o: Options) -> Recipe:
    if o.scale == "reduced-m100":  # Figs 7c, 8 ii, 10 i: M=100 (a step trains 5x the pairs of M=20 per K/M)
        root = "outputs/routing-reduced"
        runs = [["+experiment=routing_reduced", "dataset.routing.M=100", "dataset.routing.K=10,20,30,40,50,60,70,80,90"],
                ["+experiment=[routing_reduced,routing_gain]", "dataset.routing.M=100", "dataset.routing.K=10"]]
    elif o.scale == "reduced":  # MNIST 6000/1000, M=20, 15 epochs, 3 seeds
        root, runs = "outputs/routing-reduced", _sweeps("routing_reduced", CIFAR_REDUCED, [])
        # small gains leave their plateau later (about 1/gain for a 3-layer linear net): again at 100 epochs
        runs += [["+experiment=[routing_reduced,routing_gain]", "arch.init_gain=0.01,0.1", "epochs=100", *data]
                 for data in ([], [ROT])]
    else:  # M=40 and 100, 1000 epochs, 10 seeds (a GPU cluster)
        root, runs = "outputs/routing-paper", _sweeps("routing_paper", ["arch.dense=[1024]"], ["dataset.routing.K=10"])
        runs += [["+experiment=routing_paper", "dataset.routing.M=100", "dataset.routing.K=10,20,30,40,50,60,70,80,90"]]
    runs = [[*rs, f"out_root={root}"] for rs in runs]
    return Recipe("routing", "paper 003", runs, reports=[[
        "gatelab.papers.routing", "table", "--runs", root, "--out", f"outputs/reports/{root.split('/')[-1]}",
        "--keep", "--command", "{command}"]])


@recipe("routing-isolation", ("reduced", "leaky", "decoder", "decoder-rot"),
        "What moves the zero-shot threshold: M, epochs, images, step size one at a time (linear), then M=40 with "
        "more images; the leaky net's (Fig 9) by M, images and epochs; decoder: the decoders' init (paper's text "
        "against the authors' code), linear and leaky; decoder-rot: the same on MNIST rot/perm (issue #47)")
def routing_isolation(o: Options) -> Recipe:
    if o.scale in ("decoder", "decoder-rot"):  # per decoder against one (M, h, 10) Xavier tensor (the code), K/M 0.4-0.6
        recipe_runs, reports = [], []
        task, rot = ([ROT], "-rot") if o.scale == "decoder-rot" else ([], "")
        for regime, suffix in (("dln", ""), ("leaky", "-leaky")):
            root = f"outputs/routing-isolation-decoder{rot}{suffix}"
            recipe_runs += [["+experiment=routing_reduced", *task, f"regime={regime}", "dataset.routing.K=8,10,12",
                             f"arch.decoder_fan={fan}", f"out_root={root}"] for fan in ("per_decoder", "stacked3d")]
            reports.append(["gatelab.papers.routing", "isolation", "--runs", root, "--out",
                            f"outputs/reports/routing-isolation-decoder{rot}{suffix}", "--command", "{command}"])
        return Recipe("routing-isolation", "the decoders' initialisation, linear and leaky", recipe_runs,
                      reports=reports)
    if o.scale == "leaky":  # K/M 0.3, 0.4, 0.5: the leaky base's gap falls to 1 point between 0.4 and 0.5
        root, out = "outputs/routing-isolation-leaky", "outputs/reports/routing-isolation-leaky"
        runs = [["dataset.routing.K=6,8,10", *v] for v in ([], ["dataset.limit_train=18000"], ["epochs=30"])]
        runs += [["dataset.routing.M=40", "dataset.routing.K=12,16,20"]]
        runs = [["+experiment=routing_reduced", "regime=leaky", *rs, f"out_root={root}"] for rs in runs]
        return Recipe("routing-isolation", "the leaky net's zero-shot threshold", runs, reports=[[
            "gatelab.papers.routing", "isolation", "--runs", root, "--out", out, "--command", "{command}"]])
    root = "outputs/routing-isolation"
    variants = [[], ["dataset.limit_train=2000"], ["optimizer.lr=3e-3"], ["epochs=30"]]
    runs = [["dataset.routing.K=8,10", *v] for v in variants]
    runs += [["dataset.routing.M=40", "dataset.routing.K=16,20"],
             ["dataset.routing.M=40", "dataset.routing.K=16,20", "dataset.limit_train=12000"],
             ["dataset.routing.M=40", "dataset.routing.K=16", "dataset.limit_train=18000"]]
    runs = [["+experiment=routing_reduced", *rs, f"out_root={root}"] for rs in runs]
    return Recipe("routing-isolation", "zero-shot threshold isolation", runs, reports=[[
        "gatelab.papers.routing", "isolation", "--runs", root, "--out", "outputs/reports/routing-isolation",
        "--command", "{command}"]])


@recipe("routing-toy", ("paper",), "Paper 003 Figs 3-6: the toy task and XoR against the reduced ODEs (seconds)")
def routing_toy(o: Options) -> Recipe:
    return Recipe("routing-toy", "toy figures", figures=[["gatelab.papers.routing", "toy", "--out",
                                                          "outputs/reports/routing-toy"]])
