"""What reproduces: one generated page, ``outputs/reports/README.md``, with a row per table, figure and
numbered experiment of the four papers (``python -m gatelab page``, ``make page``).

Each paper's package lists its items in ``verdicts.py`` (``ITEMS``): the item, what it shows, and a
function that reads the committed reports (their CSVs, JSON summaries and PROVENANCE files, never the
runs) and returns the row: the report and scale it ran at, its runs, ours against the paper's number,
and the verdict by the one rule (:func:`gatelab.papers.claims.published`) or, for figures without published
numbers, the feature compared ("qualitative: agrees / differs"). ``docs/papers.md`` lists the same items
(its section "Every table, figure and experiment"); a test holds the two together.

The page also refreshes the generated blocks of the reports' prose (``<!-- generated: NAME -->`` ..
``<!-- end: NAME -->``), so a sentence that compares ours with the paper is rewritten from its CSV.
"""
from __future__ import annotations

from dataclasses import replace

import argparse
import sys
import re
from pathlib import Path
from typing import Callable, Optional

from gatelab.papers import rows as rows_mod, tables
from gatelab.papers.dgn import figures as frg, verdicts as dgn
from gatelab.papers.npf.figure3 import MIDDLE_DENSE, MIDDLE_EXAMPLES
from gatelab.papers.npf import verdicts as npf
from gatelab.papers.races import verdicts as races
from gatelab.papers.routing import verdicts as routing
from gatelab.papers.rows import Item, Row

REPORTS = Path("outputs/reports")
PAGE = "README.md"
SCALES = rows_mod.SCALES


def alias(row: Callable[[Path], Row], why: str) -> Callable[[Path], Row]:
    """An item that is another paper's experiment: that row, with ``why`` saying so."""
    def same(root: Path) -> Row:
        r = row(root)
        r.why, r.shared = why, True
        return r
    return same


def items() -> list[Item]:
    """Every item of the four papers, each paper's in order; an experiment two papers share is read once."""
    same_001 = Item("001", "Figs 6-7", "memorisation network: ideal spectrum, e.c.d.f and error dynamics",
                    alias(dgn.figure1, f"the same experiment as paper 002's Figs 1-3 (µ={frg.MU:g}, σ=√(1/(µw)), "
                                       f"n={frg.N_EXAMPLES})"))
    same_002 = Item("002", "Fig 6", "ν_t = yᵀM̂_t⁻¹y of a ReLU net over training",
                    alias(npf.figure3_middle, "the same experiment as paper 001's Fig 3 middle (ReLU, "
                                              f"w={MIDDLE_DENSE[0]}, d={len(MIDDLE_DENSE) + 1}, Binary-MNIST, "
                                              f"n'={MIDDLE_EXAMPLES})"))
    return [*_before(npf.ITEMS, "Tables 1, 3-5; Figs 1, 2, 4, 5", same_001), *_before(dgn.ITEMS, "Fig 7 (experiments 3-5)",
                                                                                     same_002), *routing.ITEMS, *races.ITEMS]


def _before(items: list[Item], name: str, new: Item) -> list[Item]:
    """``items`` with ``new`` placed before the item called ``name``."""
    i = [it.item for it in items].index(name)
    return [*items[:i], new, *items[i:]]


FIRST_RUN = "first-run"  # the README's `python run.py`: its results.json, recorded by --record-run


def record_run(run_dir: Path, root: Path = REPORTS, command: str = "python run.py") -> Path:
    """Copy a run's ``results.json`` into ``<root>/first-run/`` with a PROVENANCE line: the README's
    sentence on what ``python run.py`` takes and reaches is generated from it. Refuses a malformed one."""
    import json
    from gatelab.core.results import load_results, skip_note
    res, why = load_results(Path(run_dir) / "results.json")
    if res is None:
        raise ValueError(skip_note(Path(run_dir) / "results.json", why or "there is none"))
    out = Path(root) / FIRST_RUN
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(res, indent=1) + "\n")
    env = res.get("env") or {}
    (out / "PROVENANCE.md").write_text(f"- `{command}`: commit {env.get('git_commit')}, finished {res.get('finished_at')}, "
                                       f"{env.get('device_name')}, from {Path(run_dir).name}\n")
    return out


