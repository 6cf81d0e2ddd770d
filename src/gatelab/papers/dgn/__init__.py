"""Paper 002, "Deep Gated Networks": Table 4 and Figures 1-5, 7, 8, 10.

``python -m gatelab.papers.dgn table4 --runs outputs/table4 --out outputs/reports/table4``
``python -m gatelab.papers.dgn figures1-4 --scale quick --out outputs/reports/dgn-figures``
``python -m gatelab.papers.dgn figures7-8 --scale quick --runs outputs/dgn7-quick --out outputs/reports/dgn-figures``
``python -m gatelab.papers.dgn figure10 --out outputs/reports/dgn-figures`` (experiment 8, seconds)
``python -m gatelab.papers.dgn exp6 --runs outputs/exp6 --out outputs/reports/exp6`` (experiment 6's report)
``python -m gatelab.papers.dgn figure5 --runs outputs/dgn-fig5 --out outputs/reports/dgn-fig5`` (Fig 5's report)
``python -m gatelab.papers.dgn replot --scale paper --out outputs/reports/dgn-figures-paper`` (redraw from the CSVs)

* Table 4: CIFAR-10, Adam 3e-4, the VCONV-shaped conv net: DLN, ReLU and soft-ReLU for β × ε; mean
  over seeds of each run's best train and best test accuracy, beside the published values.
* Figures 1-3 (experiments 1-2): DGN with fixed random gates Ber(µ) (DGN-FRG) on x=1, y~U[-1,1],
  n=200: e.c.d.f of the Gram matrix K0/d against eq. (5), its entries, and GD convergence vs depth.
  Figure 4: the same for GaLU and ReLU networks on experiment 2's x ~ U([-1,1]²), n=100
  (``--inputs sphere10``: a variant on the unit sphere of R^10).
* Figures 7-8 (experiments 3-5): Binary-MNIST, adaptable vs frozen and learned vs random gates, and
  ν_t = yᵀ H_t⁻¹ y over training for the paper's four Gram choices (K̂, K̂ʷ, Kᵃ, K̂ᵃ).
* Figure 10 (experiment 8): a deep linear network on one example, K0 against depth (E[K0] = d) and
  the GD rate against the ideal 0.81.
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from gatelab.papers import plotting, report
from gatelab.papers.dgn.figures import (  # noqa: F401
    FRG_SCALES, FIG4_INPUTS, frg_network, ideal_frg_spectrum, frg_entries, frg_data, figure1_plot, figure2_plot,
    convergence_plot, figures1_4, fill_backwards, parts_made, PARTS)
from gatelab.papers.dgn.adaptable_gates import (  # noqa: F401
    FIG7_SCALES, FIG7_NETWORKS, NU_NETWORKS, figure7_8_data, figure7_plot, figure8_plot, figures7_8)
from gatelab.papers.dgn.figure10 import EXP8, exp8_data, exp8_summary, figure10  # noqa: F401
from gatelab.papers.dgn.replot import replot  # noqa: F401
from gatelab.papers.dgn.exp6 import PAPER_EXP6, exp6, write_exp6  # noqa: F401
from gatelab.papers.dgn.figure5 import PAPER_FIG5_TEST, figure5  # noqa: F401
from gatelab.papers.dgn.table4 import (  # noqa: F401
    TABLE4_BETAS, PAPER_TABLE4, table4, render_table4_markdown, write_table4)


def figure2_nets(args, argv, started: str) -> None:
    """Figure 2 alone over ``args.nets`` random nets per depth (the paper scale's depths, w=500)."""
    import torch
    scale = dict(FRG_SCALES["paper"], entry_runs=args.nets, seed=args.seed)
    entries = frg_entries(scale, torch.Generator().manual_seed(args.seed))
    plotting.save(figure2_plot(entries, scale), entries, args.out, "dgn_figure2")
    print(entries.to_string(index=False))
    plotting.write_provenance(args.out, "gatelab.papers.dgn", argv, scale, started)


def _figures1_4_options(f14) -> None:
    f14.add_argument("--kinds", nargs="*", choices=["frg", "galu", "relu"], default=["frg", "galu", "relu"],
                     help="DGN-FRG (Figs 1-3), GaLU and ReLU (Fig 4)")
    f14.add_argument("--fill-backwards", action="store_true",
                     help="a second worker beside a running figures1-4 of the same --out: train its missing nets "
                          "from the last back until it meets the first's, render nothing")
    f14.add_argument("--seed", type=int, default=0, help="the first run's index in each net's seed key (default 0; "
                     "the confirmation's fresh nets: 100)")
    f14.add_argument("--inputs", choices=sorted(FIG4_INPUTS), default="square",
                     help="Figure 4's inputs: " + "; ".join(f"{k}: {v}" for k, v in FIG4_INPUTS.items()))


def _fill_backwards(args) -> None:
    for kind in args.kinds:
        print(f"{kind}: {fill_backwards(FRG_SCALES[args.scale], kind, args.inputs, args.out / PARTS)} nets trained")


def _print_figures1_4(results: dict) -> None:
    for kind, res in results.items():
        final = res["convergence"].groupby(["width", "depth"]).err_ratio.last()
        print(f"{kind}: final ‖e_t‖²/‖e_0‖² by (width, depth):\n{final.to_string()}\n")
        if kind == "frg":
            print(f"K0/d entries vs ideal:\n{res['entries'].to_string(index=False)}\n")


def _figures1_4(args) -> dict:
    """Figs 1-4 from ``args.seed``; the scale PROVENANCE.md gives, with the CPUs that made its nets (nets carried
    in git from other sessions' machines too)."""
    scale = {**FRG_SCALES[args.scale], **({"first_run": args.seed} if args.seed else {})}
    _print_figures1_4(figures1_4(scale, args.out, args.kinds, args.inputs))
    cpus = Counter(m.get("cpu", "not recorded") for m in parts_made(scale, args.out / PARTS, args.kinds, args.inputs))
    return {**scale, "nets made on": dict(cpus)}


def _figures7_8_options(p) -> None:
    p.add_argument("--runs", default="outputs/dgn7", help="out_root of the training runs")
    p.add_argument("--seed", type=int, default=0, help="the first seed (default 0): the scale's seeds run from it")
    p.add_argument("--seeds", type=int, default=None, help="how many seeds (default: the scale's)")


def main(argv=None) -> None:
    ap, sub, t4 = report.paper_cli("python -m gatelab.papers.dgn", __doc__, "table4", "Table 4: table4.{md,csv} from the runs below --runs")
    t4.add_argument("--no-controls", action="store_true", help="skip the untrained nets (the orderings' control: "
                    "one forward pass over the test images per seed of the networks tested)")
    f14 = sub.add_parser("figures1-4", help="Figures 1-4: Gram matrices and GD convergence vs depth")
    f78 = sub.add_parser("figures7-8", help="Figures 7-8: Binary-MNIST, adaptable / frozen / learned gates")
    for name, what in (("exp6", "Experiment 6: exp6.{md,csv} from the gates-only runs below --runs"),
                       ("figure5", "Figure 5: ReLU against GaLU on MNIST, random labels and pixels (figure5.*)")):
        e = sub.add_parser(name, help=what)
        e.add_argument("--runs", type=Path, required=True)
        e.add_argument("--out", type=Path, required=True)
        e.add_argument("--command", default="", help="the command that made the runs, for the provenance block")
    f2 = sub.add_parser("figure2", help="Figure 2 alone: the K0/d entries over --nets random nets per depth (the "
                        "paper scale's depths, w=500; issue #39's isolation of the number of nets)")
    f2.add_argument("--nets", type=int, default=1000)
    f2.add_argument("--seed", type=int, default=1)
    f2.add_argument("--out", type=Path, default=Path("outputs/reports/dgn-figure2-nets"))
    f10 = sub.add_parser("figure10", help="Figure 10 (experiment 8): a deep linear network on one example (seconds)")
    f10.add_argument("--out", type=Path, default=Path("outputs/reports/dgn-figures"))
    f10.add_argument("--seed", type=int, default=0, help="the seed of the nets' weights (default 0)")
    _figures1_4_options(f14)
    for p, scales in ((f14, FRG_SCALES), (f78, FIG7_SCALES)):
        p.add_argument("--scale", default="quick", choices=sorted(scales))
        p.add_argument("--out", type=Path, default=Path("outputs/reports/dgn-figures"))
    _figures7_8_options(f78)
    plotting.add_replot(sub, FRG_SCALES)
    f78.add_argument("overrides", nargs="*", help="extra config overrides for every run (e.g. data.root=...)")
    args = ap.parse_args(argv)
    if args.what == "table4":
        df = write_table4(args.runs, args.out, args.seeds, args.command, args.ddof, not args.no_controls)
        report.add_note(args.out / "table4.md", args.note)
        print((args.out / "table4.md").read_text())
        print(f"{len(df)} networks -> {args.out}/table4.*", file=sys.stderr)
        return
    if args.what == "replot":
        return plotting.replot("gatelab.papers.dgn", argv, args, replot)
    if args.what == "exp6":
        write_exp6(args.runs, args.out, args.command)
        return print((args.out / "exp6.md").read_text())
    if args.what == "figure5":
        figure5(args.runs, args.out, args.command)
        return print((args.out / "figure5.md").read_text())
    started = plotting.now()
    if args.what == "figure2":
        return figure2_nets(args, argv, started)
    if args.what == "figure10":
        print(figure10(args.out, seed=args.seed).to_string(index=False))
        return plotting.write_provenance(args.out, "gatelab.papers.dgn", argv, {**EXP8, "seed": args.seed}, started)
    if args.what == "figures1-4":
        if args.fill_backwards:
            return _fill_backwards(args)
        scale = _figures1_4(args)
    else:
        scale = {**FIG7_SCALES[args.scale], **({"first_seed": args.seed} if args.seed else {}),
                 **({"seeds": args.seeds} if args.seeds else {})}
        df = figures7_8(scale, [f"out_root={args.runs}", *args.overrides], args.out)
        print(df.groupby("network")[["train_acc", "test_acc"]].max().to_string())
    plotting.write_provenance(args.out, "gatelab.papers.dgn", argv, scale, started)
