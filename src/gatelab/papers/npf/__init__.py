"""Paper 001, "Neural Path Features and Neural Path Kernel" (NeurIPS 2020): Table 2 and Figure 3.

``python -m gatelab.papers.npf table2 --runs outputs/table2 --out outputs/reports/table2``
``python -m gatelab.papers.npf figure3 --scale quick --runs outputs/figure3-quick --out outputs/reports/figure3``
``python -m gatelab.papers.npf replot --scale paper --out outputs/reports/figure3-paper`` (redraw from the CSVs)

Table 2: best test accuracy (%) per run, mean ± std over seeds (``--ddof 1``, ours, by default;
``--ddof 0`` is ``np.std`` as the paper's code). Each row's experiment runs one step size, the
code's; where a cell ran several (``+experiment=sgd_sweep``, the paper's "best of {0.1, 0.01, 0.001}",
or the FC Adam row at 1e-4 and 3e-4) the table shows the one with the highest mean and a "Step sizes"
section lists them all; ``--lr OPT=LR`` keeps one.

Figure 3:
* left: continuous NPF learning. A ReLU GCONV (Adam, CIFAR-10) is checkpointed at 6 stages; FLNPF-k
  takes its gates from stage k. Reference lines: FRNPF-II, CNTK (77.43, published), ReLU.
* middle: ν_t = yᵀ Ĥ_t⁻¹ y, Ĥ = H/trace(H), H = NPK = Σ ⊙ Λ (Lemma 2.1), on n'=200 Binary-MNIST
  examples (100 per class) over the training of an FC ReLU net (w=100, d=5: 4 hidden layers).
* right: trace and Frobenius norm of Kᵛ and Kᶠ (NTK blocks, Prop 4.1) of a DLNPF FC net on MNIST,
  on 100 examples (10 per class), over training.
The training runs are ordinary gatelab runs (same loop, same run directories, skipped when done).
"""
from __future__ import annotations

import sys
from pathlib import Path

from gatelab.papers import plotting, report
from gatelab.papers.npf.table2 import (  # noqa: F401
    REGIMES, REGIME_TITLES, ROWS, PAPER_TABLE2, FIT, table2,
    step_sizes, gap, render_table2_markdown, render_table2_latex, write_table2)
from gatelab.papers.npf.figure3 import (  # noqa: F401
    CNTK_GCONV, SCALES, figure3_left_data, figure3_left_plot, figure3_middle_data, figure3_middle_plot,
    figure3_right_data, figure3_right_plot, FIGURE3, figure3, figure3_runs, replot)


def main(argv=None) -> None:
    ap, sub, t2 = report.paper_cli("python -m gatelab.papers.npf", __doc__, "table2", "Table 2: table2.{md,csv,tex} from the runs below --runs")
    t2.add_argument("--arch", nargs="*", default=None, help="only these architectures' rows (e.g. fc)")
    t2.add_argument("--lr", nargs="*", default=[], metavar="OPT=LR",
                    help="only the runs of optimiser OPT at step size LR (e.g. adam=3e-4)")
    f3 = sub.add_parser("figure3", help="Figure 3 equivalents (trains what is missing)")
    f3.add_argument("--scale", default="quick", choices=sorted(SCALES))
    f3.add_argument("--panels", nargs="*", choices=sorted(FIGURE3), default=["middle", "right", "left"])
    f3.add_argument("--runs", default="outputs/figure3", help="out_root of the training runs")
    f3.add_argument("--left-seeds", default=None, help="the left panel's seeds, comma-separated (default: the scale's)")
    f3.add_argument("--out", type=Path, default=Path("outputs/reports/figure3"))
    f3.add_argument("overrides", nargs="*", help="extra config overrides for every run (e.g. data.root=...)")
    plotting.add_replot(sub, SCALES)
    args = ap.parse_args(argv)
    if args.what == "table2":
        lrs = {k: float(v) for k, v in (item.split("=", 1) for item in args.lr)}
        df = write_table2(args.runs, args.out, args.seeds, args.command, args.arch, args.ddof, lrs)
        report.add_note(args.out / "table2.md", args.note)
        print((args.out / "table2.md").read_text())
        print(f"{len(df)} cells -> {args.out}/table2.*", file=sys.stderr)
        return
    if args.what == "replot":
        return plotting.replot("gatelab.papers.npf", argv, args, replot)
    started = plotting.now()
    scale = SCALES[args.scale]
    if args.left_seeds:
        scale = {**scale, "left": {**scale["left"], "seeds": [int(x) for x in args.left_seeds.split(",")]}}
    frames = figure3(args.panels, scale, [f"out_root={args.runs}", *args.overrides], args.out)
    for panel, df in frames.items():
        print(f"figure3 {panel} ({args.scale}):\n{df.to_string(index=False)}\n")
    plotting.write_provenance(args.out, "gatelab.papers.npf", argv, scale, started)
