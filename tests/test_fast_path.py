"""The fastest correct path by default (issue #48): what the machine is, the layout the convolutions
actually see, precision=auto, stacking, and the price of this machine first."""
from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F
from conftest import TINY_ARCH, make_cfg

from gatelab.core import machine
from gatelab.core.machine import Machine
from gatelab.core.runs import run_key

AMX = Machine("cpu-amx", "Intel Xeon family 6 model 143", True, "AVX512")
ZEN3 = Machine("cpu-avx2", "AMD EPYC family 25 model 1", False, "AVX2")
H200 = Machine("h200", "NVIDIA H200", True, "AVX512")


def on(monkeypatch, m: Machine) -> None:
    """Pretend this process runs on ``m`` (every caller reads ``machine.detect``)."""
    monkeypatch.setattr(machine, "detect", lambda device="cpu": m)


def test_the_cpu_kind_comes_from_its_flags_and_its_onednn():
    flags = "fpu sse avx2 avx512f avx512bw"
    assert machine.cpu_kind({"flags": flags + " amx_bf16 amx_tile avx512_bf16"}, bf16_native=True) == "cpu-amx"
    assert machine.cpu_kind({"flags": flags + " avx512_bf16"}, bf16_native=True) == "cpu-avx512-bf16"
    assert machine.cpu_kind({"flags": flags}, bf16_native=False) in ("cpu-avx512",)
    assert machine.cpu_kind({"flags": "fpu sse avx2"}, bf16_native=False) in ("cpu-avx2", "cpu-avx512")
    # bf16 flags without oneDNN's bf16 kernels are no bf16 path
    assert machine.cpu_kind({"flags": flags + " avx512_bf16"}, bf16_native=False) == "cpu-avx512"
    assert machine.cpu_model({"model name": "AMD EPYC", "cpu family": "26", "model": "2"}) == \
        "AMD EPYC family 26 model 2"
    assert machine.gpu_kind("NVIDIA H200") == "h200" and machine.gpu_kind("NVIDIA H100 80GB HBM3") == "h100"


@pytest.mark.parametrize("m, nhwc", [(AMX, True), (ZEN3, False)])
def test_the_default_layout_is_what_the_convolutions_see(monkeypatch, tiny_root, tmp_path, m, nhwc):
    """Unset, ``channels_last`` follows the machine; the memory format each convolution actually received is
    checked (a no-op channels_last fails here), and env records the layout that ran."""
    from gatelab.training.loop import train
    on(monkeypatch, m)
    seen = []
    real = F.conv2d

    def conv2d(x, w, *a, **k):
        seen.append(x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous())
        return real(x, w, *a, **k)
    monkeypatch.setattr(F, "conv2d", conv2d)
    res = train(make_cfg(["arch=gconv", *TINY_ARCH["gconv"], "dataset.limit_train=64", "dataset.limit_test=32"],
                         tiny_root), tmp_path / "run")
    assert res["status"] == "completed" and seen
    assert set(seen) == {nhwc}
    assert res["env"]["channels_last"] is nhwc and res["env"]["machine"]["kind"] == m.kind
    # an explicit setting wins over the machine's
    seen.clear()
    res = train(make_cfg(["arch=gconv", *TINY_ARCH["gconv"], "dataset.limit_train=64", "dataset.limit_test=32",
                          f"channels_last={str(not nhwc).lower()}"], tiny_root), tmp_path / "other")
    assert set(seen) == {not nhwc} and res["env"]["channels_last"] is (not nhwc)


@pytest.mark.parametrize("m, conv, expected", [(AMX, True, "bf16"), (ZEN3, True, "fp32"), (H200, True, "bf16"),
                                               (AMX, False, "fp32")])
def test_precision_auto_is_bf16_only_where_a_conv_net_has_native_kernels(monkeypatch, m, conv, expected):
    """``precision=auto``: bf16 for conv nets where bf16 is native, fp32 where it is emulated (a Zen 3) and for FC
    nets; the run key is the key of what it resolves to."""
    on(monkeypatch, m)
    arch = ["arch=gconv", *TINY_ARCH["gconv"]] if conv else ["arch=fc"]
    cfg = make_cfg([*arch, "precision=auto"])
    assert machine.precision_of(cfg) == expected
    assert run_key(cfg) == run_key(make_cfg([*arch, f"precision={expected}"]))
    other = "fp32" if expected == "bf16" else "bf16"
    assert run_key(cfg) != run_key(make_cfg([*arch, f"precision={other}"]))


def test_a_run_at_precision_auto_records_what_ran(monkeypatch, tiny_root, tmp_path):
    """results.json's config and env say fp32 on a machine that emulates bf16, never ``auto``; the run directory
    is the fp32 run's."""
    from gatelab.core.runs import run_dir
    from gatelab.training.loop import train
    on(monkeypatch, ZEN3)
    over = ["arch=gconv", *TINY_ARCH["gconv"], "dataset.limit_train=64", "dataset.limit_test=32", f"out_root={tmp_path}"]
    cfg = make_cfg([*over, "precision=auto"], tiny_root)
    where = run_dir(make_cfg([*over, "precision=fp32"], tiny_root))
    assert run_dir(cfg) == where
    res = train(cfg, run_dir(cfg))
    saved = json.loads((where / "results.json").read_text())
    assert res["status"] == saved["status"] == "completed"
    assert saved["config"]["precision"] == "fp32" and saved["env"]["precision"] == "fp32"
    assert saved["env"]["machine"] == ZEN3.as_dict()


