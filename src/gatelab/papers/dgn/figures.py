"""Paper 002 Figures 1-4: Gram matrices at initialisation and the role of depth (see :mod:`gatelab.papers.dgn`);
the plotting helpers Figures 7-8 and 10 share."""
from __future__ import annotations

import json
import math
import os
import zlib
from functools import lru_cache
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd
import torch

from gatelab.papers import plotting
from gatelab.papers.plotting import plt
from gatelab.analyses import kernels

# ---- Figures 1-4: Gram matrices at initialisation and the role of depth (experiments 1-2) ----

# runs: random nets per (w, d) of DGN-FRG (paper 001 Fig 7, the same experiment as 002 Figs 1 and 3: "averaged
# over 10 runs"; 002 Fig 3 says 5); runs_fig4: GaLU and ReLU nets per depth (002 Fig 4: 5 runs); entry_runs: Fig 2's (20)
FRG_SCALES = {
    "paper": dict(depths=[2, 4, 6, 8, 12, 16, 20], widths=[25, 500], runs=10, runs_fig4=5, entry_runs=20, steps=1000,
                  w_galu=100),
    "quick": dict(depths=[2, 4, 6, 8, 12, 16, 20], widths=[25, 500], runs=2, runs_fig4=2, entry_runs=5, steps=150,
                  w_galu=100),
}


def nets(scale: dict, kind: str, df: Optional[pd.DataFrame] = None) -> int:
    """Random nets averaged per (width, depth) for ``kind`` (``frg``, ``galu`` or ``relu``): the ``n`` of a
    CSV ``df`` where it has one, else the scale's."""
    if df is not None and "n" in df and len(df):
        return int(df.n.iloc[0])
    return scale["runs"] if kind == "frg" else scale.get("runs_fig4", scale["runs"])
N_EXAMPLES, MU = 200, 0.5


def frg_network(n: int, w: int, d: int, gen: torch.Generator, mu: float = MU, gates: str = "frg", d_in: int = 1):
    """A depth-d, width-w bias-free FC net with weights ±σ, σ = sqrt(1/(µw)) (paper 002 Assumption 1)
    and its gates: ``frg`` fixed random Ber(µ) gates per example (DGN-FRG), ``galu`` the 0/1 gates
    of an independent random ReLU net on the inputs, ``relu`` the net's own (None)."""
    sigma = (1.0 / (mu * w)) ** 0.5
    shapes = [(w, d_in)] + [(w, w)] * (d - 2) + [(1, w)]

    def draw():
        return [sigma * (2.0 * torch.randint(0, 2, s, generator=gen, dtype=torch.float64) - 1.0) for s in shapes]
    weights = draw()
    if gates == "frg":
        g = [torch.bernoulli(torch.full((n, w), mu, dtype=torch.float64), generator=gen) for _ in range(d - 1)]
    elif gates == "galu":
        g = draw()
    else:
        g = [None] * (d - 1)
    return weights, g


FIG4_INPUTS = {  # Figure 4's inputs: the paper's (experiment 2), and ours before it (a labelled variant)
    "square": "x ~ U([-1,1]^2), n=100 (experiment 2)",
    "sphere10": "x uniform on the unit sphere of R^10, n=200 (gatelab's variant)",
}


def _inputs(kind: str, gen: torch.Generator, inputs: str = "square") -> tuple[torch.Tensor, torch.Tensor, int]:
    """Experiment 1's data (x_s = 1, y_s ~ U[-1,1], n = 200); for GaLU/ReLU (Figure 4) experiment 2's
    x_s ~ U([-1,1]²), y_s ~ U[-1,1], n = 100 (highly correlated inputs, by the paper's choice), or the
    variant ``sphere10``: 200 points uniform on the unit sphere of R^10 with the same y."""
    n = 100 if kind != "frg" and inputs == "square" else N_EXAMPLES
    y = 2.0 * torch.rand(n, generator=gen, dtype=torch.float64) - 1.0
    if kind == "frg":
        return torch.ones(n, 1, dtype=torch.float64), y, 1
    if inputs == "square":
        return 2.0 * torch.rand(n, 2, generator=gen, dtype=torch.float64) - 1.0, y, 2
    x = torch.randn(n, 10, generator=gen, dtype=torch.float64)
    return x / x.norm(dim=1, keepdim=True), y, 10


