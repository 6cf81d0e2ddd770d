"""Seconds per epoch per net: a plain PyTorch loop (the baseline), the single-run path (S=1), the seed-batched path (S seeds stacked in
one process) and the row-stacked path (S seeds x the 3 SGD step sizes of a Table 2 row, each net
with its own step size, ``gatelab.training.rows.train_row``), on whatever device is present. Synthetic inputs of the datasets' shapes
(speed does not depend on pixel values) through the product's own training path: the runs are
built and placed by ``gatelab.training.stacking.setup`` and trained by ``gatelab.training.loop.train_epoch``.

    python scripts/bench.py            # FC/MNIST ReLU + DLNPF, GCONV/CIFAR-10 ReLU + DLNPF, S=5
    python scripts/bench.py --quick    # fewer steps; under 10 minutes on a 2-core CPU
    python scripts/bench.py --quick --cases fc    # the FC cases only
    python scripts/bench.py --paths --cases gconv # the conv step's paths (fp32, bf16, channels_last) vs plain

Then the projection of Table 2 and Table 4 in device-hours from the measured batched times and the
experiments' epochs and seeds. The last line reads ``speed-up fc/mnist 5 seeds: X.XX`` (per-seed
throughput, batched / single).
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import tempfile  # noqa: E402

from gatelab.training import loop as train_mod, stacking  # noqa: E402
from gatelab.training.run_state import RunState  # noqa: E402
from gatelab.data.datasets import Data, Split  # noqa: E402
from gatelab.core.results import device_name, resolve_device  # noqa: E402
from gatelab.core.runs import compose  # noqa: E402
from gatelab.launch import costs  # noqa: E402

CASES = [  # (name, overrides, in_shape, train examples per epoch)
    ("fc/mnist relu", ["dataset=mnist", "arch=fc", "regime=relu"], (1, 28, 28), 60000),
    ("fc/mnist dlnpf", ["dataset=mnist", "arch=fc", "regime=dlnpf"], (1, 28, 28), 60000),
    ("gconv/cifar10 relu", ["dataset=cifar10", "arch=gconv", "regime=relu"], (3, 32, 32), 50000),
    ("gconv/cifar10 dlnpf", ["dataset=cifar10", "arch=gconv", "regime=dlnpf"], (3, 32, 32), 50000),
    ("vconv/cifar10 relu", ["dataset=cifar10", "arch=vconv", "regime=relu"], (3, 32, 32), 50000),
    ("vconv/cifar10 dlnpf", ["dataset=cifar10", "arch=vconv", "regime=dlnpf"], (3, 32, 32), 50000),
]


ROW_LRS = (0.1, 0.01, 0.001)  # a Table 2 SGD row's step sizes (paper §6.1)


WARMUP: list[float] = []  # each stack's first epoch beyond its second, in seconds (the cost entry's ``warmup``)


def seconds_per_step(overrides, in_shape, seeds: int, steps: int, device, batch: int = 32, lrs=(None,),
                     bf16: bool = False) -> float:
    """Seconds per training step of ``seeds`` x ``lrs`` stacked runs (``lrs``: SGD step sizes, one
    per net, or None for the config's optimiser): one warm-up epoch, then one timed epoch. ``overrides``
    may set speed options (``channels_last=true``); ``bf16``: the training forward under bf16 autocast."""
    sgd = ["optimizer=sgd"] if lrs != (None,) else []
    cfg = compose([*overrides, *sgd, "progress=false", f"device={device}"])
    n = batch * steps
    data = Data(Split(torch.randint(0, 256, (n, *in_shape), dtype=torch.uint8, device=device),
                      torch.randint(0, 10, (n,), device=device)),
                Split(torch.zeros(0, *in_shape, dtype=torch.uint8, device=device),
                      torch.zeros(0, dtype=torch.long, device=device)), in_shape, 10, "classification")
    with tempfile.TemporaryDirectory() as tmp:
        runs = [RunState(s, Path(tmp) / f"s{s}-{lr}", compose([*overrides, *sgd, f"seed={s}"] +
                                                                    ([f"optimizer.lr={lr}"] if lr else [])), 0.0)
                for lr in lrs for s in range(seeds)]
        for r in runs:
            r.build(data, {})
        model, opt, gens = stacking.setup(cfg, runs, device)
        autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16)
        sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
        t0 = time.perf_counter()
        train_mod.train_epoch(cfg, model, opt, data, gens, autocast, 0)  # warm-up
        sync()
        t = time.perf_counter()
        train_mod.train_epoch(cfg, model, opt, data, gens, autocast, 1)
        sync()
    t1 = time.perf_counter()
    WARMUP.append(max(0.0, (t - t0) - (t1 - t)))
    return (t1 - t) / steps


def checkpoint_seconds(overrides, in_shape, device) -> float:
    """Seconds to write one net's checkpoints at an epoch's end as a run does (last.pt with Adam's moments,
    best.pt with the weights; :func:`gatelab.core.checkpoints.save`): the cost entry's ``epoch``."""
    from gatelab.core import checkpoints
    from gatelab.nets.regimes import build_model, trainable_parameters
    net = build_model(compose([*overrides, "progress=false"]), in_shape, 10)[0].to(device)
    opt = torch.optim.Adam(trainable_parameters(net), lr=3e-4)
    net(torch.zeros(2, *in_shape, device=device)).sum().backward()
    opt.step()
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        checkpoints.save(Path(tmp) / "last.pt", model=net.state_dict(), optimizer=opt.state_dict())
        checkpoints.save(Path(tmp) / "best.pt", model=net.state_dict())
        return time.perf_counter() - t


def plain_seconds_per_step(overrides, in_shape, steps: int, device, batch: int = 32, bf16: bool = False,
                           channels_last: bool = False) -> float:
    """The baseline: one network (the same architecture) trained by a plain PyTorch loop, data on the
    device, Adam, no host sync: what a user would write by hand. ``bf16``: its forward under bf16 autocast;
    ``channels_last``: NHWC inputs and kernels (the twins of the product's paths, issue #57)."""
    import torch.nn.functional as F

    from gatelab.nets.regimes import build_model, trainable_parameters
    cfg = compose([*overrides, "progress=false"])
    fmt = torch.channels_last if channels_last and len(in_shape) == 3 else torch.contiguous_format
    net = build_model(cfg, in_shape, 10)[0].to(device, memory_format=fmt)  # a plain nn.Module (nn.Conv2d layers)
    opt = torch.optim.Adam(trainable_parameters(net), lr=3e-4)
    n = batch * steps
    x = torch.randint(0, 256, (n, *in_shape), dtype=torch.uint8, device=device)
    y = torch.randint(0, 10, (n,), device=device)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for timed in (False, True):
        perm = torch.randperm(n, device=device)
        sync()
        t = time.perf_counter()
        for i in range(steps):
            idx = perm[i * batch:(i + 1) * batch]
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                out = net((x[idx].float() / 255).contiguous(memory_format=fmt))
            loss = F.cross_entropy(out.float(), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        sync()
    return (time.perf_counter() - t) / steps


PLAIN = {  # --paths: the plain loop's twins of the product's paths, (bf16, channels_last)
    "plain fp32 loop": (False, False),
    "plain fp32 channels_last loop": (False, True),
    "plain bf16 loop": (True, False),
    "plain bf16 channels_last loop": (True, True),
}


PATHS = {  # --paths: the conv step's speed settings (stacked: S nets in one step; single: one net), each beside
    # the plain fp32 loop; "default" is what a run picks on this machine (gatelab.core.machine)
    "single fp32": (["channels_last=false"], False, False),
    "single fp32 channels_last": (["channels_last=true"], False, False),
    "stacked fp32": (["channels_last=false"], False, True),
    "stacked fp32 channels_last": (["channels_last=true"], False, True),
    "single bf16": (["channels_last=false"], True, False),
    "single bf16 channels_last": (["channels_last=true"], True, False),
    "stacked bf16": (["channels_last=false"], True, True),
    "stacked bf16 channels_last": (["channels_last=true"], True, True),
}


def default_path(overrides, device) -> tuple[list[str], bool]:
    """The layout and stacking a run of ``overrides`` picks on ``device`` (gatelab.core.machine): its
    overrides for :func:`seconds_per_step` and whether its seeds stack."""
    from gatelab.core import machine
    cfg = compose([*overrides, f"device={device}"])
    here = machine.detect(device)
    return [f"channels_last={str(machine.channels_last(cfg, here)).lower()}"], machine.stack_seeds(cfg, here)


def _skipped(case: str, name: str, bf16: bool, native: bool) -> bool:
    """Whether a bf16 path is skipped (the device emulates bf16), saying so."""
    if bf16 and not native:
        print(f"{case:22s} {name:28s}  skipped: bf16 is emulated on this device", flush=True)
    return bf16 and not native


def paths(device, seeds: int, steps: int, cases) -> None:
    """Seconds per net-step of every path in :data:`PATHS` for the conv cases, in one process, and each
    one's ratio to the plain fp32 loop; bf16 is skipped (and said so) where the device emulates it
    (:func:`gatelab.core.machine.bf16_native`). Per case and precision, the default path's ratio to the fastest
    (issue #48's goal: within 1.1x); the last line names the fastest path of each case."""
    from gatelab.core.machine import detect
    here = detect(device)
    native = here.bf16_native
    print(f"paths on {here.kind} ({here.model}), {torch.get_num_threads()} threads: stacked = {seeds} seeds, batch 32, "
          f"{steps} timed steps; bf16 native: {native}")
    for case, overrides, in_shape, _ in CASES:
        if "conv" not in case or (cases and not any(c in case for c in cases)):
            continue
        times = {}
        for name, (bf16, cl) in PLAIN.items():
            if _skipped(case, name, bf16, native):
                continue
            times["bf16" if bf16 else "fp32", name] = t = plain_seconds_per_step(overrides, in_shape, steps, device,
                                                                                 bf16=bf16, channels_last=cl)
            if name == "plain fp32 loop":
                plain = t
            print(f"{case:22s} {name:28s} {t:8.3f} s/net-step {plain / t:5.2f}x", flush=True)
        for name, (extra, bf16, stacked) in PATHS.items():
            if _skipped(case, name, bf16, native):
                continue
            s = seeds if stacked else 1
            t = seconds_per_step([*overrides, *extra], in_shape, s, steps, device, bf16=bf16) / s
            times["bf16" if bf16 else "fp32", name] = t
            print(f"{case:22s} {name:28s} {t:8.3f} s/net-step {plain / t:5.2f}x", flush=True)
        layout, stack = default_path(overrides, device)
        for prec in ("fp32", "bf16") if native else ("fp32",):
            name = f"{'stacked' if stack else 'single'} {prec}{' channels_last' if layout == ['channels_last=true'] else ''}"
            best = min(((n, t) for (p, n), t in times.items() if p == prec), key=lambda b: b[1])
            twin = f"plain {prec}{' channels_last' if layout == ['channels_last=true'] else ''} loop"
            print(f"default {case} {prec}: {name} {times[prec, name]:.3f} s/net-step, fastest {best[0]} {best[1]:.3f}: "
                  f"{times[prec, name] / best[1]:.2f}x the fastest; {times[prec, name] / times[prec, twin]:.2f}x its "
                  f"bare twin ({twin} {times[prec, twin]:.3f})", flush=True)
        best = min(times.items(), key=lambda b: b[1])
        print(f"fastest {case}: {best[0][1]} ({plain / best[1]:.2f}x the plain loop)", flush=True)
        fp32 = eval_seconds_per_example(overrides, in_shape, seeds, device, bf16=False)
        line = f"{case:22s} {'evaluation fp32':28s} {fp32 * 1e3:8.3f} ms/example-net"
        if native:
            bf16 = eval_seconds_per_example(overrides, in_shape, seeds, device, bf16=True)
            line += f"; bf16 (eval_precision=bf16) {bf16 * 1e3:.3f}: {fp32 / bf16:.2f}x"
        else:
            line += "; bf16 skipped: emulated on this device"
        print(line, flush=True)


def eval_seconds_per_example(overrides, in_shape, seeds: int, device, bf16: bool, n: int = 2048) -> float:
    """Seconds per test example and net of the product's evaluation (``training.metrics.evaluate``, its
    default eval_batch_size) of ``seeds`` stacked nets, fp32 or under bf16 autocast (``eval_precision``)."""
    from gatelab.data.datasets import Split
    from gatelab.training.metrics import evaluate
    cfg = compose([*overrides, "progress=false", f"device={device}"])
    data = Data(Split(torch.zeros(0, *in_shape, dtype=torch.uint8, device=device),
                      torch.zeros(0, dtype=torch.long, device=device)),
                Split(torch.randint(0, 256, (n, *in_shape), dtype=torch.uint8, device=device),
                      torch.randint(0, 10, (n,), device=device)), in_shape, 10, "classification")
    with tempfile.TemporaryDirectory() as tmp:
        runs = [RunState(s, Path(tmp) / f"s{s}", compose([*overrides, f"seed={s}"]), 0.0) for s in range(seeds)]
        for r in runs:
            r.build(data, {})
        model, _, _ = stacking.setup(cfg, runs, device)
        sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
        for timed in (False, True):  # the first pass warms up (allocation, cuDNN's choices)
            sync()
            t = time.perf_counter()
            evaluate(model, data.test, int(cfg.eval_batch_size), "classification", seeds, bf16=bf16)
            sync()
    return (time.perf_counter() - t) / (n * seeds)


def projection(per_step: dict) -> list[str]:
    """Device-hours of Table 2 and Table 4 at paper scale, priced by their recipes
    (:mod:`gatelab.launch.recipes`) with the seconds per step measured here (single and batched)."""
    from gatelab.launch import recipes
    from gatelab.papers.reproduce import discover
    discover()
    lines = []
    for name in ("table2", "table4"):
        r = recipes.build(name, recipes.Options("paper"))
        runs = [x for w in recipes.plan_recipe(r, check=False) for s in w for x in s.priced()]
        seconds = costs.price(runs, {"here": per_step})["here"]
        lines.append(f"projection: {name} at paper scale (its recipe's {len(runs)} runs): " +
                     ("not measured here (--cases)" if seconds is None else f"{seconds / 3600:.2f} h"))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps (CPU smoke: under 10 minutes)")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--cases", nargs="*", default=None, help="only the cases whose name contains one of these")
    ap.add_argument("--record", metavar="DEVICE", default=None,
                    help="write the seconds per step (single and stacked) into conf/costs.yaml as DEVICE's entry "
                         "(e.g. h100; auto: the GPU's model, else cpu)")
    ap.add_argument("--paths", action="store_true",
                    help="the conv step's speed paths (fp32/bf16, channels_last) beside the plain loop, then stop")
    args = ap.parse_args()
    device = resolve_device(args.device)
    if args.paths:
        paths(device, 3 if args.seeds == 5 else args.seeds, 4 if args.quick else 12, args.cases)
        return
    print(f"device: {device_name(device)}; batch 32; seconds per epoch per net, extrapolated from timed steps; "
          f"row: {args.seeds} seeds x SGD step sizes {ROW_LRS}, stacked")
    print(f"{'case':22s} {'plain':>9s} {'single':>9s} {f'batched S={args.seeds}':>13s} {'speed-up':>9s} "
          f"{'vs plain':>9s} {f'row {len(ROW_LRS) * args.seeds} nets':>13s} {'speed-up':>9s}")
    from gatelab.core.machine import detect
    here = detect(device)
    ratio_fc, per_step = None, {"machine": {"kind": here.kind, "model": here.model}}
    if args.record == "auto":  # the machine's kind (h100, h200, cpu-avx512-bf16, ...: gatelab.core.machine)
        args.record = here.kind
    for case, overrides, in_shape, n_train in CASES:
        if args.cases and not any(c in case for c in args.cases):
            continue
        conv = "conv" in case
        steps = (10 if conv else 200) if args.quick else (60 if conv else 1000)
        if device.type == "cuda":
            steps *= 5
        plain = plain_seconds_per_step(overrides, in_shape, steps, device)
        single = seconds_per_step(overrides, in_shape, 1, steps, device)
        batched = seconds_per_step(overrides, in_shape, args.seeds, steps, device) / args.seeds
        row = seconds_per_step(overrides, in_shape, args.seeds, steps, device, lrs=ROW_LRS) / (args.seeds * len(ROW_LRS))
        per_epoch = n_train / 32
        ratio = single / batched
        print(f"{case:22s} {plain * per_epoch:9.2f} {single * per_epoch:9.2f} {batched * per_epoch:13.2f} "
              f"{ratio:8.2f}x {plain / batched:8.2f}x {row * per_epoch:13.2f} {single / row:8.2f}x", flush=True)
        name, regime = case.split("/")[0], case.split()[-1]
        entry = name if regime == "relu" else f"{name}/{regime}"
        per_step[entry] = costs.fit(single, batched * args.seeds, args.seeds)
        if conv and here.bf16_native:  # the same step under bf16 autocast, on the default layout
            single16 = seconds_per_step(overrides, in_shape, 1, steps, device, bf16=True)
            batched16 = seconds_per_step(overrides, in_shape, args.seeds, steps, device, bf16=True)
            per_step[f"{entry}@bf16"] = costs.fit(single16, batched16, args.seeds)
            print(f"{case:22s} bf16: single {single16 * per_epoch:.2f}, batched {batched16 / args.seeds * per_epoch:.2f} "
                  f"s per epoch per net", flush=True)
        if regime == "relu":
            ckpt = checkpoint_seconds(overrides, in_shape, device)
            per_step[f"epoch/{name}"] = float(f"{ckpt:.3g}")
            print(f"{case:22s} checkpoint writes {ckpt:.2f} s a net and epoch", flush=True)
        if WARMUP:
            per_step["warmup"] = float(f"{sum(WARMUP) / len(WARMUP):.3g}")
        if case == "fc/mnist relu":
            ratio_fc = ratio
        if args.record:  # after each case: a bench cut by a time limit keeps what it measured
            label = args.record.upper() if here.gpu else f"CPU ({here.kind.removeprefix('cpu-')}, {here.model})"
            costs.record(args.record, label,
                         f"scripts/bench.py on {device_name(device)} ({here.kind}, {here.model}), "
                         f"{time.strftime('%Y-%m-%d')}, {args.seeds} seeds stacked, batch 32, the default layout"
                         f"{' (--quick)' if args.quick else ''}: {', '.join(k for k in per_step if k != 'machine')}; "
                         f"warmup: the stacks' first epochs beyond their second; epoch/<net>: a net's last.pt and best.pt",
                         per_step)
            print(f"recorded {', '.join(k for k in per_step if k != 'machine')} as {args.record} in {costs.TABLE}",
                  flush=True)
    for line in projection(per_step):
        print(line)
    if ratio_fc is not None:
        print(f"speed-up fc/mnist {args.seeds} seeds: {ratio_fc:.2f}")


if __name__ == "__main__":
    main()
