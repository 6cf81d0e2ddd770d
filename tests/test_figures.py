"""Figure 3 equivalents end to end on tiny data: the runs, the kernels over training, the files."""
import pandas as pd
import pytest

from gatelab import figures

TINY = {"left": dict(relu_epochs=2, stages=[1, 2], flnpf_epochs=1, data=["arch.conv_channels=[4,4]", "arch.dense=[16]"]),
        "middle": dict(epochs=2, data=[]), "right": dict(epochs=2, data=["arch.dense=[16,16]"])}


def test_figure3_panels_write_png_pdf_csv(tiny_root, tmp_path, monkeypatch):
    monkeypatch.setitem(figures.SCALES, "tiny", TINY)
    out = tmp_path / "out"
    figures.main(["figure3", "--scale", "tiny", "--runs", str(tmp_path / "runs"), "--out", str(out),
                  f"data.root={tiny_root}", "device=cpu"])
    for panel in ("left", "middle", "right"):
        for ext in ("png", "pdf", "csv"):
            assert (out / f"figure3_{panel}.{ext}").stat().st_size > 0
    left = pd.read_csv(out / "figure3_left.csv")
    assert left.source_epoch.tolist() == [1, 2] and (left.cntk_published == 77.43).all()
    middle = pd.read_csv(out / "figure3_middle.csv")
    assert middle.epoch.tolist() == [0, 1, 2] and (middle.nu > 0).all()
    right = pd.read_csv(out / "figure3_right.csv")
    assert {"trace_Kv", "trace_Kf", "fro_Kv", "fro_Kf"} <= set(right.columns)
    assert (right.trace_Kf > 0).all() and (right.fro_Kv <= right.trace_Kv + 1e-6).all()  # ‖K‖_F ≤ tr K for PSD K
    # the training runs are ordinary runs: a second call finds and reuses them
    before = sorted(p.stat().st_mtime_ns for p in (tmp_path / "runs").rglob("results.json"))
    figures.main(["figure3", "--scale", "tiny", "--panels", "middle", "--runs", str(tmp_path / "runs"),
                  "--out", str(out), f"data.root={tiny_root}", "device=cpu"])
    assert sorted(p.stat().st_mtime_ns for p in (tmp_path / "runs").rglob("results.json")) == before
    with pytest.raises(SystemExit):
        figures.main(["figure9"])
