"""A copy of the checkout without ``.git`` (how the device tool sends it) records the stamped commit and whether its
files are that commit's (:mod:`gatelab.core.code_stamp`), so its runs can pre-register; a changed or new file is a
dirty tree, as git would say; without a stamp nothing is claimed."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from gatelab.core import code_stamp


def _git(cwd, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


@pytest.fixture
def repo_and_copy(tmp_path):
    """A git repo of this checkout's tracked files (outputs/ left out: runs never read it), committed, stamped;
    and a copy of its files without .git."""
    repo, copy = tmp_path / "repo", tmp_path / "copy"
    for name in _git(ROOT, "ls-files", "-z").split("\0"):
        if name and not name.startswith("outputs/") and (os.path.lexists(ROOT / name)):
            dst = repo / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            if (ROOT / name).is_symlink():
                os.symlink(os.readlink(ROOT / name), dst)
            else:
                shutil.copy2(ROOT / name, dst)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "stamped")
    head = _git(repo, "rev-parse", "--short", "HEAD").strip()
    stamp = code_stamp.write(repo / code_stamp.STAMP, top=repo)
    shutil.copytree(repo, copy, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    return repo, copy, head, stamp


def test_blob_ids_are_gits(repo_and_copy):
    repo, _, _, stamp = repo_and_copy
    for name in ("run.py", "conf", "src/gatelab/core/results.py", ".ci/run"):  # file, symlink, module, executable
        assert [code_stamp.blob_id(repo / name), code_stamp.mode(repo / name)] == stamp["files"][name]
        assert stamp["files"][name] == [_git(repo, "rev-parse", f"HEAD:{name}").strip(),
                                        _git(repo, "ls-tree", "HEAD", name).split()[0]]


def test_a_copy_without_git_answers_from_its_stamp(repo_and_copy):
    _, copy, head, _ = repo_and_copy
    assert not (copy / ".git").exists()
    assert code_stamp.commit(copy) == head
    assert code_stamp.tree_state(copy) == {"git_dirty": False, "git_diff_sha1": None, "git_changed": None,
                                           "code_stamp": True}
    (copy / "src" / "gatelab" / "nets" / "dgn.py").write_text((copy / "src/gatelab/nets/dgn.py").read_text() + "#\n")
    (copy / "src" / "gatelab" / "extra.py").write_text("X = 1\n")
    (copy / "src" / "gatelab" / "__pycache__").mkdir(exist_ok=True)
    (copy / "src" / "gatelab" / "__pycache__" / "x.pyc").write_bytes(b"\0")  # what running writes: not a change
    (copy / "README.md").unlink()
    (copy / "src" / "gatelab" / "fast.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\0")  # imported before a .py
    (copy / "run.py").chmod(0o755)  # git diff sees a mode change
    state = code_stamp.tree_state(copy)
    assert state["git_dirty"] is True and state["git_diff_sha1"]
    assert state["git_changed"] == ["README.md", "run.py", "src/gatelab/nets/dgn.py", "src/gatelab/extra.py",
                                    "src/gatelab/fast.cpython-311-x86_64-linux-gnu.so"]
    (copy / code_stamp.STAMP).unlink()
    assert code_stamp.tree_state(copy) == {} and code_stamp.commit(copy) is None


def test_a_checkout_with_git_never_reads_a_stamp_even_when_git_fails(repo_and_copy, monkeypatch):
    """The stage writes its stamp into a checkout that has .git: where git fails there (a timeout, a refusal), the
    run records no commit and no tree state, as before, never the stamp's (it may describe an older HEAD)."""
    from gatelab.core import results
    repo, copy, head, _ = repo_and_copy
    (repo / "src" / "gatelab" / "nets" / "dgn.py").write_text("# not the stamped file\n")
    assert results.git_commit(repo) == head and results.git_tree(repo)["git_dirty"] is True
    real = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda args, *a, **k: (_ for _ in ()).throw(subprocess.TimeoutExpired(
        args, 5)) if args[0] == "git" else real(args, *a, **k))
    assert results.git_commit(repo) is None and results.git_tree(repo) == {}
    assert results.git_commit(copy) == head and results.git_tree(copy)["git_dirty"] is False  # no .git: the stamp


