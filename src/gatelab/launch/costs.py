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


def per_step(entry: dict, cfg) -> Optional[tuple[float, float]]:
    """(seconds per step of a stack, seconds per net in it) of run ``cfg`` on the device of ``entry``:
    a stack of S nets takes ``a + S * b`` a step. An entry is ``[a, b]``, or one number ``b`` (a = 0:
    the seconds per net-step measured at the stack size of the papers' jobs). None: not measured.
    A net of another size (:func:`size`) scales ``b``, its arithmetic; ``a``, the step's dispatch and
    kernel launches, stays."""
    v = entry.get(f"{key(cfg)}/{cfg.regime.name}", entry.get(key(cfg)))
    if v is None:
        return None
    a, b = (0.0, float(v)) if isinstance(v, (int, float)) else (float(v[0]), float(v[1]))
    return a, b * size(cfg)


ROUTING_REF = (20, 10)  # (M, K) of the routing entries' measurements on the CPU (the H100's: M=40, K=5)


def _routing_step(m: float, k: float) -> float:
    """A routing step's cost in units of one encoder's: M encoders, K·M trained pairs' outputs picked,
    M² decoder outputs in one GEMM (see size)."""
    return m * (1 + k / 184 + m / 652)


FC_REF = (784, (128,) * 5)  # the FC entries' net: MNIST, 5 hidden layers of 128 (Table 2's FC rows)


def _fc_macs(din: int, dense) -> int:
    dims = [din, *dense]
    return sum(a * b for a, b in zip(dims, dims[1:]))


def _fc_in(cfg) -> int:
    """The input width an FC net of ``cfg`` sees: MNIST 784, CIFAR-10 3072 (1024 in grayscale)."""
    if str(cfg.dataset.source) == "mnist":
        return 784
    return 1024 if cfg.dataset.get("grayscale") else 3072


def size(cfg) -> float:
    """How much more a step of ``cfg`` does than the step its entry was measured at: an FC net (of more
    than one hidden layer) by its hidden layers' multiply-adds against the entry's net (``FC_REF``;
    paper 002 Fig 5's 512..64 net: 5.4x; measured here: about 10x); 1 for convolutional nets. A
    routing step runs M encoders (their weights, gradients and momenta: memory-bound on a CPU), all M² decoder outputs as one GEMM, and the softmax of the K·M trained
    pairs: M·(1 + K/184 + M/652), the three constants fitted to one-thread steps here (3 seeds,
    batch 8, two other trainings beside them) of 23 ms at M=20 (K=2 or 10), 128 ms at M=100, K=10,
    174 ms at K=90. A GPU runs them in parallel, so its routing prices for large M are an upper bound."""
    if key(cfg) == "fc":
        return _fc_macs(_fc_in(cfg), cfg.arch.dense) / _fc_macs(*FC_REF)
    if key(cfg) != "routing":
        return 1.0
    rt = cfg.dataset.routing
    return _routing_step(float(rt.M), float(rt.K)) / _routing_step(*ROUTING_REF)


TRAIN_SIZES = {"mnist": 60000, "cifar10": 50000}  # full training and test sets, for the cost estimate
TEST_SIZES = {"mnist": 10000, "cifar10": 10000}
EVAL = 1 / 3  # a test example's forward against a training example's step (forward, backward, update)


def eval_share(cfg) -> float:
    """Evaluation's cost against the training's, per epoch: the test examples' forwards (:data:`EVAL` of
    a training example's step each) over the training examples. Evaluation of the test set after every
    epoch is in every run; routing runs evaluate the trained and the untrained pathways (twice)."""
    src = str(cfg.dataset.source)
    n_train = cfg.dataset.get("limit_train") or TRAIN_SIZES.get(src, 0)
    n_test = cfg.dataset.get("limit_test") or TEST_SIZES.get(src, 0)
    if not n_train:
        return 0.0
    return EVAL * n_test / n_train * (2 if (cfg.dataset.get("routing") or None) else 1)


def price(items, table: dict) -> dict[str, Optional[float]]:
    """Seconds on each device of ``table`` for ``items`` [(config, net-steps left, stack)]: the runs
    of one stack train together (S nets with steps left: ``steps * (a + S * b)``), each epoch's
    evaluation on top (:func:`eval_share`), and an entry's fixed costs: ``start`` seconds for each job
    (a stack key ``(job, k)``: one process's imports, config and data) and ``warmup`` for each stack (its
    first epoch's extra: allocation, cuDNN autotuning). None where a network of them has no entry for
    that device."""
    stacks: dict = {}
    for cfg, steps, stack in items:
        if steps:
            stacks.setdefault(stack, []).append((cfg, steps))
    jobs = {k[0] if isinstance(k, tuple) else k for k in stacks}
    out = {}
    for device, entry in table.items():
        total = float(entry.get("start", 0.0)) * len(jobs) + float(entry.get("warmup", 0.0)) * len(stacks)
        for runs in stacks.values():
            ab = per_step(entry, runs[0][0])
            if ab is None:
                total = None
                break
            total += max(s for _, s in runs) * (ab[0] + len(runs) * ab[1]) * (1 + eval_share(runs[0][0]))
        out[device] = total
    return out


def fit(single: float, stacked: float, s: int) -> list[float]:
    """``[a, b]`` from the seconds per step of one net alone and of a stack of ``s`` nets (a >= 0)."""
    b = (stacked - single) / (s - 1) if s > 1 else single
    a = single - b
    if a < 0:  # stacking costs more than linear (a CPU's grouped convolutions): per net only
        a, b = 0.0, stacked / s
    return [float(f"{a:.3g}"), float(f"{b:.3g}")]


def record(device: str, label: str, source: str, measured: dict, path: Path = TABLE) -> None:
    """Write ``measured`` {key: [a, b]} as ``device``'s entry of the cost table (its other entries
    and the file's opening comment kept)."""
    text = Path(path).read_text()
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
    table = load(path)
    table[device] = {**(table.get(device) or {}), "label": label, "source": source, **measured}
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
