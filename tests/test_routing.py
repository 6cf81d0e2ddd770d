"""Paper 003's routing task and network (gatelab.nets.routing) in the shared loop."""
import json
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from omegaconf import OmegaConf

from conftest import make_cfg, reassociation_tol
from gatelab.data import routing_tasks
from gatelab.nets import routing
from gatelab.core.config import ConfigError
from gatelab.core.validation import validate
from gatelab.core.runs import seed_run_dirs
from gatelab.launch.plan import run_seeds
from gatelab.training.loop import train
from gatelab.training.metrics import pointwise

ROUTE = ["dataset=routing_mnist_perm", "arch=routing", "regime=dln", "optimizer=sgd", "optimizer.lr=0.05",
         "optimizer.momentum=0.9", "optimizer.batch_size=8", "arch.dense=[16]", "dataset.routing.M=6",
         "dataset.routing.K=2", "dataset.limit_train=48", "dataset.limit_test=24"]


def _task(m=7, k=3, kind="permute", perms="random", shape=(1, 6, 6), seed=0):
    cfg = OmegaConf.create({"M": m, "K": k, "input": kind, "max_angle": 180.0, "output_perms": perms})
    return routing_tasks.make_task(cfg, shape, 10, seed)


def test_every_domain_is_in_exactly_k_trained_pairs_along_a_shuffled_band():
    task = _task(m=7, k=3)
    mask = task["mask"]
    assert mask.sum(1).tolist() == [3] * 7 and mask.sum(0).tolist() == [3] * 7
    # (i, σ(i+k mod M)): undoing σ, the trained outputs of input i are i, i+1, i+2 mod 7
    gen = routing_tasks.task_generator(0)  # the draws of make_task, in order: inputs, labels, then σ
    routing_tasks.input_index("permute", 7, (1, 6, 6), 180.0, gen)
    routing_tasks.label_maps("random", 7, 10, gen)
    sigma = torch.randperm(7, generator=gen)
    inv = torch.argsort(sigma)
    for i in range(7):
        assert sorted(inv[torch.nonzero(mask[i]).flatten()].tolist()) == sorted((i + k) % 7 for k in range(3))
    assert all(sorted(p.tolist()) == list(range(10)) for p in task["label_maps"])
    assert all(sorted(p.tolist()) == list(range(36)) for p in task["input_index"])
    assert not torch.equal(_task(seed=1)["mask"], mask) or not torch.equal(_task(seed=1)["input_index"], task["input_index"])


def test_lexicographic_label_maps_are_the_authors_first_permutations():
    maps = _task(m=3, perms="lexicographic")["label_maps"]
    assert maps.tolist() == [list(range(10)), [0, 1, 2, 3, 4, 5, 6, 7, 9, 8], [0, 1, 2, 3, 4, 5, 6, 8, 7, 9]]


def test_rotation_domains_rotate_the_image_about_its_centre():
    idx = routing_tasks.input_index("rotate", 4, (1, 5, 5), 360.0, torch.Generator())  # 0, 90, 180, 270 degrees
    img = torch.arange(25.0).view(1, 5, 5)
    pad = torch.cat([img.flatten(), torch.zeros(1)])
    turned = [pad[i].view(5, 5) for i in idx]
    assert torch.equal(turned[0], img[0])
    assert torch.equal(turned[1], torch.rot90(img[0], 1))  # counter-clockwise, as torchvision's rotate
    assert torch.equal(turned[2], torch.rot90(img[0], 2))
    assert torch.equal(turned[3], torch.rot90(img[0], 3))
    corners = routing_tasks.input_index("rotate", 8, (1, 5, 5), 360.0, torch.Generator())[1]  # 45 degrees
    assert (corners == 25).any()  # pixels rotated in from outside the image are zero


