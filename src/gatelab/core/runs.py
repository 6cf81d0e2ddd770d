"""Where a run lives: a directory keyed by a short hash of the config that determines its result.

``<out_root>/runs/<dataset>-<arch>-<optimizer>-lr<lr>/<regime>/seed<k>-<key>``: the same run always
lands in the same place (single runs and multiruns alike), so a finished run is found again and
skipped, and FLNPF's ``regime.source=auto`` finds the ReLU run of its own cell and seed.

Keys are stable as the schema grows: a field declared with :func:`gatelab.core.config.later` is left
out of the key while it holds its default, so runs made before it existed keep their keys (tests
pin literal keys). Where a key must change, ``python -m gatelab.core.runs rekey <out_root>`` moves
every run directory to the key the current code gives its stored config.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import hashlib
import json
import pickle
import shutil
import typing
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from gatelab.core.config import LATER, Config, CONF_DIR, register
from gatelab.core.machine import precision_of
from gatelab.core.results import RESULTS, read_results

# Keys that determine a run's result. Not: device, data root, progress bars, threads, out_root,
# compile (same numbers up to reassociation).
IDENTITY = ("dataset", "arch", "regime", "optimizer", "seed", "epochs", "checkpoint_epochs", "amp",
            "checkpoint_steps", "imp", "precision", "eval_precision")
SCHEMA = Config  # the dataclass whose field metadata says which fields were added later


def plain(node: Any) -> Any:
    """A config node as plain Python data, closed sets (enums) as their strings."""
    if OmegaConf.is_config(node):
        return OmegaConf.to_container(node, resolve=True, enum_to_str=True)
    return node


def _schema_of(hint: Any) -> Any:
    """The dataclass inside a type hint (``Optional[X]`` -> X), else None."""
    if dataclasses.is_dataclass(hint):
        return hint
    for arg in typing.get_args(hint):
        if dataclasses.is_dataclass(arg):
            return arg
    return None


@functools.cache
def _default(f: dataclasses.Field) -> Any:
    """A schema field's default as plain data (a nested dataclass as its dict); once per field (read, never
    changed: a run key compares against it)."""
    value = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    return plain(OmegaConf.structured(value)) if dataclasses.is_dataclass(value) else plain(value)


@functools.cache
def _hints(schema: Any) -> dict:
    return typing.get_type_hints(schema)


def _drop_later_defaults(value: Any, schema: Any) -> Any:
    """``value`` without the fields that ``schema`` marks as added later and that hold their default."""
    if schema is None or not isinstance(value, dict):
        return value
    hints = _hints(schema)
    out = dict(value)
    for f in dataclasses.fields(schema):
        if f.name not in out:
            continue
        if f.metadata.get(LATER) and out[f.name] == _default(f):
            del out[f.name]
            continue
        out[f.name] = _drop_later_defaults(out[f.name], _schema_of(hints[f.name]))
    return out


def identity(cfg, schema=None) -> dict:
    """The fields of ``cfg`` (a config or its plain dict) that determine the run's result; ``precision=auto`` as
    what it resolves to on the run's device (the key of a run says what ran)."""
    ident = {k: plain(cfg[k]) for k in IDENTITY if k in cfg}
    if ident.get("precision") == "auto":
        ident["precision"] = precision_of(cfg)
    return _drop_later_defaults(ident, schema or SCHEMA)


