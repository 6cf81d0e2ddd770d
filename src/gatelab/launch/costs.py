"""What a plan costs in time: net-steps left times the measured seconds per net-step of each
architecture on each device of ``conf/costs.yaml`` (``scripts/bench.py --record <device>`` writes
its measurements there). An estimate: the table's entries were measured at the papers' sizes with
the seeds stacked; a smaller net or another batch size runs at another speed."""
from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path
from typing import Optional

import yaml

from gatelab.core.config import CONF_DIR
from gatelab.core.results import epoch_seconds, load_results, skip_note

TABLE = Path(CONF_DIR) / "costs.yaml"


HERE = "here"  # the entry learned from this machine's own completed runs (:func:`learned`)
RUNS = Path("outputs")  # where the runs are whose times price this machine (a checkout's, the working folder's)


def load(path: Path = TABLE, runs: Optional[Path] = RUNS) -> dict:
    """{device: {"label": ..., "source": ..., <cost key>: seconds per net-step}}; with ``runs``, the entry this
    machine's own completed runs below it give (:func:`learned`), first, where there are any."""
    table = yaml.safe_load(Path(path).read_text()) or {}
    mine = learned(table, runs) if runs is not None and Path(runs).is_dir() else None
    return {HERE: mine, **table} if mine else table


def learned(table: dict, runs: Path, here=None) -> Optional[dict]:
    """This machine's entry, from its own completed runs below ``runs`` (results.json's ``env.machine``: the same
    kind and model): the nearest recorded entry (:func:`for_machine`) with each network's seconds scaled by the
    median measured / priced of this machine's stacks of that network (:func:`priced_against_measured`), and only
    those networks (another is not measured here). A run's own speed is its steady time (:func:`steady_seconds`):
    a pause or a busy neighbour during a few epochs is not this machine's price. None without such runs."""
    from gatelab.core.machine import detect
    here = detect("auto") if here is None else here
    base = [n for n, _ in for_machine(table, here)]
    if not base:
        return None
    df = _measured(Path(runs), base[0], table, here.kind, here.model)
    if not len(df := df[df.steady_ratio.notna() & (df.steady_ratio > 0)] if len(df) else df):
        return None
    ratio = df.groupby("arch").steady_ratio.median().to_dict()
    entry = table[base[0]]
    scaled = {k: ([float(f"{x * ratio[_net(k)]:.4g}") for x in v] if isinstance(v, list) else
                  float(f"{v * ratio[_net(k)]:.4g}"))
              for k, v in entry.items() if _net(k) in ratio and isinstance(v, (int, float, list))}
    fixed = {k: entry[k] for k in ("start", "warmup", "epoch") if k in entry}  # per job, stack and epoch: as recorded
    return {"machine": {"kind": here.kind, "model": here.model}, "label": f"{'CPU' if here.kind.startswith('cpu') else here.kind} here (from {len(df)} runs: "
                                                          f"{', '.join(sorted(ratio))})",
            "source": f"{base[0]}'s entry scaled by this machine's measured / priced, median per network "
                      f"({', '.join(f'{k} {v:.2f}x' for k, v in sorted(ratio.items()))}) over {len(df)} stacks",
            **fixed, **scaled}


def _net(entry_key: str) -> str:
    """The network an entry's key prices: ``fc``, ``fc/dlnpf``, ``fc@bf16`` and ``epoch/fc`` are all ``fc``."""
    k = entry_key.split("/", 1)[1] if entry_key.startswith("epoch/") else entry_key.split("/")[0]
    return k.split("@")[0]


_SEEN: dict = {}  # _measured's frames, by the state of the runs' folder


def _measured(runs: Path, device: str, table: dict, kind: str, model: str):
    """:func:`priced_against_measured` of the runs of machine ``kind``/``model`` below ``runs`` on ``device``, read once
    per machine and state of the folder (its results.json files' count and newest time)."""
    import pandas as pd
    files = list(runs.rglob("results.json"))  # noqa: the folder's state, to read its runs once
    state = (str(runs.resolve()), device, kind, model, len(files), max((f.stat().st_mtime_ns for f in files), default=0))
    if state not in _SEEN:
        df = priced_against_measured([runs], device, table, quiet=True)
        _SEEN[state] = df[(df.kind == kind) & (df.model == model)] if len(df) else pd.DataFrame()
    return _SEEN[state]


