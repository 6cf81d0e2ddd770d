"""gatelab installed from a wheel, outside the checkout (issue #50 §4): the configs and claims ship in the package,
the ``gatelab`` console script trains a one-epoch run and plans a recipe from another directory, and nothing is
read from the checkout. The wheel's venv borrows this environment's packages (torch, Hydra, ...) through a .pth
line, which does not carry this environment's editable gatelab (a .pth line adds a folder, not its .pth files)."""
import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import ROOT, write_tiny_data

pytestmark = pytest.mark.slow


def clean_copy(dest: Path) -> Path:
    """The checkout's files as git sees them (tracked, and new ones it does not ignore), copied into ``dest``: a
    build there cannot pick up a stale ``build/`` or egg-info of the checkout (issue #56 §6)."""
    import shutil
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
        elif src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel).symlink_to(src.readlink())
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    source = clean_copy(tmp / "source")
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                            str(tmp / "dist"), str(source)], capture_output=True, text=True, timeout=600, cwd=tmp)
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = (tmp / "dist").glob("gatelab-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    inst = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "-q", str(wheel)],
                          capture_output=True, text=True, timeout=600)
    assert inst.returncode == 0, inst.stdout + inst.stderr
    return venv, tmp


def test_the_wheel_holds_the_configs_and_claims_and_nothing_comes_from_the_checkout(installed):
    venv, tmp = installed
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import gatelab, gatelab.core.config as c; print(gatelab.__file__); print(c.CONF_DIR)"],
                           capture_output=True, text=True, check=True, cwd=tmp).stdout.split()
    assert all(str(venv) in w and str(ROOT) not in w for w in where), where
    conf = Path(where[1])
    assert (conf / "config.yaml").is_file() and (conf / "experiment" / "table2_fc_adam.yaml").is_file()
    for paper in ("npf", "dgn", "routing", "races"):  # every paper's claims: the page and confirm read them
        assert (conf.parent / "papers" / paper / "claims.yaml").is_file(), paper


def test_gatelab_run_trains_one_epoch_outside_the_checkout(installed):
    venv, tmp = installed
    data = write_tiny_data(tmp / "data")
    work = tmp / "elsewhere"
    work.mkdir()
    p = subprocess.run([str(venv / "bin" / "gatelab"), "run", "epochs=1", "arch.dense=[8]", "progress=false",
                        "threads=1", f"data.root={data}"], capture_output=True, text=True, cwd=work, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    (res,) = work.glob("outputs/runs/*/relu/seed0-*/results.json")
    assert json.loads(res.read_text())["status"] == "completed"


def test_a_recipe_plans_outside_the_checkout(installed):
    venv, tmp = installed
    data = write_tiny_data(tmp / "data2")
    p = subprocess.run([str(venv / "bin" / "gatelab"), "reproduce", "table2-mnist", "--dry-run", "--data", str(data)],
                       capture_output=True, text=True, cwd=tmp, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "wave 1:" in p.stdout and "total:" in p.stdout
    assert "run.py" not in p.stdout  # no checkout: the jobs are `gatelab run`, not a run.py