def _gates_for(kind, weights_g, x):
    """Gates of a GaLU net (from the frozen random ReLU net weights_g), fixed during training."""
    if kind != "galu":
        return weights_g
    _, zs = kernels.gated_forward(weights_g, [None] * (len(weights_g) - 1), x)
    return [(z > 0).to(x.dtype) for z in zs[1:]]


def ideal_frg_spectrum(d: int, n: int = N_EXAMPLES, mu: float = MU) -> torch.Tensor:
    """Eigenvalues of E[K0]/d, eq. (5): 1 on the diagonal, µ^(d-1) off it, ascending."""
    m = mu ** (d - 1)
    return torch.tensor([1 - m] * (n - 1) + [1 + (n - 1) * m], dtype=torch.float64)


def _train_gd(weights, gates, x, y, steps: int) -> list[float]:
    """Full-batch GD on ½‖ŷ−y‖² with step 0.1/ρmax(K0) (paper 002 §2): ‖e_t‖²/‖e_0‖² per step."""
    alpha = 0.1 / torch.linalg.eigvalsh(kernels.gated_ntk(weights, gates, x)).max()
    ws = [w.clone().requires_grad_(True) for w in weights]
    errs = []
    for _ in range(steps + 1):
        e = kernels.gated_forward(ws, gates, x)[0] - y
        errs.append(float(e.detach().square().sum()))
        grads = torch.autograd.grad(0.5 * e.square().sum(), ws)
        with torch.no_grad():
            for w, g in zip(ws, grads):
                w -= alpha * g
    return [v / errs[0] for v in errs]


def frg_entries(scale: dict, gen: torch.Generator, w: int = 500) -> pd.DataFrame:
    """Figure 2: an arbitrary diagonal K0(0,0)/d and off-diagonal K0(0,1)/d entry, their mean and
    standard deviation (ddof 1) over runs."""
    x = torch.ones(2, 1, dtype=torch.float64)
    rows = []
    for d in scale["depths"]:
        vals = []
        for _ in range(scale["entry_runs"]):
            weights, gates = frg_network(2, w, d, gen)
            vals.append(kernels.gated_ntk(weights, gates, x) / d)
        k, sd = torch.stack(vals).mean(0), torch.stack(vals).std(0) if len(vals) > 1 else torch.full((2, 2), math.nan)
        rows.append({"depth": d, "diag": float(k[0, 0]), "offdiag": float(k[0, 1]), "diag_std": float(sd[0, 0]),
                     "offdiag_std": float(sd[0, 1]), "ideal_diag": 1.0, "ideal_offdiag": MU ** (d - 1),
                     "n": len(vals)})
    return pd.DataFrame(rows)


def _net_seed(kind: str, inputs: str, w: int, d: int, run: int) -> int:
    """Each random net's own seed, from its key: a net does not depend on how many nets ran before it, so
    raising ``runs`` from 5 to 10 keeps the first 5 and a killed job resumes net by net."""
    return zlib.crc32(f"{kind}/{inputs}/w{w}/d{d}/run{run}".encode())


def _part_name(kind: str, inputs: str, w: int, d: int, run: int, steps: int) -> str:
    return f"{kind}-{inputs}-w{w}-d{d}-run{run}-steps{steps}.json"


def _one_net(kind: str, inputs: str, w: int, d: int, run: int, steps: int, parts: Optional[Path]) -> dict:
    """One random net's spectrum of K0/d and its GD curve ‖e_t‖²/‖e_0‖²; kept as ``parts/<key>.json``
    (written whole or not at all) and read back from there when the same key ran before."""
    path = parts / _part_name(kind, inputs, w, d, run, steps) if parts else None
    if path is not None and path.exists():
        return json.loads(path.read_text())
    gen = torch.Generator().manual_seed(_net_seed(kind, inputs, w, d, run))
    x, y, d_in = _inputs(kind, gen, inputs)
    weights, g = frg_network(len(x), w, d, gen, gates=kind, d_in=d_in)
    gates = _gates_for(kind, g, x)
    res = {"eig": torch.linalg.eigvalsh(kernels.gated_ntk(weights, gates, x) / d).tolist(),
           "err_ratio": _train_gd(weights, gates, x, y, steps),
           "made": {"at": plotting.now(), **_made_by()}}
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(res))
        os.replace(tmp, path)
    return res


