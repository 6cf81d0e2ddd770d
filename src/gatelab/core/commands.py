"""A command line checked before Hydra starts, so that a mistake is one line, exit 2, and nothing is
written: an option ``conf/`` lacks, a key the schema lacks (:func:`bad_option`), a config that does not
compose (a routing setting on a non-routing dataset), a run folder that cannot be written, a SLURM
launcher where there is no SLURM (:func:`problem`)."""
from __future__ import annotations

import argparse
import difflib
import shutil
import tempfile
from pathlib import Path
from typing import Optional

from hydra.core.override_parser.overrides_parser import OverridesParser

from gatelab.core.config import CONF_DIR, ConfigError
from gatelab.core.validation import unknown_key_message

FLAGS = ("-m", "--multirun", "--dry-run", "dry_run=true")


def first_point(overrides: list[str]) -> list[str]:
    """The overrides with each sweep at its first value (what one job of the sweep composes)."""
    out = []
    for o in OverridesParser.create().parse_overrides(list(overrides)):
        out.append(f"{o.get_key_element()}={next(iter(o.sweep_string_iterator()))}" if o.is_sweep_override()
                   else o.input_line)
    return out


def _unknown_key(key: str) -> Optional[str]:
    node: dict = {}
    *path, leaf = key.split(".")
    cursor = node
    for part in path:
        cursor = cursor.setdefault(part, {})
    cursor[leaf] = None
    return unknown_key_message(node)


def bad_option(argv: list[str]) -> Optional[str]:
    """A config group option that conf/ does not have (``regime=flnpff``, also inside a sweep or an
    ``+experiment=[...]`` list), naming the group, the value, the closest option and the options; or a
    key the schema does not have (``epochz=5``), naming the closest real key; None when all is well."""
    groups = {p.name for p in CONF_DIR.iterdir() if p.is_dir() and p.name not in ("hydra", "__pycache__")}
    parser = OverridesParser.create()
    for arg in argv:
        try:
            (o,) = parser.parse_overrides([arg])
        except Exception:  # noqa: BLE001 - not an override, or one Hydra will reject in its own words
            continue
        group = o.key_or_group
        if o.is_delete():
            continue
        if group not in groups:
            key = group.lstrip("+")
            bad = None if "/" in key or key.startswith("hydra.") else _unknown_key(key)
            if bad:
                return bad
            continue
        values = list(o.sweep_string_iterator()) if o.is_sweep_override() else [o.value()]
        options = sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))
        for v in (x for val in values for x in (val if isinstance(val, list) else [val])):
            if str(v) not in options:
                close = difflib.get_close_matches(str(v), options, n=1)
                return (f"{group}={v}: conf/{group} has no option {v}" + (f" (did you mean {close[0]}?)" if close else "")
                        + f"; options: {', '.join(options)}")
    return None


def unwritable(out_root: str) -> Optional[str]:
    """Why runs cannot be written below ``out_root`` (its nearest existing folder refuses a new
    folder), or None; tries it with a temporary folder that it removes."""
    path = Path(out_root).expanduser().absolute()
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is None or not existing.is_dir():
        return f"out_root={out_root}: {existing} is not a folder"
    try:
        Path(tempfile.mkdtemp(dir=existing, prefix=".gatelab-try-")).rmdir()
    except OSError as e:
        return f"out_root={out_root}: runs cannot be written there ({e.strerror or e} in {existing})"
    return None


def problem(argv: list[str]) -> Optional[str]:
    """The first mistake of a ``run.py`` command line in one line, or None: :func:`bad_option`, a
    cluster launcher without SLURM, a config that does not compose, an unwritable ``out_root``."""
    bad = bad_option(argv)
    if bad:
        return bad
    if {"--cfg", "-c", "--info", "--help", "-h", "--hydra-help"} & set(argv):  # Hydra shows, nothing runs
        return None
    if any(a.startswith("hydra/launcher=cluster") for a in argv) and not shutil.which("sbatch"):
        return ("hydra/launcher=cluster: no SLURM here (sbatch is not on PATH); run the sweep here without it, "
                "or on a SLURM login node")
    overrides = [a for a in argv if a not in FLAGS and not a.startswith(("hydra", "-"))]
    from gatelab.core.runs import compose
    try:
        cfg = compose(first_point(overrides))
    except Exception as e:  # noqa: BLE001 - Hydra and OmegaConf raise many kinds; the user gets one line
        return _unset_parent(overrides) or f"the config does not compose: {_reason(e)}"
    return unwritable(str(cfg.out_root))


def _reason(e: BaseException) -> str:
    """The first line of a composition error, with the allowed values where OmegaConf's cause names them
    (``precision=fp16``: "Invalid value 'fp16', expected one of [fp32, tf32, bf16, auto]")."""
    first = str(e).splitlines()[0]
    cause = e.__cause__ or e.__context__
    while cause is not None:
        text = str(cause).splitlines()[0] if str(cause) else ""
        if "expected one of" in text or "Invalid value" in text:
            return f"{first}: {text}"
        cause = cause.__cause__ or cause.__context__
    return first


def _unset_parent(overrides: list[str]) -> Optional[str]:
    """A key set below a block that the chosen config groups leave empty (``dataset.routing.K=3`` on a
    dataset without a routing task), named with the groups' choice; None if that is not the failure."""
    from omegaconf import OmegaConf

    from gatelab.core.runs import compose
    points = first_point(overrides)
    groups = [o for o in points if "." not in o.split("=", 1)[0]]
    try:
        base = compose(groups)
    except Exception:  # noqa: BLE001 - the group choices themselves fail: not this case
        return None
    for o in points:
        key = o.split("=", 1)[0].lstrip("+")
        parent = key.rpartition(".")[0]
        if parent and OmegaConf.select(base, parent, default=None) is None:
            top = parent.split(".")[0]
            chosen = base.get(top, {}).get("name", "") if OmegaConf.is_dict(base.get(top)) else ""
            return (f"{o}: {parent} is not set for {top} {chosen}".rstrip() +
                    f", so it has no {key.rpartition('.')[2]} (a {top} that has a {parent.split('.')[-1]} block sets it)")
    return None


def positive(text: str) -> int:
    """An argparse type: an integer of 1 or more (--jobs, --epochs)."""
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {n}")
    return n


def modes(args, names: tuple[str, ...]) -> None:
    """At most one of a command's modes (``names``: its flags, e.g. ``dry_run``), and ``--slurm-set`` only with
    ``--slurm`` (or ``--status``, which follows what was submitted: the same settings may stay exported as Make's
    SLURM_SET): a flag another one would silently override is refused before anything runs."""
    given = [f"--{n.replace('_', '-')}" for n in names if getattr(args, n, False)]
    if len(given) > 1:
        raise ConfigError(f"{' and '.join(given)} do different things: give one")
    if getattr(args, "slurm_set", None) and not (args.slurm or args.status):
        raise ConfigError(f"--slurm-set {' '.join(args.slurm_set)} sets a SLURM request, which only --slurm makes")
