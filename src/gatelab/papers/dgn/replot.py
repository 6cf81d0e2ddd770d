"""Redraw paper 002's figures from the CSVs of a report directory (see :mod:`gatelab.papers.dgn`)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from gatelab.papers import plotting
from gatelab.papers.dgn.figure10 import figure10_plot
from gatelab.papers.dgn.figures import (FIG4_INPUTS, FIG4_NAMES, FRG_SCALES, convergence_plot, figure1_plot, figure2_plot,
                                        nets)
from gatelab.papers.dgn.adaptable_gates import FIG7_SCALES, figure7_plot, figure8_plot

def replot(out: Path, scale: str) -> list[str]:
    """Redraw the figures of a report directory from the CSVs beside them (the data each figure
    plots), with the current plotting code; ``scale`` names the FRG and Figure 7 scales they ran at.
    Returns the figures redrawn."""
    out, frg, fig7, done = Path(out), FRG_SCALES[scale], FIG7_SCALES[scale], []
    csv = lambda name: pd.read_csv(out / f"{name}.csv") if (out / f"{name}.csv").is_file() else None  # noqa: E731
    if (both := csv("dgn_figure1")) is not None:
        res = {"spectrum": both[both.source == "measured"], "ideal": both[both.source == "ideal"]}
        plotting.save(figure1_plot(res, frg), both, out, "dgn_figure1")
        done.append("dgn_figure1")
    if (entries := csv("dgn_figure2")) is not None:
        plotting.save(figure2_plot(entries, frg), entries, out, "dgn_figure2")
        done.append("dgn_figure2")
    figs = [("dgn_figure3", "DGN-FRG", frg["widths"], "", "frg")]
    figs += [(f"dgn_figure4_{kind}{suffix}", label, [frg["w_galu"]], FIG4_INPUTS[inputs], kind)
             for inputs, suffix in FIG4_NAMES.items() for kind, label in (("galu", "GaLU"), ("relu", "ReLU"))]
    for name, label, widths, data, kind in figs:
        conv, spec = csv(name), csv(f"{name}_spectrum")
        if conv is not None and spec is not None:
            fig = convergence_plot({"convergence": conv, "spectrum": spec}, widths, frg["depths"], label, nets(frg, kind, conv),
                                   "Fig 3" if name == "dgn_figure3" else "Fig 4", data)
            plotting.save(fig, conv, out, name)
            done.append(name)
    if (exp8 := csv("dgn_figure10")) is not None:
        plotting.save(figure10_plot(exp8), exp8, out, "dgn_figure10")
        done.append("dgn_figure10")
    if (df := csv("dgn_figure7")) is not None:
        plotting.save(figure7_plot(df, fig7), df, out, "dgn_figure7")
        done.append("dgn_figure7")
    if (nu_df := csv("dgn_figure8")) is not None:
        plotting.save(figure8_plot(nu_df, fig7), nu_df, out, "dgn_figure8")
        done.append("dgn_figure8")
    return done