def test_the_net_computes_psi_j_theta_phi_i_of_each_trained_pair_with_output_labels_permuted():
    torch.manual_seed(0)
    task = _task(m=4, k=2)
    net = routing.init_(routing.RoutingNet(4, 36, 5, 10, task, "leaky", 0.1), 1.0, "per_decoder",
                        torch.Generator().manual_seed(0)).double()
    for p in (net.enc_b, net.shared_b, net.dec_b):
        torch.nn.init.normal_(p)
    x = torch.rand(3, 1, 6, 6, dtype=torch.float64)
    y = torch.tensor([1, 7, 4])
    out = net(x)  # (B, P, 10)
    allp = net.all_pairs(x)[0]  # (B, M, M, 10)
    assert out.shape == (3, 8, 10)
    leaky = lambda z: F.leaky_relu(z, 0.1)  # noqa: E731
    for p, (i, j) in enumerate(net.pairs.tolist()):
        xi = torch.cat([x.flatten(1), torch.zeros(3, 1, dtype=x.dtype)], 1)[:, task["input_index"][i]]
        h = leaky(leaky(xi @ net.enc_w[i] + net.enc_b[i]) @ net.shared_w + net.shared_b)
        raw = h @ net.dec_w[j] + net.dec_b[j]  # logits in output domain j's label space
        target = task["label_maps"][j][y]  # π_j(y)
        torch.testing.assert_close(F.cross_entropy(out[:, p], y, reduction="none"),
                                   F.cross_entropy(raw, target, reduction="none"), rtol=0, atol=1e-12)
        assert torch.equal(out[:, p].argmax(-1) == y, raw.argmax(-1) == target)
        # the theory's squared loss is invariant to the output permutation too
        l2, _ = pointwise(out[:, p], y, "classification_l2")
        torch.testing.assert_close(l2, 0.5 * (raw - F.one_hot(target, 10).double()).square().sum(-1), rtol=0, atol=1e-12)
        torch.testing.assert_close(allp[:, i, j], out[:, p], rtol=0, atol=1e-12)


@pytest.mark.parametrize("fan,bound", [("per_decoder", lambda h, m: math.sqrt(6 / (h + 10))),
                                       ("stacked3d", lambda h, m: math.sqrt(6 / (10 * h + 10 * m)))])
def test_decoder_init_bounds(fan, bound):
    net = routing.init_(routing.RoutingNet(20, 36, 128, 10, _task(m=20, k=5)), 0.5, fan, torch.Generator().manual_seed(0))
    b = 0.5 * bound(128, 20)
    assert net.dec_w.abs().max() <= b and net.dec_w.abs().max() > 0.95 * b
    assert not net.enc_b.any() and not net.dec_b.any()


@pytest.mark.parametrize("over,match", [
    (["arch=routing", "arch.dense=[16]"], "go together"),
    (["dataset=routing_mnist_perm", "arch=fc"], "go together"),
    ([*ROUTE, "dataset.routing.K=9"], "K=9"),
    ([*ROUTE, "regime=relu"], "dln"),
    (["regime.gate=leaky"], "leaky"),
])
def test_bad_routing_settings_are_rejected(over, match):
    with pytest.raises(ConfigError, match=match):
        validate(make_cfg(over))


def test_a_routing_run_records_trained_and_untrained_pairs_and_stacks_seeds_exactly(tiny_root, tmp_path):
    over = [*ROUTE, "epochs=2", f"out_root={tmp_path}"]
    stacked = make_cfg([*over, "seeds=[0,1]"], tiny_root)
    out = run_seeds(stacked)
    assert {s: r["status"] for s, r in out.items()} == {0: "completed", 1: "completed"}
    for seed, res in out.items():
        h = res["history"][-1]
        assert {"test_untrained_acc", "train_trained_acc", "train_untrained_loss"} <= set(h)
        assert 0 <= h["test_untrained_acc"] <= 1 and h["train_trained_loss"] > 0
        single = train(make_cfg([*over, f"seed={seed}", "out_root=" + str(tmp_path / "single")], tiny_root),
                       tmp_path / f"single{seed}")
        a = torch.load(seed_run_dirs(stacked)[seed] / "ckpt" / "last.pt", weights_only=False)["model"]
        b = torch.load(tmp_path / f"single{seed}" / "ckpt" / "last.pt", weights_only=False)["model"]
        steps = 2 * 6
        for k in b:
            assert torch.equal(a[k], b[k]) if not a[k].is_floating_point() else \
                (a[k] - b[k]).abs().max() <= reassociation_tol(b[k], steps)
        assert abs(single["history"][-1]["test_acc"] - h["test_acc"]) <= 1 / (24 * 12) + 1e-9
    saved = json.loads((seed_run_dirs(stacked)[0] / "results.json").read_text())
    assert saved["config"]["dataset"]["routing"]["M"] == 6