@lru_cache(maxsize=1)
def _made_by() -> dict:
    """The commit, tree state and CPU of the process that trains nets, read once: each part records them beside its
    time, so a report resumed from parts made elsewhere (another session's machine, carried in git) says which code
    and machine made each net (:func:`parts_made`)."""
    from gatelab.core.machine import cpu_model
    from gatelab.core.results import git_commit, git_tree
    return {"commit": git_commit(), "dirty": git_tree().get("git_dirty", True), "cpu": cpu_model()}


def _part_paths(scale: dict, parts: Path, kinds=("frg", "galu", "relu"), inputs: str = "square") -> list[Path]:
    return [Path(parts) / _part_name(k, inputs, w, d, r, scale["steps"]) for k in kinds for w, d, r in _keys(scale, k)]


def parts_made(scale: dict, parts: Path, kinds=("frg", "galu", "relu"), inputs: str = "square") -> list[dict]:
    """What each kept net of :func:`figures1_4` at ``scale`` records of its making (``at``, ``commit``, ``dirty``,
    ``cpu``; {} for a part written before parts recorded it): the record a confirmation's ``runs.csv`` is made of."""
    return [json.loads(p.read_text()).get("made", {}) for p in _part_paths(scale, parts, kinds, inputs) if p.exists()]


def stale_parts(scale: dict, parts: Path, kinds=("frg", "galu", "relu"), inputs: str = "square") -> list[str]:
    """The commits of kept nets whose code differs from the checkout's (``git diff`` of ``src/`` between them): nets
    made by other code must not be averaged with this code's, so :func:`figures1_4` stops on them."""
    from gatelab.core.results import other_code
    return other_code(m.get("commit") for m in parts_made(scale, parts, kinds, inputs))


def _keys(scale: dict, kind: str) -> list[tuple[int, int, int]]:
    """(width, depth, run) of every random net of ``kind``, in the order :func:`frg_data` trains them; the runs
    from ``scale["first_run"]`` (0; the confirmation draws fresh nets from 100: each net is seeded by its key)."""
    widths, first = (scale["widths"] if kind == "frg" else [scale["w_galu"]]), int(scale.get("first_run", 0))
    return [(w, d, run) for w in widths for d in scale["depths"] for run in range(first, first + nets(scale, kind))]


def nets_done(scale: dict, parts: Path, kinds=("frg", "galu", "relu"), inputs: str = "square") -> tuple[int, int]:
    """(nets kept in ``parts``, nets of :func:`figures1_4` at ``scale``): how far a stopped job has come."""
    paths = _part_paths(scale, parts, kinds, inputs)
    return sum(p.exists() for p in paths), len(paths)


def fill_backwards(scale: dict, kind: str, inputs: str, parts: Path) -> int:
    """A second worker beside a running :func:`figures1_4`: trains the missing nets from the last one back
    and stops at the first one found finished (the two meet there, one net wasted at most); renders
    nothing. Returns the nets it trained."""
    done = 0
    for w, d, run in reversed(_keys(scale, kind)):
        if (parts / _part_name(kind, inputs, w, d, run, scale["steps"])).exists():
            break
        _one_net(kind, inputs, w, d, run, scale["steps"], parts)
        done += 1
    return done


def frg_data(scale: dict, kind: str = "frg", inputs: str = "square",
             parts: Optional[Path] = None) -> dict[str, pd.DataFrame]:
    """Spectra of K0/d and GD convergence per (width, depth), averaged over :func:`nets` random nets (column
    ``n``), each net seeded by its key (:func:`_net_seed`) and, with ``parts``, kept there as it finishes; for
    ``frg`` also the ideal spectrum of eq. (5) and the K0 entries (Figure 2); ``inputs``: Figure 4's
    (``FIG4_INPUTS``)."""
    spectra, conv = [], []
    for w, d, run in _keys(scale, kind):
        res = _one_net(kind, inputs, w, d, run, scale["steps"], parts)
        ev = torch.tensor(res["eig"], dtype=torch.float64)
        for i, (a, b) in enumerate(zip(ev.tolist(), (ev / ev.max()).tolist())):
            spectra.append({"width": w, "depth": d, "run": run, "index": i + 1, "eig": a, "eig_over_max": b})
        for t, r in enumerate(res["err_ratio"]):
            conv.append({"width": w, "depth": d, "run": run, "step": t, "err_ratio": r})
    spec = pd.DataFrame(spectra).groupby(["width", "depth", "index"], as_index=False)[["eig", "eig_over_max"]].mean()
    spec["n"] = nets(scale, kind)
    spec["ecdf"] = spec.groupby(["width", "depth"])["eig"].cumsum()
    spec["ecdf_over_max"] = spec.groupby(["width", "depth"])["eig_over_max"].cumsum()
    out = {"spectrum": spec,
           "convergence": pd.DataFrame(conv).groupby(["width", "depth", "step"], as_index=False)["err_ratio"].mean()
           .assign(n=nets(scale, kind)),
           "entries": pd.DataFrame()}
    if kind == "frg":
        ideal = pd.DataFrame([{"depth": d, "index": i + 1, "eig": v} for d in scale["depths"]
                              for i, v in enumerate(ideal_frg_spectrum(d).tolist())])
        ideal["ecdf"] = ideal.groupby("depth")["eig"].cumsum()
        out["ideal"] = ideal
        out["entries"] = frg_entries(scale, torch.Generator().manual_seed(int(scale.get("first_run", 0))))
    return out


