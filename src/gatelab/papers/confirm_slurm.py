"""``python -m gatelab confirm TARGET --slurm`` then ``--status``: a confirmation target on a SLURM cluster.

A recipe target's held-out runs are queued as ``reproduce --slurm`` queues a recipe's (one job array per wave and
time limit, each after the arrays that train its prerequisites: :func:`gatelab.launch.submit.submit`), with a
journal of its own under ``outputs/slurm/confirm-<target>-<scale>``; ``--status`` gives each job's state and, once
every run is done, renders the reports and their ``runs.csv`` (``gatelab.papers.confirm.render``), as a run here
would. A figure target is one job that runs ``python -m gatelab confirm TARGET`` on a node, its report and
``runs.csv`` included. The runs record their own commits and tree states, so a checkout changed between the
submission and a job's start shows in ``runs.csv`` and the page (:mod:`gatelab.papers.preregistration`).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

from gatelab.launch import recipes, submit
from gatelab.papers.confirm_targets import Target


def journal(t: Target) -> Path:
    return submit.journal_dir(f"confirm-{t.name}", t.scale or "figure")


def run(t: Target, r, data: Optional[str], what: str, sets: list, render) -> int:
    """``what``: "submit" queues ``t``'s jobs (``r``: its recipe on the held-out seeds; None for a figure target)
    and exits 0; "status" follows them (0: done and rendered by ``render(r)``, 3: queued or running, 1: a job
    failed, 2: nothing submitted)."""
    folder = journal(t)
    if what == "submit":
        params = submit.settings(sets)
        if t.figure:
            entries = submit.submit(f"confirm-{t.name}", [], [["gatelab", "confirm", t.name,
                                                               *(["--data", data] if data else [])]], folder, params)
        else:
            waves = recipes.plan_recipe(r)
            print(recipes.describe(r, waves, t.scale), flush=True)
            entries = submit.submit(r.name, waves, r.figures, folder, params)
        queued = [e for e in entries if e.job_id]
        print(f"submitted: {len(queued)} job(s) queued, {len(entries) - len(queued)} done already; journal "
              f"{folder / 'jobs.json'}; follow with: python -m gatelab confirm {t.name} --status (it renders the "
              "reports when every run is done)")
        return 0
    entries = submit.load_journal(folder)
    if not entries:
        print(f"gatelab confirm: no SLURM jobs of {t.name}: {folder / 'jobs.json'} is missing (submit with --slurm)",
              file=sys.stderr)
        return 2
    got = submit.status(entries)
    print(submit.status_text(got), flush=True)
    states = {s.state for s in got}
    if states <= {"done"}:
        return render(r) if r is not None else 0  # a figure job rendered its report and runs.csv itself
    if states & {"failed", "not run", "lost"}:
        print(f"gatelab confirm: {t.name}: a job failed; --slurm again queues what is left", file=sys.stderr)
        return 1
    return 3