def test_routing_report_lays_out_trained_and_untrained_error_with_standard_errors(tiny_root, tmp_path):
    import pandas as pd
    from gatelab.papers import routing as paper
    over = [*ROUTE, "epochs=2", f"out_root={tmp_path}", "seeds=[0,1,2]"]
    for k in (2, 6):
        cfg = make_cfg([*over, f"dataset.routing.K={k}"], tiny_root)
        run_seeds(cfg)
    df = paper.write_table(tmp_path, tmp_path / "out", command="make routing-reduced")
    assert sorted(df.K) == [2, 6] and set(df.n) == {3}
    rows, _ = paper.scan(tmp_path)
    for _, line in df.iterrows():
        errs = [100 * (1 - json.loads((Path(r["path"]) / "results.json").read_text())["history"][-1]["test_untrained_acc"])
                for r in rows if r["K"] == line.K] if line.K < 6 else None
        if errs:
            assert line.err_untrained == pytest.approx(sum(errs) / 3)
            assert line.err_untrained_se == pytest.approx(pd.Series(errs).std() / math.sqrt(3))
    assert math.isnan(df[df.K == 6].err_untrained.item())  # K = M: no untrained pair
    text = (tmp_path / "out" / "routing.md").read_text()
    assert "make routing-reduced" in text and (tmp_path / "out" / "error_vs_K.png").is_file()
    (tmp_path / "out" / "error_vs_K.png").unlink()  # redrawn from routing.csv alone
    assert paper.replot(tmp_path / "out") == ["error_vs_K"] and (tmp_path / "out" / "error_vs_K.png").is_file()
    # the zero-shot threshold: where the gap falls to 1 point, log-linear between the bracketing K (4 → 0.5
    # points at K/M 0.4 → 0.5: 0.4 + ln 4 / ln 8 × 0.1); a lone K at another length (60 epochs) is not a sweep
    fake = pd.DataFrame({"task": "t", "regime": "dln", "M": 10, "K": [3, 4, 5, 3], "K_over_M": [.3, .4, .5, .3],
                         "gain": 1.0, "epochs": [15, 15, 15, 60], "gap": [9.0, 4.0, 0.5, 0.2], "n": 3,
                         "err_trained": 10.0, "err_trained_se": 0.1, "err_untrained_se": 0.1, "learned": True})
    z = paper.zero_shot_threshold(fake)
    assert z.K_over_M.tolist() == [pytest.approx(0.4 + math.log(4) / math.log(8) * 0.1)] and z.seeds.item() == 3
    # 3 seeds: a t with 2 degrees of freedom leaves the upper end open (0.5 points ± 0.14 may be above 1)
    assert z.lo.item() < z.K_over_M.item() and math.isinf(z.hi.item()) and z.verdict.item() == "not shown"
    more = paper.zero_shot_threshold(fake.assign(n=10, err_trained_se=0.05, err_untrained_se=0.05))
    assert more.K_over_M.item() == z.K_over_M.item()  # more seeds narrow the interval, not move the point
    assert z.lo.item() < more.lo.item() < more.K_over_M.item() < more.hi.item() < 0.5
    # the paper's 0.40 lies below the lower end less 0.05: contradicted, or borderline where less 0.07 would reach it
    assert more.lo.item() - 0.03 > 0.40
    assert more.verdict.item() == ("borderline" if more.lo.item() - 0.07 <= 0.40 else "contradicted")