def key(cfg) -> str:
    """The cost table's name for a run's network: its architecture; an FC net of one hidden layer
    (paper 004's) is ``fc-1-hidden``. ``<key>/<regime>`` entries (``vconv/dlnpf``: two nets a step)
    take precedence over ``<key>``; without one, a regime with a trained feature network is priced as
    ``<key>/dlnpf`` and one with a frozen feature network (FRNPF, FLNPF) as ``<key>`` with the frozen
    network's forward (:data:`EVAL` of a step) on top (:func:`per_step`)."""
    name = str(cfg.arch.name)
    if name == "fc" and len(cfg.arch.get("dense") or []) == 1:
        return "fc-1-hidden"
    return name


def machine_of_entry(entry: dict):
    """The machine an entry was measured on (its ``machine:`` block: kind and model), as
    :class:`gatelab.core.machine.Machine`; None for an entry that does not say."""
    from gatelab.core.machine import CPU_KINDS, Machine
    m = entry.get("machine") or {}
    if not m.get("kind"):
        return None
    native = m["kind"] not in CPU_KINDS[2:]  # GPUs, AMX, AVX-512 BF16
    return Machine(str(m["kind"]), str(m.get("model", "")), native, "")


def _precision(entry: dict, cfg) -> str:
    """The precision a run trains in on ``entry``'s machine (``auto`` resolved for that machine; fp32 for an entry
    that does not name its machine)."""
    from gatelab.core.machine import CPU_KINDS, Machine, precision_of
    return precision_of(cfg, machine_of_entry(entry) or Machine(CPU_KINDS[-1], "", False, ""))


def per_step(entry: dict, cfg) -> Optional[tuple[float, float]]:
    """(seconds per step of a stack, seconds per net in it) of run ``cfg`` on the device of ``entry``:
    a stack of S nets takes ``a + S * b`` a step. An entry is ``[a, b]``, or one number ``b`` (a = 0:
    the seconds per net-step measured at the stack size of the papers' jobs). None: not measured.
    A net of another size (:func:`size`) scales ``b``, its arithmetic; ``a``, the step's dispatch and
    kernel launches, stays (a negative ``a``, stacking's extra arithmetic on a CPU, scales with ``b``)."""
    k, regime, factor = key(cfg), cfg.regime, 1.0
    if _precision(entry, cfg) == "bf16":  # an entry's bf16 measurements (``<key>@bf16``) where it has them
        entry = {**entry, **{n[:-5]: v for n, v in entry.items() if n.endswith("@bf16")}}
    v = entry.get(f"{k}/{regime.name}")
    if v is None and not regime.get("tied", True) and k != "routing":  # a feature network beside the value network
        if regime.get("feature_trainable"):  # two networks trained a step: as DLNPF, else twice one
            v = entry.get(f"{k}/dlnpf")
            if v is None and entry.get(k) is not None:
                v, factor = entry.get(k), 2.0
        else:  # a frozen one (FRNPF, FLNPF): its forward on top, EVAL of a step
            v, factor = entry.get(k), 1 + EVAL
    elif v is None:
        v = entry.get(k)
    if v is None:
        return None
    a, b = (0.0, float(v)) if isinstance(v, (int, float)) else (float(v[0]), float(v[1]))
    scale = size(cfg) * factor
    return (a * scale if a < 0 else a), b * scale  # a < 0 (:func:`fit`) is arithmetic too: it scales with b


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
# the entries' batch: a test example costs EVAL of a training example's share of a step of this batch, however small
# the run's batch (evaluation runs in large batches: races' batch-4 epochs on this CPU evaluated 4000 examples
# of 5 nets in 0.32 s, priced 2.1 s per example of a batch-4 step, 0.27 s by this rule)
EVAL_BATCH = 32


