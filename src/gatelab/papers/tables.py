"""One table renderer for the reports (issue #50 §3), on pandas: a frame of display cells becomes Markdown
(``DataFrame.to_markdown``, through tabulate), LaTeX (``Styler.to_latex``, through jinja2) and CSV (``to_csv``).

A paper's code builds the frame (the composite cells, such as ``ours<br>paper<br>Δ``, are its strings) and this
module writes it; the page (``gatelab page``) also writes, beside every report CSV, its LaTeX twin
(:func:`tex_beside`; a report's own ``.tex``, Table 2's in the paper's layout, is left as it is), so that every
report has ``.md``, ``.csv`` and ``.tex``. Numbers are written as the CSV
holds them: the renderer never rounds.
"""
from __future__ import annotations

import hashlib
import inspect
from functools import lru_cache
from pathlib import Path
from typing import Optional

import pandas as pd


def markdown(frame: pd.DataFrame) -> str:
    """A pipe table of the frame's cells as they are (no number parsing: "0.10" stays "0.10"), unpadded (``| a | b |``,
    ``|---|---|``) so that a report's diff shows the cells that changed, not the columns that widened."""
    bar = "\x00"  # a cell's own "|" is escaped (\\|), not taken for a column
    cells = frame.astype(object).where(frame.notna(), "").astype(str).map(lambda c: c.replace("|", bar))
    cells.columns = [str(c).replace("|", bar) for c in cells.columns]
    text = cells.to_markdown(index=False, tablefmt="pipe", disable_numparse=True)
    lines = []
    for i, line in enumerate(text.splitlines()):
        parts = [c.strip().replace(bar, "\\|") for c in line.strip()[1:-1].split("|")]
        lines.append("|" + "|".join("---" for _ in parts) + "|" if i == 1 else "| " + " | ".join(parts) + " |")
    return "\n".join(lines)


def lines(header: list, rows: list) -> list[str]:
    """The lines of the Markdown table of ``rows`` (lists of cells, written as ``str`` gives them; a newline inside
    a cell becomes a space) under ``header``: :func:`markdown` for tables built row by row."""
    clean = [[str(c).replace("\n", " ") for c in r] for r in rows]
    return markdown(pd.DataFrame(clean, columns=[str(h) for h in header], dtype=object)).splitlines()


def latex(frame: pd.DataFrame, caption: str = "") -> str:
    """A booktabs table (``\\toprule``...) of the frame's cells, LaTeX's special characters escaped; a Markdown
    ``<br>`` inside a composite cell becomes a line break (``\\newline``)."""
    cells = frame.astype(object).where(frame.notna(), "").astype(str)
    styler = cells.style.hide(axis="index").format(escape="latex").format_index(escape="latex", axis=1)
    text = styler.to_latex(hrules=True, caption=caption or None, position_float="centering" if caption else None,
                           environment="table" if caption else None)
    return text.replace("<br>", r" \newline ")


def write(frame: pd.DataFrame, out: Path, name: str, caption: str = "",
          numbers: Optional[pd.DataFrame] = None) -> str:
    """``<out>/<name>.tex`` of ``frame`` and ``<out>/<name>.csv`` of ``numbers`` (the frame itself when None);
    returns the Markdown table for the report's page."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (numbers if numbers is not None else frame).to_csv(out / f"{name}.csv", index=False)
    tex = latex(frame, caption)
    (out / f"{name}.tex").write_text(tex if tex.endswith("\n") else tex + "\n")
    return markdown(frame)


TWIN = "% gatelab: the cells of "  # the first line of a CSV's LaTeX twin; a .tex without it is its report's own


def _stamp(csv: Path) -> str:
    """A twin's first line: the CSV's name and a hash of its bytes and of this renderer, all that the twin is made
    of: an equal line is an equal twin, so the page renders again only the twins of changed CSVs (rendering all 114
    took two thirds of the page's time)."""
    return f"{TWIN}{Path(csv).name} (sha1 {hashlib.sha1(Path(csv).read_bytes() + _renderer()).hexdigest()[:12]})"


@lru_cache(maxsize=1)
def _renderer() -> bytes:
    """The source of what makes a twin (read once a process)."""
    return (inspect.getsource(latex) + inspect.getsource(tex_of_csv)).encode()


def tex_of_csv(csv: Path) -> str:
    """The LaTeX twin of a report CSV: its cells as the CSV holds them (read as text, so nothing is re-rounded)."""
    frame = pd.read_csv(csv, dtype=str, keep_default_na=False)
    text = latex(frame, caption=f"{Path(csv).parent.name}/{Path(csv).name}")
    return f"{_stamp(csv)}\n" + (text if text.endswith("\n") else text + "\n")


def tex_beside(reports: Path, check: bool = False, full: bool = False) -> list[Path]:
    """Write ``<name>.tex`` beside every ``<name>.csv`` under ``reports`` (where it differs); with ``check``, write
    nothing and return the stale ones. A twin whose first line is its CSV's :func:`_stamp` is current unless ``full``
    (render every twin and compare its text: what the tests check)."""
    stale = []
    for csv in sorted(Path(reports).rglob("*.csv")):
        if {".parts", ".carried"} & set(csv.parts):  # a confirmation's kept nets and carried runs: no report's tables
            continue
        tex = csv.with_suffix(".tex")
        if tex.is_file():
            with tex.open() as f:
                first = f.readline().rstrip("\n")
            if not first.startswith(TWIN):
                continue  # the report wrote its own (Table 2's, in the paper's layout)
            if first == _stamp(csv) and not full:
                continue
        text = tex_of_csv(csv)
        if not tex.is_file() or tex.read_text() != text:
            stale.append(tex)
            if not check:
                tex.write_text(text)
    return stale