def test_a_report_keeps_the_lines_whose_runs_are_gone_only_when_asked(tiny_root, tmp_path):
    """``--keep``: a K whose runs were made elsewhere (or pruned) stays with the previous provenance; a K
    run again replaces its old line; without it the report is the runs below --runs alone."""
    import pandas as pd
    import shutil
    from gatelab.papers import routing as paper
    over = [*ROUTE, "epochs=1", "seeds=[0,1]"]
    for k, root in ((2, "a"), (6, "b")):
        run_seeds(make_cfg([*over, f"dataset.routing.K={k}", f"out_root={tmp_path / root}"], tiny_root))
    shutil.copytree(tmp_path / "b", tmp_path / "both", dirs_exist_ok=True)
    shutil.copytree(tmp_path / "a", tmp_path / "both", dirs_exist_ok=True)
    out = tmp_path / "out"
    first = paper.write_table(tmp_path / "both", out, command="first")
    second = paper.write_table(tmp_path / "b", out, command="second", keep=True)
    assert sorted(second.K) == [2, 6]
    pd_cols = ["err_trained", "err_untrained_se", "n"]
    assert second[second.K == 2][pd_cols].to_numpy().ravel().tolist() == pytest.approx(
        first[first.K == 2][pd_cols].to_numpy().ravel().tolist(), abs=1e-4)  # as the CSV rounds
    text = (out / "routing.md").read_text()
    assert "- kept from earlier renders (1 lines" in text and "  - command: `first`" in text
    assert "- command: `second`" in text and "runs: 2 results.json" in text
    # the same runs again: the same bytes, and the first render's provenance still named
    paper.write_table(tmp_path / "b", out, command="second", keep=True)
    assert (out / "routing.md").read_text() == text
    paper.write_table(tmp_path / "b", out, command="second again", keep=True)
    again = (out / "routing.md").read_text()
    assert "  - command: `first`" in again and "  - command: `second`" in again
    # no runs at all: the previous lines re-rendered from the CSV alone, the same bytes twice
    (tmp_path / "none").mkdir()
    lines = len(paper.write_table(tmp_path / "none", out, command="from the CSV", keep=True))
    csv_only = (out / "routing.md").read_text()
    paper.write_table(tmp_path / "none", out, command="from the CSV", keep=True)
    assert (out / "routing.md").read_text() == csv_only and "re-rendered by today's rules" in csv_only
    assert lines == len(pd.read_csv(out / "routing.csv")) and "  - command: `first`" in csv_only
    assert sorted(paper.write_table(tmp_path / "b", out, command="third").K) == [6]


# ---- CIFAR features from the frozen backbone (gatelab.data.backbone) ----

@pytest.fixture
def fake_backbone(tmp_path, monkeypatch, tiny_root):
    """A randomly initialised ResNet-20 saved as akamaster's checkpoint (DataParallel keys) in a
    copy of the tiny data root; the expected hash is the fake's own."""
    import shutil
    from gatelab.data import backbone
    from gatelab.papers.routing import backbone_training
    root = tmp_path / "data"
    shutil.copytree(tiny_root, root)
    torch.manual_seed(0)
    net = backbone.ResNet20()
    for m in net.modules():  # non-trivial batch-norm statistics
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    torch.save({"best_prec1": 0.0, "state_dict": {f"module.{k}": v for k, v in net.state_dict().items()}},
               root / backbone.RESNET20_FILE)
    monkeypatch.setattr(backbone, "RESNET20_SHA256", backbone.sha256(root / backbone.RESNET20_FILE))
    monkeypatch.setenv("GATELAB_CACHE", str(tmp_path / "cache"))
    return root, net.eval()


