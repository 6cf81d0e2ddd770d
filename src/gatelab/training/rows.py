"""A table row in one process: every regime x step size x seed (``regimes=[...]``, ``lrs=[...]``).

Nets whose regimes share a :func:`family` train stacked (as seeds do), each with its own step size
(plain SGD), each into the run directory its single run would use, so single runs and rows skip
each other's finished runs. Sourced regimes (FLNPF) come last, after their ReLU sources.
"""
from __future__ import annotations

from gatelab.core import machine
from gatelab.core.config import ConfigError
from gatelab.core.runs import plain, run_dir
from gatelab.nets import regimes
from gatelab.training.loop import train_entries

# Regime fields that make two regimes' networks run the same forward pass and train the same
# parameters: such regimes (frnpf_ii and frnpf_di, say) can be stacked like seeds.
FAMILY = ("tied", "gate", "beta", "eps", "feature_act", "feature_trainable", "value_trainable")


def family(cfg) -> tuple:
    """The stacking family of a run's regime; FLNPF-like regimes (a trained source) come last."""
    return (regimes.needs_source(cfg),) + tuple(plain(cfg.regime)[k] for k in FAMILY)


def row_groups(cfg) -> list[list[tuple[tuple, object]]]:
    """The stacks of a row, in training order: [[((regime, lr, seed), config), ...], ...]; with
    ``stack_seeds=false`` every net alone, in the same order (conv nets on a CPU, where stacking loses)."""
    validate_row(cfg)
    groups: dict = {}
    for key, c in regimes.row_configs(cfg):
        groups.setdefault(family(c), []).append((key, c))
    ordered = [groups[f] for f in sorted(groups, key=lambda f: f[0])]  # stable: the row's order, sourced last
    return ordered if machine.stack_seeds(cfg) else [[entry] for group in ordered for entry in group]


def train_row(cfg) -> dict:
    """Train every stack of the row (:func:`row_groups`); returns {(regime, lr, seed): results}."""
    out = {}
    for group in row_groups(cfg):
        results = train_entries([(c, run_dir(c)) for _, c in group])
        out.update(zip([key for key, _ in group], results))
    return out


def validate_row(cfg) -> None:
    """A row (``regimes``/``lrs``): each net once, in a directory of its own, each regime as its conf/regime yaml
    has it; per-net step sizes are exact for plain SGD only."""
    lrs = list(cfg.get("lrs") or [])
    names = list(cfg.get("regimes") or [])
    for key, values in (("regimes", names), ("lrs", lrs)):
        if len(set(values)) != len(values):
            raise ConfigError(f"{key}={values} lists a value more than once: the same run would train twice")
    if cfg.get("run_dir"):
        raise ConfigError(f"regimes/lrs write each net to its own run directory; run_dir={cfg.run_dir} cannot be set "
                          "with them")
    own = regimes.regime_config(cfg.regime.name) if names else None
    changed = sorted(k for k in cfg.regime if cfg.regime.get(k) != own.get(k)) if names else []
    if changed:
        raise ConfigError(f"regimes={names} trains each regime as its conf/regime yaml has it, so regime.{changed[0]}="
                          f"{cfg.regime.get(changed[0])} would be ignored: give it to a single regime's run, or add a "
                          "regime yaml")
    if any(not lr > 0 for lr in lrs):
        raise ConfigError(f"lrs={lrs}: step sizes must be > 0")
    if len(set(lrs)) > 1 and not (cfg.optimizer.name == "sgd" and cfg.optimizer.momentum == 0
                                  and cfg.optimizer.weight_decay == 0):
        raise ConfigError("lrs=[...] trains each net with its own step size by scaling its gradient, which is "
                          "exact for plain SGD only (optimizer=sgd, momentum=0, weight_decay=0); sweep "
                          "optimizer.lr with -m instead")