def examples(cfg) -> tuple[int, int]:
    """(training, test) examples an epoch of ``cfg`` sees: its limits, else the full sets (a binary task's
    or class groups': their classes' share of them)."""
    src, groups = str(cfg.dataset.source), cfg.dataset.get("class_groups")
    share = (2 / max(1, int(cfg.dataset.num_classes)) if str(cfg.dataset.task) == "binary" else
             sum(len(g) for g in groups) / 10 if groups else 1.0)  # class groups: their classes of the 10
    n_train = cfg.dataset.get("limit_train") or int(TRAIN_SIZES.get(src, 0) * share)
    n_test = cfg.dataset.get("limit_test") or int(TEST_SIZES.get(src, 0) * share)
    return int(n_train), int(n_test)


def steps_per_epoch(cfg) -> int:
    """Optimiser steps in an epoch of ``cfg``: its training examples over its batch."""
    return math.ceil(examples(cfg)[0] / int(cfg.optimizer.batch_size))


def eval_share(cfg) -> float:
    """Evaluation's cost against the training's, per epoch: the test examples' forwards (:data:`EVAL` of
    a training example's step each, at a batch of at least :data:`EVAL_BATCH`) over the training examples. Evaluation of the test set after every
    epoch is in every run; routing runs evaluate the trained and the untrained pathways (twice)."""
    n_train, n_test = examples(cfg)
    if not n_train:
        return 0.0
    batch = int(cfg.optimizer.batch_size)
    return EVAL * n_test / n_train * batch / max(batch, EVAL_BATCH) * (2 if (cfg.dataset.get("routing") or None) else 1)


def traced_steps(cfg, steps_left: int) -> float:
    """The cost of ``loss_trace=[lo, hi]`` in steps of the run: each traced step t (of those left) evaluates
    the whole training set: n_train examples at :data:`EVAL` of a training example's share of a step
    (of a batch of at least :data:`EVAL_BATCH`)."""
    window = list(cfg.get("loss_trace") or [])
    if not window or not steps_left:
        return 0.0
    n_train, _ = examples(cfg)
    batch = int(cfg.optimizer.batch_size)
    total = int(cfg.epochs) * steps_per_epoch(cfg)
    traced = max(0, min(int(window[1]), total) - max(int(window[0]), total - steps_left) + 1)
    return traced * EVAL * n_train / max(batch, EVAL_BATCH)


def price(items, table: dict) -> dict[str, Optional[float]]:
    """Seconds on each device of ``table`` for ``items`` [(config, net-steps left, stack)]: the runs
    of one stack train together (S nets with steps left: ``steps * (a + S * b)``), each epoch's
    evaluation on top (:func:`eval_share`) and a loss trace's (:func:`traced_steps`), and an entry's fixed
    costs: ``start`` seconds for each job (a stack key ``(job, k)``: one process's imports, config and data),
    ``warmup`` for each stack (its first epoch's extra: allocation, cuDNN autotuning) and ``epoch`` for each
    net and epoch (its checkpoint writes and results.json, off the steps' clock; ``epoch/<key>`` for a
    network whose checkpoints are large: VCONV's last.pt with Adam's moments is 407 MB, 1.3 s here). None where a network
    of them has no entry for that device."""
    stacks: dict = {}
    for cfg, steps, stack in items:
        if steps:
            stacks.setdefault(stack, []).append((cfg, steps))
    jobs = {k[0] if isinstance(k, tuple) else k for k in stacks}
    out = {}
    for device, entry in table.items():
        total = float(entry.get("start", 0.0)) * len(jobs) + float(entry.get("warmup", 0.0)) * len(stacks)
        for runs in stacks.values():
            cfg, steps = runs[0][0], max(s for _, s in runs)
            ab = per_step(entry, cfg)
            if ab is None:
                total = None
                break
            total += (ab[0] + len(runs) * ab[1]) * (steps * (1 + eval_share(cfg)) + traced_steps(cfg, steps))
            epochs = steps / max(1, steps_per_epoch(cfg))
            total += epochs * len(runs) * float(entry.get(f"epoch/{key(cfg)}", entry.get("epoch", 0.0)))
        out[device] = total
    return out


