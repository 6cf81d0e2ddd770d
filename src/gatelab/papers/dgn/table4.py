"""Paper 002 Table 4 (see :mod:`gatelab.papers.dgn`), and the features of it a reduced scale can test.

Experiment 7's text ("for moderately high values of β ... comparable to ... standard ReLU") and its table
(test accuracy rises with β at ε = 0.1; the deep linear network far below ReLU) are declared as claims in
``dgn/claims.yaml`` and judged by :mod:`gatelab.papers.claims` on each network's per-seed best test
accuracy, each beside its control: an ordering, the same two networks untrained (no order either way); the
likeness (TOST, ±2 points), ReLU ≈ DLN, which must not be equivalent. The paper gives no std, so its own rows
cannot be tested. A network still learning at its end (:data:`gatelab.papers.claims.STILL`) leaves no verdict.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import pandas as pd

from gatelab.papers import claims, outcomes, report, tables


# ---- Table 4 ----

# (train, test) accuracy, fractions as published (mean of each run's best, 5 runs).
TABLE4_BETAS = [1, 2, 4, 8, 12, 16, 20, 24]
PAPER_TABLE4 = {("dln", None, None): (0.5042, 0.3939), ("relu", None, None): (0.99, 0.71)}
PAPER_TABLE4.update({("soft_relu", float(b), 0.1): (0.99, t) for b, t in zip(TABLE4_BETAS, [.59, .64, .68, .71, .71, .72, .72, .72])})
PAPER_TABLE4.update({("soft_relu", float(b), 0.4): (0.99, t) for b, t in zip(TABLE4_BETAS, [.56, .63, .68, .71, .71, .71, .71, .71])})


def _table4_key(r: report.Run):
    if r.regime == "soft_relu":
        return ("soft_relu", float(r.regime_cfg["beta"]), float(r.regime_cfg["eps"]))
    return (r.regime, None, None)


ITEM = "Table 4 (experiment 7)"  # the item of dgn/claims.yaml's Table 4 claims


def _name(key: tuple) -> str:
    return f"β={key[1]:g}, ε={key[2]:g}" if key[1] is not None else {"dln": "Deep linear network", "relu": "ReLU"}[key[0]]


def _claimed() -> set:
    """The networks a declared Table 4 claim reads (their untrained values are its controls)."""
    cells = {x for c in claims.of_item(claims.paper_claims("dgn"), ITEM) for x in c.cells}
    return {k for k in PAPER_TABLE4 if _cell(k) in cells}


def table4(runs: list[report.Run], expected_seeds: Optional[int] = None, ddof: int = 1,
           controls: bool = False) -> pd.DataFrame:
    """One line per network of Table 4: mean ± std over seeds of each run's best train and best test
    accuracy (%), beside the published values (CIFAR-10 / VCONV-shaped net / Adam runs only); each seed's
    best, and how much the seeds' mean best-so-far still rose over the last fifth of the epochs. With
    ``controls``, each seed's net of the networks :data:`CLAIMS` names, untrained (its initialisation:
    :func:`gatelab.papers.report.untrained_accuracy`), the orderings' negative control."""
    lines = []
    for key, (p_train, p_test) in PAPER_TABLE4.items():
        cell = [r for r in runs if r.row == ("vconv", "adam", "cifar10") and _table4_key(r) == key]
        done = report.completed_by_seed(cell)
        tr = report.mean_std([r.best_train for r in done.values()], ddof)
        te = report.mean_std([r.best for r in done.values()], ddof)
        untrained = {s: report.untrained_accuracy(r.path) for s, r in done.items()} if controls and key in _claimed() else {}
        lines.append({"network": _name(key), "regime": key[0], "beta": key[1], "eps": key[2], "n": len(done),
                      "train_mean": tr[0], "train_std": tr[1], "test_mean": te[0], "test_std": te[1], "ddof": ddof,
                      "paper_train": 100 * p_train, "paper_test": 100 * p_test, "diff_test": te[0] - 100 * p_test,
                      "best_per_seed": report.seed_text({s: r.best for s, r in done.items()}),
                      "rise_last_fifth": report.rise_at_end(done.values()),
                      "untrained_per_seed": report.seed_text(untrained),
                      "excluded": ";".join(sorted(f"{r.status}:seed{r.seed}" for r in cell if r.status != "completed")),
                      "epochs": report.joined(r.epochs for r in done.values()),
                      "limits": report.limits_text(done.values())})
    df = pd.DataFrame(lines)
    df.insert(df.columns.get_loc("excluded"), "short", df.n < (expected_seeds or max(1, df.n.max())))
    return df


def _cell(key: tuple) -> str:
    """A network's name in dgn/claims.yaml: dln, relu, beta<b> (soft-ReLU at ε = 0.1)."""
    return key[0] if key[1] is None else f"beta{key[1]:g}" if key[2] == 0.1 else f"beta{key[1]:g}-eps{key[2]:g}"