def test_a_run_from_a_copy_without_git_records_the_stamped_commit_and_a_clean_tree(repo_and_copy, tiny_root):
    """End to end: run.py in the copy (its own src/ first on the path) writes the commit and tree state that
    pre-registration reads; after an edit to the code, the next run records a dirty tree naming the file."""
    _, copy, head, _ = repo_and_copy
    env = {**os.environ, "PYTHONPATH": str(copy / "src"), "GATELAB_DATA": str(tiny_root), "OMP_NUM_THREADS": "1"}

    def run(seed):
        out = copy / "outputs" / f"r{seed}"
        p = subprocess.run([sys.executable, "run.py", "epochs=1", "progress=false", "arch.dense=[16]",
                            "dataset.limit_train=64", f"seed={seed}", f"hydra.run.dir={out}"],
                           cwd=copy, env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        return json.loads((out / "results.json").read_text())

    res = run(0)
    assert res["status"] == "completed"
    assert (res["env"]["git_commit"], res["env"]["git_dirty"], res["env"].get("code_stamp")) == (head, False, True)
    assert (res["attempts"][-1]["commit"], res["attempts"][-1]["dirty"]) == (head, False)
    (copy / "src" / "gatelab" / "training" / "metrics.py").write_text(
        (copy / "src/gatelab/training/metrics.py").read_text() + "# changed there\n")
    res = run(1)
    assert (res["env"]["git_commit"], res["env"]["git_dirty"]) == (head, True)
    assert res["env"]["git_changed"] == ["src/gatelab/training/metrics.py"] and res["attempts"][-1]["dirty"] is True


@pytest.mark.slow
def test_device_confirm_trains_a_target_from_a_copy_without_git_and_packs_its_runs(repo_and_copy, tiny_root, tmp_path):
    """scripts/device_confirm.sh as the device tool runs it (a copy without .git, its stage's code stamp), here on a
    cheap target and tiny data: the stamp checks clean, the target's held-out runs train and come back packed in
    carried.tgz, each recording the stamped commit and a clean tree (what pre-registration reads here)."""
    import tarfile
    _, copy, head, _ = repo_and_copy
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "GATELAB_DATA": str(tiny_root), "LIMIT": "600", "OMP_NUM_THREADS": "1",
           "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"}  # its `python` is this one
    env.pop("PYTHONPATH", None)
    p = subprocess.run(["bash", "scripts/device_confirm.sh", "dgn-figure5"], cwd=copy, env=env, capture_output=True,
                       text=True, timeout=900)
    log = (out / "device_confirm.log").read_text()
    assert p.returncode == 0, p.stdout + p.stderr + log
    assert '"git_dirty": false' in log and "rc=0" in log, log
    with tarfile.open(out / "carried.tgz") as tar:
        results = [json.load(tar.extractfile(m)) for m in tar.getmembers() if m.name.endswith("results.json")]
    assert len(results) >= 3, log
    for res in results:
        assert res["status"] == "completed" and res["seed"] >= 100
        assert (res["attempts"][-1]["commit"], res["attempts"][-1]["dirty"], res["env"]["code_stamp"]) == (head, False, True)
    # a copy whose code is not the stamped commit's trains nothing: its runs could not count
    (copy / "src" / "gatelab" / "nets" / "dgn.py").write_text((copy / "src/gatelab/nets/dgn.py").read_text() + "#\n")
    p = subprocess.run(["bash", "scripts/device_confirm.sh", "dgn-figure5"], cwd=copy, env=env, capture_output=True,
                       text=True, timeout=300)
    log = (out / "device_confirm.log").read_text()
    assert p.returncode == 1 and "the code stamp does not hold" in log and "confirm dgn-figure5" not in log, log
    assert not (out / "carried.tgz").exists()