def test_backbone_is_checked_and_its_features_are_stages_1_2_pooled_of_each_rotation(fake_backbone, tmp_path):
    from gatelab.data import backbone
    root, net = fake_backbone
    loaded = backbone.load_resnet20(root)
    keys = [k for k in loaded.state_dict() if not k.endswith("num_batches_tracked")]
    assert len(keys) == 97 and all(torch.equal(loaded.state_dict()[k], net.state_dict()[k]) for k in keys)
    images = torch.randint(0, 256, (5, 3, 32, 32), dtype=torch.uint8)
    index = routing_tasks.input_index("rotate", 4, (3, 32, 32), 360.0, torch.Generator())
    feats = backbone.rotated_features(loaded, images, index, "resnet20")
    assert feats.shape == (5, 4, 512)
    with torch.no_grad():
        z = net.layer2(net.layer1(F.relu(net.bn1(net.conv1(images.float() / 255)))))
        torch.testing.assert_close(feats[:, 0], F.avg_pool2d(z, 4).flatten(1))  # rotation 0: the image itself
        torch.testing.assert_close(feats[:, 2], net.features(torch.rot90(images.float() / 255, 2, (2, 3))))
    (root / backbone.RESNET20_FILE).write_bytes(b"not a checkpoint")
    with pytest.raises(FileNotFoundError, match="sha256"):
        backbone.load_resnet20(root)
    with pytest.raises(FileNotFoundError, match=backbone.RESNET20_FILE):
        backbone.load_resnet20(tmp_path / "nowhere")


def test_a_cifar_routing_run_trains_on_cached_backbone_features(fake_backbone, tmp_path):
    root, _ = fake_backbone
    over = ["dataset=routing_cifar_rot", *ROUTE[1:], "epochs=1", "dataset.limit_train=40", "dataset.limit_test=20"]
    cfg = make_cfg(over, root, tmp_path / "run")
    res = train(cfg, tmp_path / "run")
    assert res["status"] == "completed" and res["model"]["params"] == 6 * (512 * 16 + 16) + 16 * 16 + 16 + 6 * (16 * 10 + 10)
    cached = list((tmp_path / "cache" / "features").glob("*.npz"))
    assert len(cached) == 1 and json.loads((tmp_path / "cache" / "features" / "backbone.json").read_text())["test_images"] == 20
    again = train(make_cfg([*over, "force=true"], root, tmp_path / "run2"), tmp_path / "run2")  # from the cache
    assert again["history"][-1]["test_acc"] == res["history"][-1]["test_acc"]


def test_backbone_augmentation_is_akamasters_crop_of_the_padded_image_then_a_flip():
    from gatelab.papers.routing import backbone_training
    images = torch.randint(0, 256, (16, 3, 8, 8), dtype=torch.uint8)
    out = backbone_training.crop_flip(images, torch.Generator().manual_seed(3), pad=2)
    gen = torch.Generator().manual_seed(3)  # the same draws, replayed one image at a time
    dy, dx = torch.randint(0, 5, (2, 16), generator=gen)
    flip = torch.rand(16, generator=gen) < 0.5
    padded = F.pad(images, (2, 2, 2, 2))
    for i in range(16):
        crop = padded[i, :, dy[i]:dy[i] + 8, dx[i]:dx[i] + 8]
        assert torch.equal(out[i], crop.flip(2) if flip[i] else crop)
    assert 0 < int(flip.sum()) < 16 and out.dtype == torch.uint8


def test_a_trained_backbone_is_recorded_checked_and_used_by_the_cifar_task(tiny_root, tmp_path, monkeypatch):
    """Without the published file: train_resnet20 writes a checkpoint in akamaster's layout and a
    record with its sha256 and accuracy; dataset.routing.backbone=<file> then encodes the task
    with it (its own feature cache); a changed file or a missing record stops with a clear error."""
    import shutil
    from gatelab.data import backbone
    from gatelab.papers.routing import backbone_training
    root = tmp_path / "data"
    shutil.copytree(tiny_root, root)
    monkeypatch.setenv("GATELAB_CACHE", str(tmp_path / "cache"))
    info = backbone_training.train_resnet20(root, root / "mine.th", epochs=2, batch=32, limit_train=64, limit_test=40,
                                   log=lambda *_: None)
    assert info["recipe"]["milestones"] == [1, 2] and len(info["history"]) == 2 and info["test_images"] == 40
    assert all(math.isfinite(h["train_loss"]) for h in info["history"])
    record = json.loads((root / "mine.th.json").read_text())
    assert record["sha256"] == backbone.sha256(root / "mine.th")
    net = backbone.load_resnet20(root, "mine.th")
    saved = torch.load(root / "mine.th", weights_only=False)["state_dict"]
    assert all(torch.equal(v, saved[f"module.{k}"]) for k, v in net.state_dict().items())
    over = ["dataset=routing_cifar_rot", "dataset.routing.backbone=mine.th", *ROUTE[1:], "epochs=1",
            "dataset.limit_train=40", "dataset.limit_test=20"]
    res = train(make_cfg(over, root, tmp_path / "run"), tmp_path / "run")
    assert res["status"] == "completed"
    assert json.loads(backbone.info_path("mine.th").read_text())["sha256"] == record["sha256"]
    shutil.copy(root / "mine.th", root / "copy.th")  # no record: not a backbone this tool trained
    with pytest.raises(FileNotFoundError, match="copy.th.json"):
        backbone.load_resnet20(root, "copy.th")
    with open(root / "mine.th", "ab") as f:
        f.write(b"x")
    with pytest.raises(FileNotFoundError, match="sha256"):
        backbone.load_resnet20(root, "mine.th")


