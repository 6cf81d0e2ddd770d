"""Shared helpers of the papers' figures: each figure is written as PNG + PDF + the CSV of its data,
with a ``PROVENANCE.md`` line (command, commit, dates, device, scale) beside it."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402
import pandas as pd  # noqa: E402

from gatelab.core.results import device_name, git_commit  # noqa: E402


STRICT = "GATELAB_STRICT_FIGURES"  # set (the test suite does): a figure with overlapping text is an error


def overlaps(fig) -> list[str]:
    """Text of one axes (title, axis labels, tick labels) drawn over another axes (a colour bar
    included): what a reader sees as clutter. Empty when the layout is clean."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [(ax, ax.get_window_extent(renderer)) for ax in fig.axes if ax.get_visible()]
    found = []
    for ax, box in boxes:
        # a tick label is drawn only when its tick lies within the view limits (its centre within the axes)
        xt = [t for t in ax.get_xticklabels() if box.x0 - 1 <= _centre(t, renderer)[0] <= box.x1 + 1]
        yt = [t for t in ax.get_yticklabels() if box.y0 - 1 <= _centre(t, renderer)[1] <= box.y1 + 1]
        for t in [ax.title, ax.xaxis.label, ax.yaxis.label, *xt, *yt]:
            if not (t.get_visible() and t.get_text()):
                continue
            tb = t.get_window_extent(renderer)
            for other, ob in boxes:
                if other is not ax and tb.overlaps(ob):
                    found.append(f"{t.get_text()!r} of axes {ax.get_title() or ax.get_label()!r} overlaps axes "
                                 f"{other.get_title() or other.get_label() or 'colour bar'!r}")
    return found


def _along(xy: np.ndarray, step: float = 2.0, most: int = 2000) -> np.ndarray:
    """Points every ``step`` pixels (at most ``most`` a segment) along a polyline in display
    coordinates, its finite vertices included; a non-finite vertex breaks the line, as matplotlib draws it."""
    ok = np.isfinite(xy).all(1)
    seg, valid = np.diff(xy, axis=0), ok[:-1] & ok[1:]
    starts, seg = xy[:-1][valid], seg[valid]
    n = np.clip(np.ceil(np.hypot(seg[:, 0], seg[:, 1]) / step), 1, most).astype(int)
    t = np.concatenate([np.arange(k) / k for k in n]) if len(n) else np.zeros(0)
    idx = np.repeat(np.arange(len(seg)), n)
    return np.concatenate([starts[idx] + t[:, None] * seg[idx], xy[ok]])


def _data_points(ax):
    """Display coordinates of the data an axes draws: points along its lines in data coordinates
    (segments as drawn, not only vertices; not the reference lines of axhline/axvline; lines with
    no line style as their markers), scatter points, bar tops. Filled bands are not data points."""
    pts = [_along(ax.transData.transform(line.get_xydata())) if line.get_linestyle() not in ("None", "", " ")
           else ax.transData.transform(line.get_xydata()) for line in ax.get_lines()
           if line.get_visible() and len(line.get_xydata()) and line.get_transform() == ax.transData]
    pts += [c.get_offset_transform().transform(c.get_offsets()) for c in ax.collections
            if isinstance(c, PathCollection) and c.get_visible() and len(c.get_offsets())]
    for patch in ax.patches:
        if patch.get_visible():
            b = patch.get_window_extent()
            pts.append(np.array([[b.x0, b.y1], [b.x1, b.y1], [(b.x0 + b.x1) / 2, b.y1]]))
    return np.concatenate(pts) if pts else np.zeros((0, 2))


def legend_over_data(fig) -> list[str]:
    """Legends drawn over the data of their own axes (a point, a stretch of line or a bar top inside
    the legend's box): the reader loses what is under them."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = []
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None or not leg.get_visible():
            continue
        box = leg.get_window_extent(renderer)
        pts = _data_points(ax)
        inside = ((pts[:, 0] > box.x0) & (pts[:, 0] < box.x1) & (pts[:, 1] > box.y0) & (pts[:, 1] < box.y1)).sum()
        if inside:
            found.append(f"the legend of axes {ax.get_title() or ax.get_label()!r} covers {int(inside)} data point(s)")
    return found


def caption(fig, paper: str, figure: str, detail: str = "") -> None:
    """The figure's title: which paper figure it stands for and what made it (scale, runs, seeds)."""
    fig.suptitle(f"Paper {paper}, {figure}" + (f": {detail}" if detail else ""), fontsize=10)


def _centre(text, renderer) -> tuple[float, float]:
    b = text.get_window_extent(renderer)
    return (b.x0 + b.x1) / 2, (b.y0 + b.y1) / 2


def save(fig, df: pd.DataFrame, out: Path, name: str) -> None:
    """``<out>/<name>.{png,pdf,csv}``; the PDF carries no creation date, so it is reproducible. A
    figure whose text overlaps another axes, or whose legend covers its data, is reported (an error
    under ``$GATELAB_STRICT_FIGURES``)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if fig.get_layout_engine() is None:  # constrained layouts (colour bars) place themselves
        fig.tight_layout()
    clutter = overlaps(fig) + legend_over_data(fig)
    if clutter:
        message = f"{name}: " + "; ".join(clutter[:3]) + (f" (+{len(clutter) - 3} more)" if len(clutter) > 3 else "")
        if os.environ.get(STRICT):
            plt.close(fig)
            raise ValueError(message)
        print(f"warning: {message}", file=sys.stderr)
    fig.savefig(out / f"{name}.png", dpi=130)
    fig.savefig(out / f"{name}.pdf", metadata={"CreationDate": None})
    plt.close(fig)
    df.to_csv(out / f"{name}.csv", index=False, float_format="%.6g")


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def write_provenance(out: Path, prog: str, argv, scale: dict, started: str) -> None:
    """The line of this command in ``<out>/PROVENANCE.md``: the command, commit, device and scale
    (the runs' results.json keep their own dates). A rerun of the same command replaces its line, so
    re-rendering the same runs with the same code rewrites the same bytes; other commands' lines stay."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    args = " ".join(argv if argv is not None else sys.argv[1:])
    head = f"- `python -m {prog} {args}`:"
    line = f"{head} commit {git_commit() or '?'}, {device_name()}, scale {scale}"
    path = out / "PROVENANCE.md"
    lines = path.read_text().splitlines() if path.is_file() else []
    kept = [x for x in lines if not x.startswith(head)]
    at = next((i for i, x in enumerate(lines) if x.startswith(head)), len(kept))
    kept.insert(min(at, len(kept)), line)
    path.write_text("\n".join(kept) + "\n")


def add_replot(sub, scales) -> None:
    """The ``replot`` subcommand of a paper's CLI: redraw a report directory's figures from their CSVs."""
    rp = sub.add_parser("replot", help="redraw the figures of a report directory from their CSVs (no training)")
    rp.add_argument("--out", type=Path, required=True, help="the report directory holding the figures' CSVs")
    rp.add_argument("--scale", default="quick", choices=sorted(scales), help="the scale the figures were made at")


def replot(prog: str, argv, args, redraw) -> None:
    """Run ``redraw(out, scale)`` for the ``replot`` subcommand and record it in PROVENANCE.md."""
    done = redraw(args.out, args.scale)
    print("redrawn:", ", ".join(done) or "nothing (no CSV of a figure found)")
    if done:
        write_provenance(args.out, prog, argv, {"redrawn from the CSVs": done, "scale": args.scale}, "")