def first_run_lines(root: Path) -> list[str]:
    from gatelab.core.results import load_results, skip_note
    p = Path(root) / FIRST_RUN / "results.json"
    if not p.is_file():
        return ["(no outputs/reports/first-run: `python -m gatelab page --record-run <run dir>`)"]
    res, why = load_results(p)
    if res is None:
        return [f"({skip_note(p, why)}: `python -m gatelab page --record-run <run dir>`)"]
    env, c = res.get("env") or {}, res["config"]
    return [f"On {env.get('device_name')} (commit {env.get('git_commit')}) its {c['epochs']} epochs took "
            f"{res['wall_time_s']:.0f} s and reached {100 * res['best_test_acc']:.2f}% test accuracy (epoch "
            f"{res['best_epoch']}; `outputs/reports/{FIRST_RUN}`)."]


def blocks() -> dict[tuple[str, str], Callable[[Path], list[str]]]:
    """(file under the reports root, block name) -> the lines of that generated block."""
    return {**dgn.BLOCKS, **races.BLOCKS}


AGREE = ("within", "qualitative: confirmed", "checked", "confirmed")
DIFFER = ("off", "qualitative: contradicted", "contradicted")
UNSHOWN = ("qualitative: not shown", "not shown", "borderline")
OUTCOMES = ("confirmed", "contradicted", "not shown", "not comparable", "rule after results")  # the tally's order


def outcome(r: Row) -> str:
    """confirmed / contradicted / not shown / not comparable / rule after results / not run / n/a
    (gatelab.papers.outcomes): a tally ("8 of 10 within") confirms only when every count is whole; a borderline
    verdict (within only by the 0.5 floor, or at the edge of a tolerance or cap) is not shown; a verdict by claims
    not pre-registered by the runs behind it is not counted (gatelab.papers.preregistration)."""
    if r.scale in ("none", "n/a", "test"):  # an identity checked by the test suite is never an outcome
        return {"none": "not run", "n/a": "n/a", "test": "identity"}[r.scale]
    if r.registration is not None and r.registration.after:
        return "rule after results"
    if r.verdict.startswith(UNSHOWN):
        return "not shown"
    if r.verdict.startswith("not comparable"):
        return "not comparable"
    tallies = re.findall(r"(\d+) of (\d+) within", r.verdict)
    if tallies and not r.verdict.startswith(AGREE + DIFFER):
        return "confirmed" if all(a == b for a, b in tallies) else "contradicted"
    if r.verdict.startswith(AGREE):
        return "confirmed"
    return "contradicted" if r.verdict.startswith(DIFFER) else "not comparable"


def summary_lines(root: Path = REPORTS, link: str = "outputs/reports/README.md", got=None) -> list[str]:
    """The README's table of the papers: per paper, its items by scale and verdict (from :func:`rows`)."""
    got = rows(root) if got is None else got
    out = [f"What reproduces, item by item, with the numbers: [{link}]({link}) (generated from the reports' CSVs "
           "by `make page`). Per paper, its tables, figures and numbered experiments:", ""]
    cells = []
    for paper in ("001", "002", "003", "004"):
        mine = [r for it, r in got if it.paper == paper]
        at = [r for r in mine if r.scale == "paper"]  # an identity check (scale test) is not agreement
        late = [outcome(replace(r, registration=None)) for r in at if outcome(r) == "rule after results"]
        cells.append([f"{paper} {TITLES[paper]}", len(mine),
                      f"{len(at)}: {sum(outcome(r) == 'confirmed' for r in at)} / "
                      f"{sum(outcome(r) == 'contradicted' for r in at)} / {sum(outcome(r) == 'not shown' for r in at)}"
                      + (f" ({len(late)}: {late.count('confirmed')} / {late.count('contradicted')} / "
                         f"{late.count('not shown')})" if late else ""),
                      sum(r.scale in ('reduced', 'quick') for r in mine), sum(r.scale == 'none' for r in mine),
                      sum(r.scale == 'n/a' for r in mine)])
    return out + tables.lines(["paper", "items", "at the paper's scale: confirmed / contradicted / not shown (rule "
                               "after results: read today)", "reduced or quick only", "not run", "nothing to run"],
                              cells)


TITLES = {"001": "Neural Path Features and Neural Path Kernel (NeurIPS 2020)", "002": "Deep Gated Networks",
          "003": "The Neural Race Reduction (ICML 2022)", "004": "It's Not a Lottery, It's a Race"}


CONFIRM = "confirm"  # <reports>/confirm/<report>: the confirmation runs' reports (python -m gatelab confirm)