def test_a_routing_run_with_the_squared_loss_of_the_theory(tiny_root, tmp_path):
    res = train(make_cfg([*ROUTE, "epochs=3", "dataset.task=classification_l2"], tiny_root, tmp_path / "run"), tmp_path / "run")
    h = res["history"]
    assert res["status"] == "completed" and h[-1]["train_loss"] < h[0]["train_loss"]
    ce = train(make_cfg([*ROUTE, "epochs=3"], tiny_root, tmp_path / "ce"), tmp_path / "ce")["history"]
    assert h[0]["train_loss"] != pytest.approx(ce[0]["train_loss"], rel=0.05)  # a different loss, not CE renamed


def test_a_net_still_on_its_plateau_does_not_count_as_generalising():
    from gatelab.papers import routing as paper
    rows = [{"path": f"p{s}", "status": "completed", "seed": s, "task": "t", "regime": "dln", "M": 10, "K": 2,
             "input": "permute", "gain": g, "h": 8, "lr": 0.01, "epochs": 1, "limits": "all/all",
             "plateau_exit_epoch": 1, "finished_at": "", "commit": None, "device": "cpu",
             "err_trained": e, "err_untrained": e, "loss_trained": 2.3, "loss_untrained": 2.3,
             "train_err_trained": e, "train_err_untrained": e}
            for s in range(3) for g, e in ((1.0, 90.0), (0.1, 10.0 + s))]
    rows += [dict(r, K=4, path=r["path"] + "k4") for r in rows]
    df = paper.table(rows)
    stuck, good = df[df.gain == 1.0].iloc[0], df[df.gain == 0.1].iloc[0]
    assert not stuck.learned and not stuck.within_2se  # equal errors at chance: nothing learned
    assert good.learned and good.within_2se
    assert math.isnan(stuck.plateau_exit_epoch) and good.plateau_exit_epoch == 1
    assert math.isnan(paper.zero_shot_threshold(df).K_over_M.item())  # the plateau's cells give no threshold


def test_gap_crossing_is_log_linear_between_the_bracketing_k():
    from gatelab.papers import routing as paper
    r, extra = paper.gap_crossing([0.4, 0.5], [6.61, 1.30])
    assert r == pytest.approx(0.4 + math.log(6.61) / (math.log(6.61) - math.log(1.30)) * 0.1) and extra
    r, extra = paper.gap_crossing([0.3, 0.4, 0.5, 0.6], [27.0, 4.0, 0.5, 0.2])
    assert r == pytest.approx(0.4 + math.log(4.0) / (math.log(4.0) - math.log(0.5)) * 0.1) and not extra
    assert paper.gap_crossing([0.4, 0.5], [0.8, 0.1]) == (0.4, True)  # already below at the smallest K
    assert math.isnan(paper.gap_crossing([0.4], [3.0])[0])