def feature_tests(df: pd.DataFrame) -> tuple[str, str]:
    """(verdict word, sentence) of Table 4's declared claims (``dgn/claims.yaml``, judged by
    :mod:`gatelab.papers.claims`) on a table4 frame: ``agrees`` / ``differs`` / ``no evidence``, ``still
    learning`` when a network named rose by :data:`~gatelab.papers.claims.STILL` points or more over its last
    fifth (the tests shown all the same), ``no result`` without 2 seeds of each network named or without the
    untrained controls."""
    lines = {_cell((line["regime"], None if pd.isna(line["beta"]) else float(line["beta"]),
                    None if pd.isna(line["eps"]) else float(line["eps"]))): line for _, line in df.iterrows()}
    declared = claims.of_item(claims.paper_claims("dgn"), ITEM)
    need = sorted({x for c in declared for x in (*c.cells, *(c.control.cells if c.control else ()))})
    names = {_cell(k): _name(k) for k in PAPER_TABLE4}
    short = [names.get(k, k) for k in need if k not in lines or lines[k]["n"] < 2]
    if short:
        return "no result", f"2 or more seeds of each network tested; short: {', '.join(short)}"
    trained = {k: list(report.per_seed(lines[k]).values()) for k in need}
    untrained = {k: list(report.per_seed(lines[k], "untrained_per_seed").values()) if "untrained_per_seed" in lines[k]
                 else [] for k in need}
    if any(len(untrained[x]) < 2 for c in declared if c.control and c.control.untrained for x in c.cells):
        return "no result", "the untrained controls are missing: render the report with them (the default)"
    word, text = outcomes.summary(claims.judge(declared, trained, untrained, names=names))
    rising = claims.still_learning({k: lines[k].get("rise_last_fifth") for k in need}, names)
    if rising:
        return "still learning", (f"no verdict: mean best-so-far still rising over the last fifth of the epochs "
                                  f"({', '.join(rising)} points; {claims.STILL:g} or more is still learning); the tests "
                                  f"as they stand: {text}")
    return word, text


TESTED = "## What the paper states, tested"


def tested(df: pd.DataFrame) -> list[str]:
    """The report's section of the declared claims and their outcome, by the one interpreter (the page's)."""
    word, text = feature_tests(df)
    return ["", TESTED, "",
            "The claims declared in `src/gatelab/papers/dgn/claims.yaml`: test accuracy rises with β at ε=0.1 (β=4 "
            "and β=16 above β=1), ReLU above the deep linear network, and β=16 comparable to ReLU (within ±2 points). "
            "A > B: one-sided Welch test; A ≈ B: TOST; Holm's correction over the four. Controls: each ordering's "
            "nets untrained must be shown equivalent within their declared margin (TOST), and ReLU ≈ DLN must not be "
            "equivalent (docs/reproducing.md). Outcomes: confirmed, contradicted, not shown (gatelab.papers.outcomes).",
            "", f"**{word}**: {text}"]


def tested_now(md: Path, text: str) -> str:
    """``text`` (a rendered ``table4.md``) with its tested section rendered anew from the CSV beside it, the rest
    kept: what :func:`gatelab.papers.page.write` writes, so that no report words a verdict the page does not."""
    if TESTED not in text or not (Path(md).parent / "table4.csv").is_file():
        return text
    head, rest = text.split(TESTED, 1)
    tail = rest[rest.index("\n## "):] if "\n## " in rest else ""
    return head.rstrip("\n") + "\n" + "\n".join(tested(pd.read_csv(Path(md).parent / "table4.csv"))[1:]) + "\n" + tail


def render_table4_markdown(df: pd.DataFrame, runs: list[report.Run], bad: list[str], command: str) -> str:
    scales = sorted({f"{e} epochs, examples train/test {lim}" for e, lim in zip(df.epochs, df.limits) if e})
    out = ["# Table 4 (paper 002): CIFAR-10, Adam 3e-4, ours vs published (%)", "",
           f"Mean ± {report.STATISTICS[int(df.ddof.iloc[0])]} over seeds of each run's best train accuracy "
           "(running mean over an epoch) and best test accuracy; n = completed seeds († fewer than the fullest "
           "network). Δ = ours − paper (test).", "",
           tables.markdown(pd.DataFrame([
               {"Network": line["network"], "train (ours)": report.fmt(line["train_mean"], line["train_std"]),
                "train (paper)": f"{line['paper_train']:.2f}",
                "test (ours)": f"**{report.fmt(line['test_mean'], line['test_std'])}**" + ("†" if line["short"] else ""),
                "test (paper)": f"{line['paper_test']:.2f}", "Δ test": report.signed(line["diff_test"]), "n": line["n"]}
               for _, line in df.iterrows()], columns=["Network", "train (ours)", "train (paper)", "test (ours)",
                                                       "test (paper)", "Δ test", "n"]))]
    out += tested(df)
    out += ["", "## Provenance", *report.provenance(runs, command, scales)]
    out += report.not_counted([(line["network"], line["excluded"]) for _, line in df.iterrows() if line["excluded"]],
                              bad)
    return "\n".join(out) + "\n"


def write_table4(runs_dir: Path, out_dir: Path, expected_seeds: Optional[int] = None, command: str = "",
                 ddof: int = 1, controls: bool = True) -> pd.DataFrame:
    runs, bad = report.scan_some(runs_dir)
    df = table4(runs, expected_seeds, ddof, controls)
    report.write_outputs(out_dir, "table4", df, {"md": render_table4_markdown(df, runs, bad, command)})
    return df


