"""What figures need of runs: a run trained unless it is completed already, a network as it was at
a checkpointed epoch, and a class-balanced set of examples. The training loop is imported only
when a run must actually train."""
from __future__ import annotations

from pathlib import Path

import torch

from gatelab.core import checkpoints
from gatelab.core.runs import compose, run_dir
from gatelab.data import datasets as data_mod
from gatelab.nets import regimes


def ensure_run(overrides: list[str]) -> tuple[object, Path, dict]:
    """The config, run directory and results of ``python run.py <overrides>``; trained if needed,
    through the same plan as the command line (its prerequisites first)."""
    from gatelab.launch.plan import run_seeds

    cfg = compose(["progress=false", *overrides])
    directory = run_dir(cfg)
    res = run_seeds(cfg)[int(cfg.seed)]
    if res["status"] != "completed":
        raise RuntimeError(f"{directory}: run {res['status']}; the figure needs it completed")
    return cfg, directory, res


def model_at(cfg, directory: Path, epoch: int, data):
    """The network of a run as it was at ``epoch`` (its ckpt/epoch_<N>.pt), in eval mode."""
    model, _ = regimes.build_model(cfg, data.in_shape, data.out_dim)
    model.load_state_dict(checkpoints.load(Path(directory) / "ckpt" / f"epoch_{epoch}.pt")["model"])
    return model.eval()


def examples(data, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``n`` training examples, balanced over classes, scaled as the network sees them."""
    idx = torch.from_numpy(data_mod.first_balanced(data.train.y.cpu().numpy(), n))
    return data.train.scale(data.train.x[idx]), data.train.y[idx]
