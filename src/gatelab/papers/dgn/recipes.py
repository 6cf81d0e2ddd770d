"""Paper 002's recipes: Table 4 (DLN, ReLU, soft-ReLU over beta x eps on CIFAR-10), the figures
(1-4: Gram spectra and convergence against depth; 7-8: Binary-MNIST gates; 10: experiment 8), experiment 6 (only the
gates of a CIFAR-10 conv net train; published 56%). ``python -m gatelab reproduce table4 --dry-run``."""
from __future__ import annotations

from gatelab.launch.recipes import Options, Recipe, recipe
from gatelab.papers.dgn.table4 import TABLE4_BETAS
from gatelab.papers.npf.recipes import CONV_NOTE, CPU_NOTE


def _report(runs: str, out: str, *extra: str) -> list[str]:
    return ["gatelab.papers.dgn", "table4", "--runs", runs, "--out", out, "--command", "{command}", *extra]


CPU_EPOCHS = 6  # Table 4 at conv_cpu's 2,000 images: 6 epochs (375 steps), not its 4, nearer "trained to fit"


@recipe("table4", ("paper", "quick", "conv-reduced", "conv-reduced-grid", "conv-cpu"),
        "Table 4 of paper 002: DLN, ReLU and soft-ReLU beta x eps, 5 seeds, CIFAR-10 VCONV")
def table4(o: Options) -> Recipe:
    """``conv-reduced`` (one GPU's minutes) and ``conv-cpu`` (a 2-core CPU's hours, fp32, 2,000/1,000
    images, :data:`CPU_EPOCHS` epochs): DLN and ReLU, and soft-ReLU at beta in {1, 4, 16}, eps=0.1 (the
    paper's 59, 68, 72), 5 seeds at conv-reduced (the paper's), 3 at conv-cpu: enough for the order of beta (verdicts), not for the whole grid.
    ``conv-reduced-grid``: conv-reduced with the whole grid (beta in :data:`TABLE4_BETAS` x eps 0.1, 0.4), in its
    folders: its 5 networks are the same runs, so the grid adds 13 networks to the same report."""
    grid = o.scale == "conv-reduced-grid"
    if o.scale in ("conv-reduced", "conv-reduced-grid", "conv-cpu"):
        scale_name = "conv-reduced" if grid else o.scale
        root, scale = f"outputs/table4-{scale_name}", scale_name.replace("-", "_")
        cpu = [f"epochs={CPU_EPOCHS}"] if o.scale == "conv-cpu" else []
        note = (CONV_NOTE if scale_name == "conv-reduced" else CPU_NOTE.replace("4 epochs", f"{CPU_EPOCHS} epochs")) + \
            (f", {o.epochs} epochs" if o.epochs else "")
        runs = [[f"+experiment=[table4,{scale}]", "regimes=[dln,relu]", *cpu, f"out_root={root}"],
                [f"+experiment=[table4_soft,{scale}]", "regime.beta=" + (",".join(f"{b:g}" for b in TABLE4_BETAS) if grid
                 else "1,4,16"), "regime.eps=" + ("0.1,0.4" if grid else "0.1"), *cpu, f"out_root={root}"]]
        return Recipe("table4", f"Table 4, {o.scale}", runs, reports=[_report(
            root, f"outputs/reports/table4-{scale_name}", "--seeds", "3" if o.scale == "conv-cpu" else "5",
            "--note", note)])
    quick = o.scale == "quick"
    root = "outputs/table4-quick" if quick else o.root("outputs/table4")
    suffix = ",quick_table4" if quick else ""
    runs = [[f"+experiment=[table4{suffix}]", f"out_root={root}"],
            [f"+experiment=[table4_soft{suffix}]", f"out_root={root}"]]
    extra = ["--note", "reduced scale: conf/experiment/quick_table4.yaml"] if quick else []
    return Recipe("table4", "Table 4 of paper 002", runs, reports=[_report(
        root, "outputs/reports/table4-quick" if quick else "outputs/reports/table4", *extra)])


@recipe("dgn-figures", ("quick", "paper"), "Figures 1-4, 7-8 and 10 of paper 002")
def dgn_figures(o: Options) -> Recipe:
    """Figures 7-8's runs are priced (``figure7_8_runs``); Figures 1-4 and 10 train no runs (random nets and
    gradient descent inside the command) and are not."""
    from gatelab.papers.dgn.adaptable_gates import FIG7_SCALES, figure7_8_runs
    data = [f"data.root={o.data}"] if o.data else []
    return Recipe("dgn-figures", "paper 002's figures", figure_runs=figure7_8_runs(
        FIG7_SCALES[o.scale], [f"out_root=outputs/dgn7-{o.scale}", *data]), figures=[
        ["gatelab.papers.dgn", "figures1-4", "--scale", o.scale, "--out", "outputs/reports/dgn-figures"],
        ["gatelab.papers.dgn", "figure10", "--out", "outputs/reports/dgn-figures"],
        ["gatelab.papers.dgn", "figures7-8", "--scale", o.scale, "--runs", f"outputs/dgn7-{o.scale}",
         "--out", "outputs/reports/dgn-figures", *data],
        *([["gatelab.papers.dgn", "figure2", "--nets", "1000", "--out", "outputs/reports/dgn-figure2-nets"]]
          if o.scale == "paper" else [])])


@recipe("exp6", ("paper", "reduced"), "Experiment 6 of paper 002: only the gates of a CIFAR-10 VCONV train (published: 56%)")
def exp6(o: Options) -> Recipe:
    """``paper``: all images, 60 epochs (the paper gives none), seed 0 (``--seeds`` for more; a GPU);
    ``reduced``: this CPU's scale, the first 10000/2000 images, 5 epochs, seeds 0-2 (issue #39: 3 seeds)."""
    root = o.root("outputs/exp6") if o.scale == "paper" else "outputs/exp6-reduced"
    # the gates-only net, and the deep linear and ReLU nets of the same scale its claim is read against
    run = ["dataset=cifar10", "arch=vconv", "regime=gates_only,dln,relu", "optimizer=adam", f"out_root={root}"]
    run += ["epochs=60"] if o.scale == "paper" else ["epochs=5", "dataset.limit_train=10000", "dataset.limit_test=2000",
                                                    "seeds=[0,1,2]"]
    out = "outputs/reports/exp6" if o.scale == "paper" else "outputs/reports/exp6-reduced"
    return Recipe("exp6", "experiment 6", [run], reports=[[
        "gatelab.papers.dgn", "exp6", "--runs", root, "--out", out, "--command", "{command}"]])


@recipe("dgn-figure5", ("paper", "reduced"), "Figure 5 of paper 002: ReLU against GaLU on MNIST, random labels and pixels")
def dgn_figure5(o: Options) -> Recipe:
    """``paper``: every image, 100 epochs (the paper gives none); ``reduced``: 5000/2000 images, 40 epochs."""
    root = o.root("outputs/dgn-fig5") if o.scale == "paper" else "outputs/dgn-fig5-reduced"
    exp = "+experiment=dgn_fig5" if o.scale == "paper" else "+experiment=[dgn_fig5,dgn_fig5_reduced]"
    out = "outputs/reports/dgn-fig5" if o.scale == "paper" else "outputs/reports/dgn-fig5-reduced"
    return Recipe("dgn-figure5", "paper 002 Fig 5", [[exp, "dataset.corrupt=none,labels,pixels", f"out_root={root}"]],
                  reports=[["gatelab.papers.dgn", "figure5", "--runs", root, "--out", out, "--command", "{command}"]])