def _depth_colors(depths):
    cmap = plt.get_cmap("viridis")
    return {d: cmap(i / max(1, len(depths) - 1)) for i, d in enumerate(depths)}


def figure1_plot(res: dict, scale: dict):
    """e.c.d.f of K0/d: the ideal of eq. (5), then each width."""
    spec, ideal, widths, color = res["spectrum"], res["ideal"], scale["widths"], _depth_colors(scale["depths"])
    fig, axes = plt.subplots(1, 1 + len(widths), figsize=(4.2 * (1 + len(widths)), 3.4), sharey=True)
    for d in scale["depths"]:
        sub = ideal[ideal.depth == d]
        axes[0].plot(sub["index"], sub.ecdf, color=color[d], label=f"d={d}")
        for ax, w in zip(axes[1:], widths):
            sub = spec[(spec.width == w) & (spec.depth == d)]
            ax.plot(sub["index"], sub.ecdf, color=color[d])
    axes[0].set_title("ideal, eq. (5)", fontsize=9)
    for ax, w in zip(axes[1:], widths):
        ax.set_title(f"w={w}, µ={MU}, {nets(scale, 'frg', spec)} runs", fontsize=9)
    for ax in axes:
        ax.set_xlabel("eigenvalue index (ascending)")
    axes[0].set_ylabel("cumulative eigenvalue of K0/d")
    axes[0].legend(fontsize=7)
    plotting.caption(fig, "002", "Fig 1", f"DGN-FRG Gram matrix K0/d at initialisation, n={N_EXAMPLES} examples")
    return fig


def _spread(ax, x, mean, std, scale: float = 1.0) -> None:
    """A band of mean ± std (the spread over runs or seeds) under the last line drawn, in its colour;
    on a log axis mean ×/÷ (1 + std/mean), the same relative width, which never reaches zero. Nothing
    where the CSV has no std (reports made before it was recorded) or one run (NaN)."""
    if std is None or not np.isfinite(std).any():
        return
    if ax.get_yscale() == "log":
        factor = 1 + std / mean
        lo, hi = mean / factor, mean * factor
    else:
        lo, hi = mean - std, mean + std
    ax.fill_between(x, scale * lo, scale * hi, color=ax.get_lines()[-1].get_color(), alpha=0.2, lw=0)


def _stat(df: pd.DataFrame, col: str) -> str:
    """What a curve shows: "mean ± std" where the CSV has the spread, else "mean"."""
    std = df.get(f"{col}_std")
    return "mean ± std" if std is not None and np.isfinite(std).any() else "mean"


def figure2_plot(entries: pd.DataFrame, scale: dict):
    """Mean diagonal and off-diagonal entries of K0/d against depth, beside eq. (5): 1 and µ^(d-1)."""
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.4))
    for ax, col, ideal_col, title in ((axes[0], "diag", "ideal_diag", "diagonal K0(s,s)/d"),
                                      (axes[1], "offdiag", "ideal_offdiag", "off-diagonal K0(s,s')/d")):
        ax.plot(entries.depth, entries[col], "o-", label=f"measured (w=500, {_stat(entries, col)} of {scale['entry_runs']} runs)")
        _spread(ax, entries.depth, entries[col], entries.get(f"{col}_std"))
        ax.plot(entries.depth, entries[ideal_col], "k:", label="ideal, eq. (5)")
        ax.set(xlabel="depth d", ylabel=title, xticks=list(entries.depth))
        ax.set_title(title, fontsize=9)
    axes[0].set_ylim(0, 1.3)
    axes[0].legend(fontsize=7, loc="best")
    axes[1].legend(fontsize=7, loc="upper right")
    plotting.caption(fig, "002", "Fig 2", f"entries of K0/d at initialisation, µ={MU}")
    return fig