def test_isolation_finds_the_base_and_changes_one_factor_at_a_time(tmp_path):
    from gatelab.papers import routing as paper
    settings = {"base": dict(M=10, epochs=15, lr=0.01, gaps=(8.0, 2.0)),
                "longer": dict(M=10, epochs=30, lr=0.01, gaps=(2.0, 0.5)),
                "slower": dict(M=10, epochs=15, lr=0.001, gaps=(9.0, 4.0)),
                "two_off": dict(M=20, epochs=30, lr=0.01, gaps=(1.0, 0.1)),
                "other_task": dict(M=10, epochs=15, lr=0.01, gaps=(1.0, 0.1), task="u")}
    rows = []
    for name, s in settings.items():
        for k, gap in zip((4, 5), s["gaps"]):
            for seed in range(3):
                e = 10.0 + 0.1 * seed
                rows.append({"path": f"{name}{k}{seed}", "status": "completed", "seed": seed, "task": s.get("task", "t"),
                             "regime": "dln", "M": s["M"], "K": k * s["M"] // 10, "input": "permute", "gain": 1.0,
                             "h": 8, "lr": s["lr"], "epochs": s["epochs"], "limits": "600/100",
                             "plateau_exit_epoch": 1, "finished_at": "", "commit": None, "device": "cpu",
                             "err_trained": e, "err_untrained": e + gap, "loss_trained": 0.4, "loss_untrained": 0.5,
                             "train_err_trained": e, "train_err_untrained": e})
    iso = paper.isolation(paper.table(rows)).set_index("factor")
    assert list(iso.index) == ["base", "epochs", "lr", "M + epochs"]  # another task: left out
    assert iso.loc["epochs", "value"] == 30 and iso.loc["epochs", "base_value"] == 15
    assert iso.loc["M + epochs", "value"] == "20, 30" and iso.loc["M + epochs", "base_value"] == "10, 15"
    for name, factor in (("base", "base"), ("longer", "epochs"), ("slower", "lr"), ("two_off", "M + epochs")):
        want = paper.gap_crossing([0.4, 0.5], list(settings[name]["gaps"]))[0]
        assert iso.loc[factor, "k_over_m_at_gap"] == pytest.approx(want)
        assert iso.loc[factor, "shift"] == pytest.approx(want - iso.loc["base", "k_over_m_at_gap"])
    assert iso.loc["epochs", "shift"] < 0 < iso.loc["lr", "shift"]
    from gatelab.papers.routing.isolation import render
    text = render(iso.reset_index(), rows, "make routing-isolation")
    assert "| epochs | 15 → 30 |" in text and "| lr | 0.01 → 0.001 |" in text and "make routing-isolation" in text
    assert "| M + epochs | 10, 15 → 20, 30 |" in text
    assert iso.loc["epochs", "k_over_m_lo"] < iso.loc["epochs", "k_over_m_at_gap"] < iso.loc["epochs", "k_over_m_hi"]
    assert math.isinf(iso.loc["base", "k_over_m_lo"]) and iso.loc["base", "verdict"] == "contradicted"  # 2 points at 0.5
    # a study whose runs were made elsewhere is judged again from its isolation.csv alone: the same rule
    from gatelab.papers import report
    from gatelab.papers.routing.isolation import rejudged
    report.write_outputs(tmp_path, "isolation", iso.reset_index(), {})
    again = rejudged(tmp_path).set_index("factor")
    for col in ("k_over_m_at_gap", "k_over_m_lo", "k_over_m_hi", "shift"):  # points are kept to 2 decimals
        assert again[col].to_numpy() == pytest.approx(iso[col].to_numpy(), abs=0.01)
    assert list(again.verdict) == list(iso.verdict) and "k_over_m_2se" not in again
    # write_isolation with no runs below its runs directory: judged again, the same bytes twice
    from gatelab.papers.routing.isolation import write_isolation
    (tmp_path / "isolation.md").write_text(render(iso.reset_index(), rows, "make routing-isolation"))
    (tmp_path / "none").mkdir()
    write_isolation(tmp_path / "none", tmp_path, "rejudge")
    first = (tmp_path / "isolation.md").read_text()
    write_isolation(tmp_path / "none", tmp_path, "rejudge")
    assert (tmp_path / "isolation.md").read_text() == first and first.count("- re-judged by `rejudge`") == 1
    assert "make routing-isolation" in first  # the render it came from, kept


