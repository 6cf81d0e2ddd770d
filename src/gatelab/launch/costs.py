"""What a plan costs in time: net-steps left times the measured seconds per net-step of each
architecture on each device of ``conf/costs.yaml`` (``scripts/bench.py --record <device>`` writes
its measurements there). An estimate: the table's entries were measured at the papers' sizes with
the seeds stacked; a smaller net or another batch size runs at another speed."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import yaml

from gatelab.core.config import CONF_DIR

TABLE = Path(CONF_DIR) / "costs.yaml"


def load(path: Path = TABLE) -> dict:
    """{device: {"label": ..., "source": ..., <cost key>: seconds per net-step}}."""
    return yaml.safe_load(Path(path).read_text()) or {}


def key(cfg) -> str:
    """The cost table's name for a run's network: its architecture; an FC net of one hidden layer
    (paper 004's) is ``fc-1-hidden``. ``<key>/<regime>`` entries (``vconv/dlnpf``: two nets a step)
    take precedence over ``<key>``."""
    name = str(cfg.arch.name)
    if name == "fc" and len(cfg.arch.get("dense") or []) == 1:
        return "fc-1-hidden"
    return name


def per_step(entry: dict, cfg) -> Optional[float]:
    """Seconds per net-step of run ``cfg`` on the device of ``entry``; None: not measured there."""
    return entry.get(f"{key(cfg)}/{cfg.regime.name}", entry.get(key(cfg)))


def price(items, table: dict) -> dict[str, Optional[float]]:
    """Seconds on each device of ``table`` for ``items`` [(config, net-steps)]; None where a network
    of them has no measured entry for that device (and net-steps are left)."""
    out = {}
    for device, entry in table.items():
        total = 0.0
        for cfg, steps in items:
            per = per_step(entry, cfg)
            if steps and per is None:
                total = None
                break
            total += steps * (per or 0.0)
        out[device] = total
    return out


def record(device: str, label: str, source: str, measured: dict, path: Path = TABLE) -> None:
    """Write ``measured`` {key: seconds per net-step} as ``device``'s entry of the cost table (its
    other entries and the file's opening comment kept)."""
    text = Path(path).read_text()
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
    table = load(path)
    table[device] = {**(table.get(device) or {}), "label": label, "source": source,
                     **{k: float(f"{v:.3g}") for k, v in measured.items()}}
    Path(path).write_text(header + yaml.safe_dump(table, sort_keys=False, width=120))


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} days"


def words(prices: dict, table: Optional[dict] = None, long: bool = False) -> str:
    """``about 11.2 h on an H100, 60 days on this 2-core CPU``; a device without an entry for some
    network says so."""
    table = load() if table is None else table
    parts = []
    for device, seconds in prices.items():
        label = (table.get(device) or {}).get("label", device)
        if seconds is None:
            parts.append(f"not measured on {label}")
        elif long and seconds >= 3600:
            days = f" ({seconds / 86400:,.0f} days)" if seconds >= 3 * 86400 else ""
            parts.append(f"{seconds / 3600:,.1f} {label}-hours{days}")
        else:
            parts.append(f"{duration(seconds)} on {label}")
    return "about " + ", ".join(parts) if parts else "no cost table"