def convergence_plot(res: dict, widths: list, depths: list, name: str, runs: int, figure: str, data: str = ""):
    """Figure 3 (DGN-FRG) / Figure 4 (GaLU, ReLU): ‖e_t‖²/‖e_0‖² and the cumulative eigenvalues of
    K0/ρmax per width, means over ``runs`` random nets; ``data`` says which inputs."""
    conv, spec, color = res["convergence"], res["spectrum"], _depth_colors(depths)
    fig, axes = plt.subplots(1, 2 * len(widths), figsize=(4.2 * 2 * len(widths), 3.4))
    for i, w in enumerate(widths):
        for d in depths:
            sub = conv[(conv.width == w) & (conv.depth == d)]
            axes[i].plot(sub.step, sub.err_ratio, color=color[d], label=f"d={d}")
            sub = spec[(spec.width == w) & (spec.depth == d)]
            axes[len(widths) + i].plot(sub["index"], sub.ecdf_over_max, color=color[d], label=f"d={d}")
        axes[i].set_yscale("log")
        axes[i].set(xlabel="GD step (α = 0.1/ρmax)", ylabel="‖e_t‖² / ‖e_0‖²")
        axes[i].set_title(f"{name}: training error, w={w}", fontsize=9)
        axes[len(widths) + i].set(xlabel="eigenvalue index (ascending)", ylabel="cumulative eigenvalue of K0/ρmax")
        axes[len(widths) + i].set_title(f"{name}: spectrum of K0/ρmax, w={w}", fontsize=9)
    axes[0].legend(fontsize=7, loc="lower left")
    n = int(spec["index"].max()) if len(spec) else N_EXAMPLES
    plotting.caption(fig, "002", figure, f"{name}, {data or f'n={n} examples'}, mean of {runs} random nets")
    return fig


FIG4_NAMES = {"square": "", "sphere10": "_sphere10"}  # file suffix per Figure 4 input set


PARTS = ".parts"  # under a report's folder: one JSON per finished net; a rerun resumes from it (git keeps only a
# confirmation's: docs/reproducing.md, "Carried across machines")


def figures1_4(scale: dict, out: Path, kinds=("frg", "galu", "relu"), inputs: str = "square") -> dict[str, dict]:
    """Figures 1-3 (DGN-FRG) and 4 (GaLU, ReLU, on ``inputs``): PNG + PDF + CSV in ``out``; each net is kept
    in ``out/.parts`` as it finishes, so a killed job, rerun, starts at the first net it lacks; nets kept by other
    code (:func:`stale_parts`) stop it before any training."""
    stale = stale_parts(scale, Path(out) / PARTS, kinds, inputs)
    if stale:
        raise SystemExit(f"{Path(out) / PARTS}: nets kept there were made by code at {', '.join(stale)}, and src/ has "
                         "changed since: resume from a worktree at that commit (git worktree add --detach DIR "
                         f"{stale[0]}, then copy the parts there), or move the parts away to start again")
    results = {}
    for kind, name in (("frg", "DGN-FRG"), ("galu", "GaLU"), ("relu", "ReLU")):
        if kind not in kinds:
            continue
        results[kind] = res = frg_data(scale, kind, inputs, Path(out) / PARTS)
        widths = scale["widths"] if kind == "frg" else [scale["w_galu"]]
        fig_name = "dgn_figure3" if kind == "frg" else f"dgn_figure4_{kind}{FIG4_NAMES[inputs]}"
        if kind == "frg":
            plotting.save(figure1_plot(res, scale), pd.concat([res["spectrum"].assign(source="measured"),
                                                               res["ideal"].assign(source="ideal")]), out, "dgn_figure1")
            plotting.save(figure2_plot(res["entries"], scale), res["entries"], out, "dgn_figure2")
        data = "" if kind == "frg" else FIG4_INPUTS[inputs]
        plotting.save(convergence_plot(res, widths, scale["depths"], name, nets(scale, kind),
                                       "Fig 3" if kind == "frg" else "Fig 4", data), res["convergence"], out, fig_name)
        res["spectrum"].to_csv(Path(out) / f"{fig_name}_spectrum.csv", index=False, float_format="%.6g")
    return results
