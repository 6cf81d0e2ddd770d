"""Every `make` target's run.py commands parse and compose: the Makefile is code too (a comma inside
a $(call ...) argument once cut `make races`'s Fig 3a sweep into an unbalanced quote)."""
import itertools
import re
import shlex
import subprocess

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from conftest import ROOT, make_cfg
from gatelab.core.config import validate

TARGETS = sorted(set(re.search(r"^\.PHONY:(.*?)(?<!\\)$", (ROOT / "Makefile").read_text(), re.M | re.S)
                     .group(1).replace("\\", " ").split()) - {"help", "install", "test"})


def _run_lines(target: str) -> list[list[str]]:
    p = subprocess.run(["make", "-n", target, "DATA=/data", "PYTHON=python"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return [shlex.split(line) for line in p.stdout.splitlines() if " run.py " in f" {line} "]


def test_every_make_target_is_listed_and_prints_its_commands():
    assert {"table2", "table4", "races", "routing-reduced", "dgn-figures"} <= set(TARGETS)
    assert any(_run_lines(t) for t in TARGETS)


@pytest.mark.parametrize("target", TARGETS)
def test_the_run_commands_of_a_make_target_parse_and_compose(target, tmp_path):
    parser = OverridesParser.create()
    for argv in _run_lines(target):
        over = [a for a in argv[argv.index("run.py") + 1:] if not a.startswith("-")]
        parsed = parser.parse_overrides(over)  # raises on a broken override (an unbalanced bracket, a stray quote)
        choices = [[f"{o.get_key_element()}={v}" for v in o.sweep_string_iterator()] if o.is_sweep_override()
                   else [o.input_line] for o in parsed]
        for combo in itertools.islice(itertools.product(*choices), 4):  # the first points of each sweep
            cfg = make_cfg([*combo, f"out_root={tmp_path}"])
            validate(cfg)