def rows(root: Path = REPORTS, confirmations: bool = True) -> list[tuple[Item, Row]]:
    """Every item's row, with the pre-registration of its declared claims against the results it read; an item's
    confirmation report (``<root>/confirm/``) replaces its exploratory one (``confirmations=False``: the
    exploratory rows alone, what :func:`gatelab.papers.confirm.needed` sizes the seeds from)."""
    from gatelab.papers import claims, preregistration
    out, fresh = [], Path(root) / CONFIRM
    for it in items():
        r = it.row(Path(root))
        again = it.row(fresh) if confirmations and fresh.is_dir() and r.scale not in ("n/a", "test") else None
        if again is not None and again.scale not in ("none", "n/a"):  # the confirmation report decides the item
            r = replace(again, report=f"{CONFIRM}/{again.report}", results=f"{CONFIRM}/{again.results}"
                        if again.results else "")
        path, ids = claims.declared_for(it.item, it.paper)
        if path is not None and r.results and r.scale not in ("none", "n/a"):
            r.registration = preregistration.check(path, ids, Path(root) / r.results, r.older, Path(root))
        elif r.scale not in ("none", "n/a", "test"):  # a result no declared claim and no results file can date
            r.registration = preregistration.Registration(None, None, True, "no declared claim or results file "
                                                          "to date it by" if path is None else "no results file")
        out.append((it, r))
    return out


def _unregistered(with_result: list) -> str:
    """What the rule-after-results items would count by today's declared rules (not counted: a reading, not a
    test, since each rule was declared after the numbers it judges)."""
    after = [r for r in with_result if outcome(r) == "rule after results"]
    if not after:
        return ""
    read = [outcome(replace(r, registration=None)) for r in after]
    said = {w: w for w in OUTCOMES[:4]}
    words = ", ".join(f"{read.count(w)} {said[w]}" for w in said if w in read)
    return (f" Read by today's rules without that mark, those {len(after)} would be: {words} (a reading, not a "
            "result: new runs committed after the claims decide them).")


def render(root: Path = REPORTS, got=None) -> str:
    """The page: a count per scale and verdict, then one table per paper (``got``: :func:`rows`, read once)."""
    got = rows(root) if got is None else got
    count = lambda pred: sum(1 for it, r in got if pred(r))  # noqa: E731
    # each experiment once (not its second paper's copy), identity checks apart from evidence of agreement
    with_result = [r for _, r in got if r.scale not in ("none", "n/a", "test") and not r.shared]
    shared, checks = count(lambda r: r.shared), count(lambda r: r.scale == "test")
    out = ["# What reproduces", "",
           "Generated by `python -m gatelab page` (`make page`) from the CSVs, JSON summaries and PROVENANCE "
           "files of the reports in this folder; nothing here is typed by hand. One row per table, figure and "
           "numbered experiment of the four papers (`docs/papers.md`).", "",
           "Every verdict has one of three outcomes (docs/reproducing.md, `gatelab.papers.outcomes`): **confirmed** "
           "(the paper's claim passes its declared test, Holm-corrected, and every control is shown: a control of "
           "no difference by equivalence within its margin, TOST), **contradicted** (the opposite is shown: an "
           "ordering significantly reversed, a difference significantly outside an equivalence margin, a threshold "
           "outside its interval, a published mean ± std more than max(2 paper-std, 0.5) away), **not shown** "
           "(neither: the row gives the power its test had; a borderline verdict, one that a tolerance or cap within "
           "its stated precision would flip, is not shown too). **not comparable**: a reduced-scale number not "
           "compared number for number, or no test possible. An item counts only when every run behind it started "
           "after its claim was committed, from a clean tree that descends from the claim's commit, on seeds no "
           "earlier run used (`gatelab.papers.preregistration`, read from the report's `runs.csv`); otherwise "
           "**rule after results**: shown, not counted. Scale: **paper** (the paper's settings), **reduced** / "
           "**quick** (smaller, labelled in the report), **test** (checked by the test suite), **none** (not run: "
           "the reason is given), **n/a** (a definition or an illustration).", "",
           f"- {len(got)} items: {count(lambda r: r.scale == 'paper')} at the paper's scale, "
           f"{count(lambda r: r.scale in ('reduced', 'quick'))} at a reduced or quick scale, "
           f"{count(lambda r: r.scale == 'test')} checked by tests, {count(lambda r: r.scale == 'none')} not run, "
           f"{count(lambda r: r.scale == 'n/a')} with nothing to run.",
           f"- Of the {len(with_result)} experiments with a result, each counted once ({shared} items are another "
           f"paper's experiment, shown under both; the {checks} identity check(s) of the test suite are not "
           "evidence of agreement and not counted): " +
           ", ".join(f"{sum(outcome(r) == w for r in with_result)} {w}" for w in OUTCOMES) +
           f" ({sum(outcome(r) != 'rule after results' for r in with_result)} outside rule after results)." +
           _unregistered(with_result), ""]
    for paper in ("001", "002", "003", "004"):
        cells = []
        for it, r in got:
            if it.paper != paper:
                continue
            link = f"[{r.report}]({r.report}/)" if r.report else ""
            reg = (r.registration.text() if r.registration is not None else "" if r.scale == "n/a" else
                   "an identity: never counted" if r.scale == "test" else "not run" if r.scale == "none" else
                   "rule in code (not yet declared as data)")
            cells.append([it.item, it.what, r.scale, link, r.runs, r.ours, r.paper, r.verdict, f"**{outcome(r)}**",
                          reg, r.why])
        out += [f"## Paper {paper}: {TITLES[paper]}", "", *tables.lines(
            ["item", "what", "scale", "report", "runs", "ours", "paper", "verdict", "outcome", "claims / results",
             "why / next"], cells), ""]
    return "\n".join(out)