@pytest.mark.parametrize("m, conv_stacked", [(AMX, False), (ZEN3, False), (H200, True)])
def test_conv_seeds_stack_only_where_stacking_pays(monkeypatch, m, conv_stacked):
    """Unset, ``stack_seeds`` stacks FC nets everywhere and conv nets on a GPU only (on the CPUs benched,
    two stacked conv nets cost at least two single steps); set, it wins."""
    from gatelab.launch import plan
    on(monkeypatch, m)
    conv = make_cfg(["arch=gconv", *TINY_ARCH["gconv"], "seeds=[0,1,2]"])
    fc = make_cfg(["arch=fc", "seeds=[0,1,2]"])
    assert [len(s) for s in plan.build(conv)[0].stacks] == ([3] if conv_stacked else [1, 1, 1])
    assert [len(s) for s in plan.build(fc)[0].stacks] == [3]
    forced = make_cfg(["arch=gconv", *TINY_ARCH["gconv"], "seeds=[0,1,2]", f"stack_seeds={str(not conv_stacked).lower()}"])
    assert [len(s) for s in plan.build(forced)[0].stacks] == ([1, 1, 1] if conv_stacked else [3])


TABLE = {"h100": {"machine": {"kind": "h100", "model": "NVIDIA H100"}, "label": "H100", "fc": 0.001},
         "zen4": {"machine": {"kind": "cpu-avx512-bf16", "model": "AMD EPYC (Zen 4)"}, "label": "Zen 4", "fc": 0.002},
         "zen3": {"machine": {"kind": "cpu-avx2", "model": "AMD EPYC family 25 model 1"}, "label": "Zen 3", "fc": 0.003}}


def test_the_plan_prices_this_machine_first_and_names_the_nearest_entry():
    from gatelab.launch import costs
    assert costs.for_machine(TABLE, ZEN3)[0] == ("zen3", "this machine")
    zen5 = Machine("cpu-avx512-bf16", "AMD EPYC family 26 model 2", True, "AVX512")
    assert costs.for_machine(TABLE, zen5)[0] == ("zen4", "this kind")
    assert costs.for_machine(TABLE, AMX)[0] == ("zen4", "nearest")  # the closest CPU kind
    assert costs.for_machine(TABLE, H200)[0] == ("h100", "nearest")
    assert {n for n, _ in costs.for_machine(TABLE, AMX)} == set(TABLE)


def test_words_put_this_machines_price_first(monkeypatch):
    from gatelab.launch import costs
    on(monkeypatch, ZEN3)
    text = costs.words({"h100": 60.0, "zen4": 120.0, "zen3": 600.0}, TABLE)
    assert text.startswith("about 10 min on Zen 3 (this machine), ")
    on(monkeypatch, AMX)
    assert costs.words({"h100": 60.0, "zen4": 120.0, "zen3": 600.0}, TABLE).startswith(
        "about 2 min on Zen 4 (the nearest entry: none for this machine; ")


def test_a_device_without_a_price_says_so_and_about_goes_before_the_first_number(monkeypatch):
    """The learned entry prices only the networks measured here: a recipe of another network is "not measured"
    there, and the sentence does not read "about not measured"."""
    from gatelab.launch import costs
    on(monkeypatch, ZEN3)
    text = costs.words({"h100": 60.0, "zen4": 120.0, "zen3": None}, TABLE)
    assert text.startswith("not measured on Zen 3 (this machine), about 60 s on H100, 2 min on Zen 4")
    mine = {costs.HERE: {"machine": {"kind": ZEN3.kind, "model": ZEN3.model}, "label": "CPU here (from 3 runs: fc)"}}
    text = costs.words({costs.HERE: 4.1 * 3600, "h100": 7200.0}, {**mine, **TABLE}, long=True)
    assert text.startswith("about 4.1 h on CPU here (from 3 runs: fc) (this machine), 2.0 H100-hours"), text


def test_this_machines_entry_learns_from_the_steady_time_not_from_a_pause():
    """A run paused (or beside a busy neighbour) during a few epochs measured 11x its price on the Zen 3 here; its
    steady time (every epoch at the median epoch's seconds, the rest of its wall time kept) is the machine's
    speed, and the learned entry scales by it."""
    from gatelab.launch import costs
    epochs = [{"epoch": i, "seconds": 2.0} for i in range(9)] + [{"epoch": 9, "seconds": 1000.0}]
    res = {"wall_time_s": 1000.0 + 9 * 2.0 + 5.0, "history": epochs}
    assert costs.steady_seconds(res) == pytest.approx(5.0 + 10 * 2.0)
    assert costs.steady_seconds({"wall_time_s": 7.0, "history": []}) == 7.0  # no epochs recorded: its wall time
    assert costs.steady_seconds({"wall_time_s": 7.0, "history": [{"epoch": 0, "seconds": 9.0}]}) == 7.0