def fit(single: float, stacked: float, s: int) -> list[float]:
    """``[a, b]`` through the seconds per step of one net alone (S=1) and of a stack of ``s`` nets (S=s):
    ``a + S * b``. ``a < 0`` where stacking costs more than S single steps (a CPU's grouped convolutions):
    a single net is then priced at its own speed, not the stack's (:func:`per_step` scales such an ``a``)."""
    b = (stacked - single) / (s - 1) if s > 1 else single
    a = single - b
    return [float(f"{a:.3g}"), float(f"{b:.3g}")]


def record(device: str, label: str, source: str, measured: dict, path: Path = TABLE) -> None:
    """Write ``measured`` {key: [a, b]} as ``device``'s entry of the cost table (its other entries
    and the file's opening comment kept)."""
    text = Path(path).read_text()
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
    table = load(path)
    table[device] = {**(table.get(device) or {}), "label": label, "source": source, **measured}
    Path(path).write_text(header + yaml.safe_dump(table, sort_keys=False, width=120, default_flow_style=None))


def for_machine(table: dict, here=None) -> list[tuple[str, str]]:
    """The entries of ``table`` in the order a plan shows them: the one recorded on this kind of machine
    first, [(entry, how)] with how ``this machine`` (its kind and model), ``this kind`` (another model of
    it), ``nearest`` (no entry of this kind: the closest CPU kind, or another GPU) or ``""`` for the rest."""
    from gatelab.core.machine import CPU_KINDS, detect
    here = detect("auto") if here is None else here
    kinds = {n: (machine_of_entry(e) or None) for n, e in table.items() if isinstance(e, dict)}
    exact = [n for n, m in kinds.items() if m and m.kind == here.kind and m.model == here.model]
    same = [n for n, m in kinds.items() if m and m.kind == here.kind and n not in exact]
    first: list[tuple[str, str]] = [(n, "this machine") for n in exact] + [(n, "this kind") for n in same]
    if not first:
        if here.gpu:
            near = [n for n, m in kinds.items() if m and m.gpu]
        else:
            rank = {k: i for i, k in enumerate(CPU_KINDS)}
            mine = rank.get(here.kind, len(CPU_KINDS))
            cpus = [(abs(rank[m.kind] - mine), n) for n, m in kinds.items() if m and m.kind in rank]
            near = [min(cpus)[1]] if cpus else []
        first = [(n, "nearest") for n in near[:1]]
    shown = {n for n, _ in first}
    return first + [(n, "") for n in kinds if n not in shown]


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
    order = [(n, how) for n, how in for_machine(table) if n in prices] + \
        [(n, "") for n in prices if n not in table]
    for device, how in order:
        seconds = prices[device]
        label = (table.get(device) or {}).get("label", device)
        mark = {"this machine": " (this machine)", "this kind": " (this kind of machine)",
                "nearest": " (the nearest entry: none for this machine; `python scripts/bench.py --quick --record auto` "
                           "records one in under 10 min on a 2-core CPU, and its first completed runs price it)"}.get(how, "")
        about = "" if any(p.startswith("about ") for p in parts) else "about "  # before the first number
        if seconds is None:
            parts.append(f"not measured on {label}{mark}")
        elif long and seconds >= 3600 and device != HERE:  # "4.1 CPU here (from 3 runs: fc)-hours" read badly
            days = f" ({seconds / 86400:,.0f} days)" if seconds >= 3 * 86400 else ""
            parts.append(f"{about}{seconds / 3600:,.1f} {label}-hours{days}{mark}")
        else:
            parts.append(f"{about}{duration(seconds)} on {label}{mark}")
    return ", ".join(parts) if parts else "no cost table"