BEGIN, END = "<!-- generated: {name} (python -m gatelab page) -->", "<!-- end: {name} -->"


def fill(text: str, name: str, lines: list[str]) -> str:
    """``text`` with its block ``name`` replaced by ``lines`` (the markers stay)."""
    begin, end = BEGIN.format(name=name), END.format(name=name)
    if begin not in text or end not in text:
        raise ValueError(f"no generated block {name!r} (markers {begin} .. {end})")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return head + begin + "\n" + "\n".join(lines) + "\n" + end + tail


def write(root: Path = REPORTS, check: bool = False, readme: Optional[Path] = None) -> list[str]:
    """Write the page and refresh every generated block (and the project README's table of the papers,
    ``readme``); with ``check``, write nothing and return the files that would change."""
    root, stale = Path(root), []
    got = rows(root)
    targets = {root / PAGE: render(root, got) + "\n"}
    if readme is not None and Path(readme).is_file():
        text = fill(Path(readme).read_text(), "papers", summary_lines(root, got=got))
        targets[Path(readme)] = fill(text, "first-run", first_run_lines(root))
    for (rel, name), make in blocks().items():
        path = root / rel
        if path.is_file():
            current = targets.get(path, path.read_text())
            targets[path] = fill(current, name, make(root))
    from gatelab.papers.dgn.table4 import tested_now
    for path in sorted(root.rglob("table4.md")):  # its verdict by the one interpreter, as the page reads it
        targets[path] = tested_now(path, targets.get(path, path.read_text()))
    for path, text in targets.items():
        if not path.is_file() or path.read_text() != text:
            stale.append(str(path))
            if not check:
                path.write_text(text)
    from gatelab.papers import tables
    return stale + [str(p) for p in tables.tex_beside(root, check)]  # every report CSV's LaTeX twin


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gatelab page", description=__doc__.split("\n\n")[0])
    ap.add_argument("--reports", type=Path, default=REPORTS, help="the reports root (default outputs/reports)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if the page or a block is stale")
    ap.add_argument("--readme", type=Path, default=None,
                    help="the project README whose table of the papers to refresh (default: ./README.md, and only "
                         "when --reports is this checkout's outputs/reports)")
    ap.add_argument("--record-run", type=Path, default=None, metavar="RUN_DIR",
                    help="first copy this run's results.json into <reports>/first-run (the README's `python run.py`)")
    ap.add_argument("--record-command", default="python run.py", help="the command that made --record-run's run")
    args = ap.parse_args(argv)
    if args.check and args.record_run:
        print("gatelab page: --check writes nothing, and --record-run writes the run into first-run/: give one",
              file=sys.stderr)
        return 2
    if not args.reports.is_dir():
        print(f"gatelab page: no reports folder {args.reports} (make a table first, e.g. `make table2-quick`)",
              file=sys.stderr)
        return 2
    if args.readme is None and args.reports.resolve() == REPORTS.resolve() and Path("README.md").is_file():
        args.readme = Path("README.md")  # the checkout's own reports: its README's table follows them
    if args.record_run:
        print("recorded: " + str(record_run(args.record_run, args.reports, args.record_command)))
    from gatelab.papers.preregistration import uncommitted_records
    if waiting := uncommitted_records(args.reports):
        print(f"gatelab page: {len(waiting)} run record(s) not committed ({', '.join(map(str, waiting[:3]))}"
              f"{', ...' if len(waiting) > 3 else ''}): the page reads committed reports only, so their items read "
              "'rule after results'; commit the reports, then run the page again", file=sys.stderr)
    stale = write(args.reports, args.check, args.readme)
    for s in stale:
        print(("stale: " if args.check else "wrote: ") + s)
    if not stale:
        print("up to date: " + str(args.reports / PAGE))
    return 1 if (args.check and stale) else 0
