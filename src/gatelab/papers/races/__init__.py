"""Paper 004, "It's Not a Lottery, It's a Race": Table 1 (Appendix G) and Figures 1, 3, 4, 5, 6, 7.

``python -m gatelab.papers.races table1 --runs outputs/races-quick --out outputs/reports/races-quick``
``python -m gatelab.papers.races figures --runs outputs/races-quick --out outputs/reports/races-quick``

Reads the runs of ``+experiment=race`` (one hidden layer of d ReLU neurons on CIFAR-10 airplane+cat
vs automobile+bird, SGD 1e-3 momentum 0.9, batch 4) and their checkpoints; trains nothing.

* Table 1: per (σ₀, N) and τ ∈ {0.70, 0.95, 0.99}, the number k of clusters of neurons whose total
  weight vectors [w1, b1, w2] have cosine ≥ τ (single linkage), and the relative accuracy change
  Δacc = 100·(acc_merged − acc)/acc when every cluster is merged into one neuron
  (:func:`gatelab.analyses.neurons.merge`), on the training and the test set. Mean ± std over seeds, with
  ddof 0 (what the paper's table looks like: 3 values, np.std) and ddof 1.
* Checks: pm1 against unit inputs, and the number of epochs, on the cell N=200, σ₀=1e-5.
* Isolation (``isolation``): which choice moves k at σ₀=1e-5, τ=0.95/0.99 (clustering rule, weight
  vector, input scale, epochs), one at a time (:mod:`gatelab.papers.races.isolation`); ``drop-isolation``:
  what moves Fig 1a's loss drop (the step size, i.e. the loss summed over the batch, and σ₀).
* Fig 1: the loss (drop step marked), the cosine matrix sorted by cluster (τ=0.99), a_α against
  cos δ̄_α early in training for the largest cluster, IMP-pruned weights per neuron at 50%.
* Fig 3a: k(τ=0.95) against N for several d (σ₀=1e-5); Fig 3b: k at init, just before the loss
  drop and at the end, both σ₀.
* Fig 4: a_α against cos δ̄_α at t=0 and early t; Spearman ρ(cos δ̄_α(early), log a_α(end)) and the
  slope of log(a_α(t)/a_α(0)) against cos δ̄_α (Thm 3.11: linear, exponential growth).
* Fig 5: IMP-pruned weights per neuron against early cos δ̄_α, at 20/50/70%, with Spearman ρ.
* Figs 6 and 7 (``figure6``, ``figure7``: :mod:`gatelab.papers.races.appendix`): the gradient ratio of
  the outgoing weights at init (App. B) and the stable-cell count against N (App. D); no runs.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from gatelab.papers import plotting, report
from gatelab.papers.races.table1 import (  # noqa: F401
    TAUS, SPARSITIES, DEFAULT, TRACE, PAPER_TABLE1, RaceRun, scan,
    run_data, net_at, step_checkpoints, loss_curve, DROP_FRACTION, drop_step,
    Rule, analyse, cell_lines, table1, STABLE_MAX_N, stable_cells, traced_drops,
    render_table1, write_table1)
from gatelab.papers.races import appendix
from gatelab.papers.races.isolation import drop_isolation, isolation, write_drop_isolation, write_isolation  # noqa: F401
from gatelab.papers.races.figures import (  # noqa: F401
    early_step, neuron_table, figure1, figure3, figure3_composition, figure3_lengths, figures4_5, main_runs,
    figures)


def main(argv=None) -> None:
    ap, sub, t1 = report.paper_cli("python -m gatelab.papers.races", __doc__, "table1",
                                   "Table 1: table1.{md,csv} from the runs below --runs")
    t1.add_argument("--data", default=None, help="data root (default: each run's data.root)")
    t1.add_argument("--epochs", type=int, default=None, help="the main table's epoch count (default: most common)")
    t1.add_argument("--linkage", choices=("single", "complete"), default="single",
                    help="cluster rule: connected components of cos >= tau (single) or complete linkage")
    t1.add_argument("--parts", default="w1,b1,w2", help="the total weight vector's parts (e.g. w1)")
    iso = sub.add_parser("isolation", help="isolation.{md,csv}: k at sigma_0=1e-5 under each choice, one at a time")
    iso.add_argument("--runs", type=Path, required=True)
    iso.add_argument("--out", type=Path, required=True)
    iso.add_argument("--data", default=None)
    iso.add_argument("--command", default="")
    dr = sub.add_parser("drop-isolation", help="drop_isolation.{md,csv}: Fig 1a's loss drop under each step size "
                        "and sigma_0, one at a time")
    dr.add_argument("--runs", type=Path, required=True)
    dr.add_argument("--out", type=Path, required=True)
    dr.add_argument("--data", default=None)
    dr.add_argument("--command", default="")
    f = sub.add_parser("figures", help="Figures 1, 3, 4, 5 from the runs below --runs (PNG, PDF, CSV)")
    f.add_argument("--runs", type=Path, required=True)
    f.add_argument("--out", type=Path, required=True)
    f.add_argument("--data", default=None)
    f.add_argument("--early", type=int, default=None, help="the early step (default: last checkpoint ≤ drop/4)")
    appendix.add_parsers(sub)
    args = ap.parse_args(argv)
    if args.what in appendix.COMMANDS:
        return appendix.run(args, argv)
    if args.what == "table1":
        df = write_table1(args.runs, args.out, args.command, args.data, args.epochs,
                          Rule(args.linkage, tuple(args.parts.split(","))))
        print((args.out / "table1.md").read_text())
        print(f"{len(df)} lines -> {args.out}/table1.*", file=sys.stderr)
        return
    if args.what == "isolation":
        write_isolation(args.runs, args.out, args.command, args.data)
        print((args.out / "isolation.md").read_text())
        return
    if args.what == "drop-isolation":
        write_drop_isolation(args.runs, args.out, args.command, args.data)
        print((args.out / "drop_isolation.md").read_text())
        return
    started = plotting.now()
    res = figures(args.runs, args.out, args.data, args.early)
    print(json.dumps(res["figure1"], indent=1))
    print(res["figures4_5"].to_string(index=False))
    plotting.write_provenance(args.out, "gatelab.papers.races", argv, {"runs": str(args.runs), "early": args.early},
                              started)