def test_an_entrys_bf16_step_prices_runs_that_train_in_bf16(monkeypatch):
    """``<key>@bf16`` prices a bf16 run (and ``precision=auto`` on a machine where auto is bf16); fp32 runs and
    machines that emulate bf16 keep the fp32 step."""
    from gatelab.launch import costs
    entry = {"machine": {"kind": "cpu-amx", "model": "x"}, "gconv": [0.0, 0.4], "gconv@bf16": [0.0, 0.1]}
    slow = {**entry, "machine": {"kind": "cpu-avx2", "model": "y"}}
    conv = ["arch=gconv"]
    assert costs.per_step(entry, make_cfg([*conv, "precision=bf16"]))[1] == pytest.approx(0.1)
    assert costs.per_step(entry, make_cfg([*conv, "precision=auto"]))[1] == pytest.approx(0.1)
    assert costs.per_step(slow, make_cfg([*conv, "precision=auto"]))[1] == pytest.approx(0.4)
    assert costs.per_step(entry, make_cfg(conv))[1] == pytest.approx(0.4)


def test_a_plan_prices_this_machine_from_its_own_completed_runs(tiny_root, tmp_path):
    """Issue #57 §2: this machine's completed runs (results.json's env.machine) give an entry of its own, first,
    named "this machine": the nearest recorded entry scaled by the median measured / priced of each network, and
    only those networks; runs of another machine are not read."""
    import json
    from conftest import make_cfg
    from gatelab.core.machine import Machine
    from gatelab.launch import costs
    from gatelab.training.loop import train
    table = costs.load(runs=None)
    res = train(make_cfg(["epochs=1", "arch.dense=[8]", f"out_root={tmp_path / 'outputs'}"], tiny_root),
                tmp_path / "outputs" / "runs" / "r")
    here = Machine(res["env"]["machine"]["kind"], res["env"]["machine"]["model"], True, "")
    base = costs.for_machine(table, here)[0][0]
    df = costs.priced_against_measured([tmp_path / "outputs"], base, table)
    path = tmp_path / "outputs" / "runs" / "r" / "results.json"
    r = json.loads(path.read_text())
    priced = float(df.priced_s.iloc[0])
    r["wall_time_s"] = 3.0 * priced  # this machine: three times the entry's price
    r["history"] = [dict(h, seconds=3.0 * priced - 0.5) for h in r["history"]]
    path.write_text(json.dumps(r))
    mine = costs.learned(table, tmp_path / "outputs", here)
    assert mine is not None and "from 1 runs" in mine["label"] and mine["machine"]["model"] == here.model
    cfg = make_cfg(["epochs=1", "arch.dense=[8]"], tiny_root)
    assert {k for k in mine if k not in ("machine", "label", "source", "start", "warmup", "epoch")} == {
        k for k in table[base] if costs._net(k) == costs.key(cfg)}  # the network it ran, no other
    both = costs.price([(cfg, 100_000, 0)], {"here": mine, base: table[base]})
    assert both["here"] / both[base] > 2.0  # priced from its runs: about 3x (the fixed costs unscaled)
    assert costs.for_machine({"here": mine, **table}, here)[0] == ("here", "this machine")
    other = Machine("cpu-avx2", "another CPU", False, "")
    assert costs.learned(table, tmp_path / "outputs", other) is None  # another machine's runs are not its price
    # a second run of the same network, paused for 100x its price in one of its three epochs: its steady time is
    # what the entry learns from (the median ratio of the two runs stays near 2x, not 30x)
    cfg2 = make_cfg(["epochs=3", "arch.dense=[8]", "seed=1", f"out_root={tmp_path / 'outputs'}"], tiny_root)
    train(cfg2, tmp_path / "outputs" / "runs" / "r2")
    path2 = tmp_path / "outputs" / "runs" / "r2" / "results.json"
    r2 = json.loads(path2.read_text())
    for h, sec in zip(r2["history"], (1.5 * priced, 1.5 * priced, 100.0 * priced)):
        h["seconds"] = sec
    r2["wall_time_s"] = 103.0 * priced + 0.5
    path2.write_text(json.dumps(r2))
    df2 = costs.priced_against_measured([tmp_path / "outputs"], base, table)
    paused = df2[df2.epochs == 3].iloc[0]
    # the wall time holds the pause (103x one epoch's price against a steady 4.5x: the ratio, not the entry's fixed
    # costs, which differ by machine: on a Zen 4 entry the wall was 35x the 3-epoch price, on a Zen 3 over 40x)
    assert paused.measured_s > 15 * paused.steady_s and 1.0 < paused.steady_s / paused.priced_s < 3.0
    again = costs.learned(table, tmp_path / "outputs", here)
    assert "from 2 runs" in again["label"]
    assert 1.5 < costs.price([(cfg, 100_000, 0)], {"here": again})["here"] / both[base] < 3.5