def test_the_gain_figure_renders_beside_the_k_sweep_under_the_strict_check(tmp_path):
    import pandas as pd
    from gatelab.papers import routing as paper
    lines = []
    for k, gain, epochs, trained, untrained in [(2, 1.0, 15, 11.0, 80.0), (4, 1.0, 15, 11.5, 40.0), (5, 1.0, 15, 11.5, 30.0),
                                                 (5, 0.1, 15, 14.0, 28.0), (5, 0.01, 15, 90.0, 90.0), (5, 0.01, 100, 19.0, 19.2)]:
        lines.append({"task": "routing_mnist_perm", "regime": "dln", "M": 10, "K": k, "gain": gain, "h": 8, "lr": 0.01,
                      "epochs": epochs, "limits": "600/100", "K_over_M": k / 10, "n": 3, "err_trained": trained,
                      "err_trained_se": 0.2, "err_untrained": untrained, "err_untrained_se": 0.5})
    paper.figures(pd.DataFrame(lines), tmp_path)
    assert (tmp_path / "error_vs_K.png").is_file() and (tmp_path / "error_vs_gain.png").is_file()


def test_a_toy_rows_parameters_are_what_its_run_recorded(tmp_path):
    """Issue #39: the toy rows' text came typed ("M=7, K=4, N_h=64, ..." on every row, where Fig 3 ran
    N_h=128, σ0=2e-4 and Fig 5c M=10). It now comes from the parameters the run recorded in its summary."""
    import json
    import shutil
    from conftest import ROOT
    from gatelab.papers.routing import verdicts
    from gatelab.papers.routing.toy_experiments import xor_curves
    from gatelab.papers.routing.toy_figures import called
    assert called(xor_curves, n_runs=4) == {"n_runs": 4, "hidden": 128, "sigma0": 2e-4, "tau": 2.5}
    shutil.copytree(ROOT / "outputs" / "reports" / "routing-toy", tmp_path / "routing-toy")
    path = tmp_path / "routing-toy" / "toy_summary.json"
    s = json.loads(path.read_text())
    s["params"]["fig3"]["hidden"] = 99
    path.write_text(json.dumps(s))
    assert "N_h=99" in verdicts.fig3(tmp_path).runs and "M=10" in verdicts.fig5c(tmp_path).runs
    del s["params"]
    path.write_text(json.dumps(s))
    assert verdicts.fig6(tmp_path).runs.startswith("parameters not recorded")


def test_the_decoder_init_study_takes_the_papers_init_as_its_base():
    """Two settings one factor apart (the decoders' init): the base is the paper's per-decoder init,
    whichever the scan found first; the code's stacked3d is the variant, its shift measured from it."""
    from gatelab.papers import routing as paper
    rows = []
    for fan, gaps in (("stacked3d", (3.0, 0.5)), ("per_decoder", (8.0, 2.0))):
        for k, gap in zip((8, 10), gaps):
            for seed in range(3):
                e = 10.0 + 0.1 * seed
                rows.append({"path": f"{fan}{k}{seed}", "status": "completed", "seed": seed, "task": "t",
                             "regime": "dln", "M": 20, "K": k, "input": "permute", "gain": 1.0, "h": 8,
                             "decoder_fan": fan, "lr": 0.01, "epochs": 15, "limits": "600/100",
                             "plateau_exit_epoch": 1, "finished_at": "", "commit": None, "device": "cpu",
                             "err_trained": e, "err_untrained": e + gap, "loss_trained": 0.4, "loss_untrained": 0.5,
                             "train_err_trained": e, "train_err_untrained": e})
    table = paper.table(rows)
    iso = paper.isolation(table.iloc[::-1].reset_index(drop=True)).set_index("factor")  # stacked3d found first
    assert list(iso.index) == ["base", "decoder_fan"] and iso.loc["base", "decoder_fan"] == "per_decoder"
    assert iso.loc["decoder_fan", "value"] == "stacked3d"
    want = paper.gap_crossing([0.4, 0.5], [3.0, 0.5])[0] - paper.gap_crossing([0.4, 0.5], [8.0, 2.0])[0]
    assert iso.loc["decoder_fan", "shift"] == pytest.approx(want) and want < 0