def _stack_of(run_dir: Path, res: dict) -> str:
    """The stack a finished run trained in: the group its last.pt records (read memory-mapped: a row's
    family, FRNPF-II beside FRNPF-DI, shares a stack), else its config but the seed."""
    from gatelab.core import checkpoints
    last = checkpoints.load_good(run_dir / "ckpt" / "last.pt", peek=True, quiet=True)
    if last and last.get("group"):
        return json.dumps(sorted(last["group"]))
    plain = {k: v for k, v in res["config"].items() if k not in ("seed", "seeds", "out_root", "progress")}
    return json.dumps(plain, sort_keys=True, default=str)


def steady_seconds(res: dict) -> float:
    """A run's wall time with every epoch counted at the median epoch's seconds: what it takes here when nothing
    else does. The wall time outside the epochs stays; an epoch slowed by a pause (SIGSTOP) or a neighbour on the
    cores is not the machine's speed (a 2-core Zen 3: a 1.1 s epoch took 30-90 s beside a busy process; a run
    paused 24 min measured 11x its price, its steady time 1.25x). A periodic extra (ν every 10 epochs) counts
    at the median too: the steady time is a lower bound."""
    wall = float(res.get("wall_time_s") or 0.0)
    secs = epoch_seconds(res.get("history"))
    if not secs or sum(secs) > wall:
        return wall
    return wall - sum(secs) + len(secs) * statistics.median(secs)


def priced_against_measured(roots, device: str, table: Optional[dict] = None, quiet: bool = False):
    """Every completed run below ``roots`` beside its price: the runs are grouped into the stacks they
    trained in (:func:`_stack_of`; a stack's nets share its wall time), each stack priced as a plan
    prices it from scratch on ``device``'s entry (its steps, evaluation and warm-up; a job's ``start`` is
    not in a run's ``wall_time_s``) beside the longest ``wall_time_s`` of its nets. A DataFrame: one line a
    stack, with ``priced_s``, ``measured_s`` and ``ratio`` (measured / priced), ``steady_s`` and ``steady_ratio``
    (:func:`steady_seconds`: what this machine's entry learns from)."""
    from omegaconf import OmegaConf
    import pandas as pd
    table = load(runs=None) if table is None else table
    if device not in table:
        raise KeyError(f"no entry {device!r} in {TABLE} (entries: {', '.join(table)})")
    entry = {k: v for k, v in table[device].items() if k != "start"}
    stacks: dict = {}
    for root in roots:
        for path in sorted(Path(root).rglob("results.json")):
            res, why = load_results(path)
            if res is None:  # malformed (truncated, another version): one line, not counted
                print(skip_note(path, why or "unreadable"), file=sys.stderr) if not quiet else None
                continue
            if res.get("status") != "completed" or "config" not in res:
                continue
            cfg = OmegaConf.create(res["config"])
            stacks.setdefault(_stack_of(path.parent, res), []).append((path.parent, cfg, res))
    lines = []
    for runs in stacks.values():
        _, cfg, _ = runs[0]
        steps = int(cfg.epochs) * steps_per_epoch(cfg)
        priced = price([(c, steps, 0) for _, c, _ in runs], {device: entry})[device]
        priced = float("nan") if priced is None else priced
        measured = max(float(r.get("wall_time_s") or 0.0) for _, _, r in runs)
        steady = max(steady_seconds(r) for _, _, r in runs)
        regimes = "+".join(dict.fromkeys(str(c.regime.name) for _, c, _ in runs))  # a family: its regimes
        lines.append({"run": str(runs[0][0].parent), "arch": key(cfg), "regime": regimes,
                      "nets": len(runs), "epochs": int(cfg.epochs), "steps": steps,
                      "threads": runs[0][2].get("env", {}).get("threads"),
                      "cpu": runs[0][2].get("env", {}).get("cpu_capability"),
                      "kind": (runs[0][2].get("env", {}).get("machine") or {}).get("kind"),
                      "model": (runs[0][2].get("env", {}).get("machine") or {}).get("model"),
                      "priced_s": priced, "measured_s": measured,
                      "ratio": measured / priced if priced else float("nan"), "steady_s": steady,
                      "steady_ratio": steady / priced if priced else float("nan")})
    return pd.DataFrame(lines)
