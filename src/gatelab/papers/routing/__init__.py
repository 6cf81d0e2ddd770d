"""Paper 003, "The Neural Race Reduction": the routing experiments (Figs 7b-d, 8, 9, 10; App. D).

``python -m gatelab.papers.routing table --runs outputs/routing-reduced --out outputs/reports/routing-reduced``
``python -m gatelab.papers.routing toy --out outputs/reports/routing-toy`` (Figs 3-6, :mod:`gatelab.papers.routing.toy`)
``python -m gatelab.papers.routing backbone`` (a ResNet-20 for the CIFAR task, :func:`gatelab.papers.routing.backbone_training.train_resnet20`)

Reads the runs of ``arch=routing`` (``+experiment=routing_reduced`` or ``routing_paper``) and lays
out, per task (dataset, regime, M) and K, the error (1 − accuracy) and the loss on the trained and
on the untrained (input, output) domain pairs of the test set at the last epoch, mean ± standard
error over seeds (as the paper reports), against K/M; the same against the initialisation gain;
and the smallest K/M at which the untrained error comes within 2 s.e. of the trained error (the
paper: about 40% for linear nets, Figs 5c, 7b-c; about 25% with leaky ReLU, Fig 9).
``isolation`` (:mod:`gatelab.papers.routing.isolation`): that threshold per setting, one factor
(M, epochs, images, step size) changed at a time.
"""
from __future__ import annotations

import sys
from pathlib import Path

from gatelab.papers import plotting, report
from gatelab.papers.routing.table import (  # noqa: F401
    METRICS, PAPER_ZERO_SHOT, PLATEAU_FRACTION, LEARNED_BELOW, scan, plateau_exit,
    GROUP, table, SWEEP, zero_shot_threshold, render, figures,
    write_table, write_toy, features, replot)
from gatelab.papers.routing.isolation import FACTORS, GAP_LEVEL, gap_crossing, isolation, write_isolation  # noqa: F401


def main(argv=None) -> None:
    ap, sub, t = report.paper_cli("python -m gatelab.papers.routing", __doc__, "table",
                                  "the routing table (routing.{md,csv}) and figures from the runs below --runs")
    ip = sub.add_parser("isolation", help="isolation.{md,csv}: the zero-shot threshold of each setting "
                        "changed one factor at a time (M, epochs, images, lr)")
    ip.add_argument("--runs", type=Path, required=True)
    ip.add_argument("--out", type=Path, required=True)
    ip.add_argument("--command", default="")
    t.add_argument("--keep", action="store_true", help="keep the lines of the previous routing.csv whose runs are "
                   "not below --runs (made on another machine, or pruned), with the previous provenance")
    plotting.add_replot(sub, {"reduced": None, "paper": None})
    tp = sub.add_parser("toy", help="Figs 3-6: the toy task and XoR against the reduced ODEs (about 20 s)")
    tp.add_argument("--out", type=Path, required=True)
    tp.add_argument("--seed", type=int, default=0, help="the seed of every random initialisation (default 0)")
    fp = sub.add_parser("features", help="cache the CIFAR backbone features of a config; print the backbone's accuracy")
    fp.add_argument("overrides", nargs="*", help="config overrides (dataset.routing.M=..., dataset.limit_train=...)")
    bp = sub.add_parser("backbone", help="train a ResNet-20 backbone (akamaster's recipe) into the data root, "
                        "for when resnet20-12fca82f.th is not at hand (GPU: 200 epochs)")
    bp.add_argument("--data", type=Path, default=None, help="data root holding cifar10.npz (default: $GATELAB_DATA)")
    bp.add_argument("--name", default=None, help="file name in the data root (default resnet20-gatelab-s<seed>.th)")
    bp.add_argument("--epochs", type=int, default=200)
    bp.add_argument("--device", default="cuda" if __import__("torch").cuda.is_available() else "cpu")
    bp.add_argument("--seed", type=int, default=0)
    bp.add_argument("--limit-train", type=int, default=None)
    bp.add_argument("--limit-test", type=int, default=None)
    args = ap.parse_args(argv)
    if args.what == "backbone":
        from gatelab.data.datasets import data_root
        from gatelab.papers.routing import backbone_training
        root = data_root(str(args.data) if args.data else None)
        name = args.name or f"resnet20-gatelab-s{args.seed}.th"
        info = backbone_training.train_resnet20(root, root / name, args.epochs, device=args.device, seed=args.seed,
                                       limit_train=args.limit_train, limit_test=args.limit_test)
        print(f"{root / name}: test accuracy {info['test_acc_resnet20_imagenet_norm']:.4f} (its own normalisation), "
              f"{info['test_acc_resnet20']:.4f} (raw [0,1] inputs, as the authors' code feeds it); "
              f"use it with dataset.routing.backbone={name}")
        return
    if args.what == "features":
        print(features(args.overrides))
        return
    if args.what == "replot":
        return plotting.replot("gatelab.papers.routing", argv, args, replot)
    if args.what == "isolation":
        write_isolation(args.runs, args.out, args.command)
        print((args.out / "isolation.md").read_text())
        return
    started = plotting.now()
    if args.what == "toy":
        print((args.out / "toy_summary.json").read_text() if write_toy(args.out, args.seed) else "")
        plotting.write_provenance(args.out, "gatelab.papers.routing", argv, {"toy": "paper parameters",
                                                                              "seed": args.seed}, started)
        return
    df = write_table(args.runs, args.out, args.command, args.keep)
    print((args.out / "routing.md").read_text())
    print(f"{len(df)} lines -> {args.out}/routing.*", file=sys.stderr)
    plotting.write_provenance(args.out, "gatelab.papers.routing", argv, {"runs": str(args.runs)}, started)
