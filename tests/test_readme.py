"""The README's commands work as written (issue #32): every ``python run.py`` line composes and
validates, every ``make`` target exists, every ``python -m gatelab`` line parses; the table it
shows is the report's; its recipe table is what the recipes say."""
import re
import shlex
import subprocess
import sys

import pytest

from conftest import ROOT, make_cfg
from gatelab.core.validation import validate
from gatelab.launch.sweep import job_overrides

README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```bash\n(.*?)```", README, re.S)
LINES = [ln.split(" #")[0].strip() for b in BLOCKS for ln in b.splitlines() if ln.strip()]
INLINE = re.findall(r"`((?:python run\.py|python -m gatelab\S*|make)\s[^`]*)`", README)
TARGETS = set(re.search(r"^\.PHONY:(.*?)(?<!\\)$", (ROOT / "Makefile").read_text(), re.M | re.S).group(1)
              .replace("\\", " ").split())


def _commands(prefix):
    """The README's commands starting with ``prefix``, less the templates (``<target>``, ``...``)."""
    return [" ".join(c.split()) for c in LINES + INLINE if c.startswith(prefix) and "<" not in c and "..." not in c]


def test_the_readme_shows_the_set_up_the_main_command_and_make_targets():
    assert _commands("make install") and _commands("make test") and "python run.py" in LINES
    # one set-up, CI's own (issue #57): .ci/run installs through the README's command, which pins constraints.txt
    assert "make install" in (ROOT / ".ci" / "run").read_text()
    recipe = re.search(r"^install:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.M).group(1)
    assert "-c constraints.txt" in recipe
    assert len(README) < 38582 / 3 + 1000  # a third of what it was, give or take
    assert len(_commands("make ")) >= 5


@pytest.mark.parametrize("command", sorted(set(_commands("python run.py"))))
def test_every_run_py_command_of_the_readme_composes_and_validates(command, tmp_path):
    sys.path.insert(0, str(ROOT))
    from gatelab.core.commands import bad_option
    argv = [a for a in shlex.split(command)[2:] if not a.startswith("-")]
    assert bad_option(argv) is None, command
    for job in job_overrides(argv)[:3]:
        validate(make_cfg([*job, f"out_root={tmp_path}"]))


@pytest.mark.parametrize("command", sorted(set(_commands("make "))))
def test_every_make_target_of_the_readme_exists(command):
    target = shlex.split(command)[1]
    assert target in TARGETS, command


@pytest.mark.parametrize("command", sorted(set(_commands("python -m gatelab"))))
def test_every_module_command_of_the_readme_parses(command):
    argv = shlex.split(command.replace("[", "").replace("]", ""))
    module = argv[2]
    p = subprocess.run([sys.executable, "-m", module, *argv[3:], "--help"], capture_output=True, text=True,
                       timeout=60, cwd=ROOT)
    assert p.returncode == 0, (command, p.stderr[-500:])


def test_the_readme_table_is_the_reports():
    shown = [ln for ln in README.splitlines() if ln.startswith("| FC | ")]
    report = (ROOT / "outputs" / "reports" / "table2-mnist-full" / "table2.md").read_text().splitlines()
    assert shown and all(ln in report for ln in shown)


@pytest.mark.slow
def test_the_readme_recipe_table_is_what_the_recipes_say(tmp_path):
    """Priced from scratch: in an empty folder, so runs already on disk do not lower the counts."""
    p = subprocess.run([sys.executable, "-m", "gatelab", "recipes", "--markdown"], capture_output=True, text=True,
                       timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() in README
