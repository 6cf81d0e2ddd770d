"""Shared helpers of the papers' figures: each figure is written as PNG + PDF + the CSV of its data,
with a ``PROVENANCE.md`` line (command, commit, dates, device, scale) beside it."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from gatelab.core.results import device_name, git_commit  # noqa: E402


def save(fig, df: pd.DataFrame, out: Path, name: str) -> None:
    """``<out>/<name>.{png,pdf,csv}``; the PDF carries no creation date, so it is reproducible."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out / f"{name}.png", dpi=130)
    fig.savefig(out / f"{name}.pdf", metadata={"CreationDate": None})
    plt.close(fig)
    df.to_csv(out / f"{name}.csv", index=False, float_format="%.6g")


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def write_provenance(out: Path, prog: str, argv, scale: dict, started: str) -> None:
    """Append one line to ``<out>/PROVENANCE.md``: the command, commit, dates, device and scale."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    args = " ".join(argv if argv is not None else sys.argv[1:])
    with open(out / "PROVENANCE.md", "a") as f:
        f.write(f"- `python -m {prog} {args}`: commit {git_commit() or '?'}, {started} .. {now()}, "
                f"{device_name()}, scale {scale}\n")