def run_key(cfg) -> str:
    blob = json.dumps(identity(cfg), sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(blob.encode()).hexdigest()[:10]


def cell_name(cfg) -> str:
    """One Table row and step size: what the seeds of one cell share apart from the regime."""
    return f"{cfg['dataset']['name']}-{cfg['arch']['name']}-{cfg['optimizer']['name']}-lr{cfg['optimizer']['lr']:g}"


def run_subdir(cfg) -> str:
    regime = cfg["regime"]["name"]
    imp = cfg.get("imp")
    if imp is not None and imp.get("sparsity") is not None:  # an IMP round beside its dense run
        regime += f"-imp{imp['sparsity']:g}-r{imp['round']}"
    if cfg.get("seeds"):  # a seed-batched job: its log goes here, each seed's results to its own run_dir
        seeds = "-".join(map(str, cfg["seeds"]))
        return f"runs/{cell_name(cfg)}/{regime}/seeds{seeds}-{run_key(cfg)}"
    return f"runs/{cell_name(cfg)}/{regime}/seed{cfg['seed']}-{run_key(cfg)}"


def seed_configs(cfg, seeds) -> list:
    """Each seed's config of a job (``seed=<seed> seeds=null``): copies of ``cfg``, what ``OmegaConf.merge`` would
    give, pickled once and unpickled per seed (a fifth of ``copy.deepcopy``'s cost: a plan makes one for each of
    hundreds of runs)."""
    frozen, out = pickle.dumps(cfg), []
    for seed in seeds:
        c = pickle.loads(frozen)
        c.seed, c.seeds = int(seed), None
        out.append(c)
    return out


def seed_run_dirs(cfg) -> dict:
    """``seeds=[...]``: each seed's own run directory, the one a single run of that seed uses."""
    return {int(c.seed): run_dir(c) for c in seed_configs(cfg, cfg.seeds)}


def run_dir(cfg) -> Path:
    return Path(cfg.out_root) / run_subdir(cfg)


def job_config(root) -> DictConfig:
    """The job's config without the ``hydra`` node."""
    if "hydra" not in root:
        return root
    return OmegaConf.masked_copy(root, [k for k in root.keys() if k != "hydra"])


def register_resolver() -> None:
    """``${gatelab_run:}`` in ``hydra.run.dir`` / ``hydra.sweep.subdir`` -> :func:`run_subdir`."""
    if not OmegaConf.has_resolver("gatelab_run"):
        OmegaConf.register_new_resolver("gatelab_run", lambda *, _root_: run_subdir(job_config(_root_)),
                                        use_cache=False)


def compose(overrides=()) -> Any:
    """The job config that ``python run.py <overrides>`` would run (without the ``hydra`` node).

    Hydra composes the config groups (the defaults tree: most of a compose's 0.3-0.5 s) and then applies the plain
    ``key=value`` overrides to the result (``ConfigLoaderImpl._apply_overrides_to_config``). The first part is kept
    per group selection in this process, keyed by the conf files' state too, and the second is Hydra's own function
    on a copy, so a plan of 61 jobs over 4 selections composes 4 times. Sweeps (``a,b``) and package overrides
    (``key@pkg=``) go to Hydra whole."""
    split = _split_overrides(list(overrides))
    if split is None:
        return pickle.loads(_hydra_compose(tuple(overrides), _conf_state()))
    groups, values = split
    cfg = pickle.loads(_hydra_compose(tuple(groups), _conf_state()))
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    ConfigLoaderImpl._apply_overrides_to_config(values, cfg)
    return cfg


def _split_overrides(overrides: list):
    """(the overrides Hydra needs to compose: config groups, ``hydra`` keys; the plain ``key=value`` ones, parsed,
    in their order), or None when one is a sweep or names a package."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    groups, values = [], []
    for o in OverridesParser.create().parse_overrides(overrides):
        if o.is_sweep_override() or o.package is not None:
            return None
        key = o.key_or_group
        if o.is_hydra_override() or key.split(".")[0] == "hydra" or "/" in key or (CONF_DIR / key).is_dir():
            if isinstance(o.value(), dict):  # a group's key given a dict: a config value to Hydra, in its order
                return None
            groups.append(o.input_line)
        else:
            values.append(o)
    return groups, values


def _conf_state() -> tuple:
    """The conf files' names, sizes and modification times: a cached composition is of these files."""
    return tuple((str(p), st.st_size, st.st_mtime_ns) for p in sorted(CONF_DIR.rglob("*.yaml")) for st in [p.stat()])


@functools.lru_cache(maxsize=64)
def _hydra_compose(overrides: tuple, conf_state: tuple) -> bytes:
    """Hydra's composition of ``overrides`` without the ``hydra`` node, pickled (each caller unpickles its own copy)."""
    from hydra import compose as hydra_compose, initialize_config_dir
    from omegaconf import open_dict

    register()
    register_resolver()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = hydra_compose(config_name="config", overrides=list(overrides))
    with open_dict(cfg):
        cfg.pop("hydra", None)
    return pickle.dumps(cfg)


def rekey(out_root: Path, dry_run: bool = False) -> list[tuple[Path, Path]]:
    """Move every run directory below ``<out_root>/runs`` whose key differs from the one the current
    code gives its stored config. A target that exists already is left alone and reported."""
    moves = []
    for path in sorted(Path(out_root, "runs").rglob(RESULTS)):
        res = read_results(path)
        if res is None or "config" not in res:
            continue
        cfg = res["config"]
        target = Path(out_root) / run_subdir({**cfg, "seeds": None})
        if target.resolve() == path.parent.resolve():
            continue
        if target.exists():
            print(f"skip {path.parent}: {target} exists")
            continue
        moves.append((path.parent, target))
        if not dry_run:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(path.parent), str(target))
    return moves


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m gatelab.core.runs", description="Run directory maintenance.")
    sub = ap.add_subparsers(dest="command", required=True)
    rk = sub.add_parser("rekey", help="move run directories to the keys the current code gives them")
    rk.add_argument("out_root", type=Path)
    rk.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    moves = rekey(args.out_root, args.dry_run)
    for src, dst in moves:
        print(f"{'would move' if args.dry_run else 'moved'} {src} -> {dst}")
    print(f"{len(moves)} run directories {'to move' if args.dry_run else 'moved'}")


if __name__ == "__main__":
    main()
