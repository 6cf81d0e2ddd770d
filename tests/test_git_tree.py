"""What a run records of the code that ran (issue #56 §5): a change to a tracked file, or a new file under src/ or
conf/, makes the tree dirty, with a hash that names the change and the paths it touches; a clean tree is clean, and
so is one whose only change is under outputs/ (what runs write: a report not yet committed)."""
import subprocess

from gatelab.core.results import git_tree


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"})


def test_a_changed_file_or_a_new_module_is_a_dirty_tree_and_a_clean_one_is_not(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text("x = 1\n")
    (tmp_path / "outputs" / "reports").mkdir(parents=True)
    (tmp_path / "outputs" / "reports" / "t.csv").write_text("a\n1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "c")
    assert git_tree(tmp_path) == {"git_dirty": False, "git_diff_sha1": None, "git_changed": None}
    (tmp_path / "outputs" / "reports" / "t.csv").unlink()  # a committed report removed (or rewritten) by a run
    (tmp_path / "outputs" / "reports" / "u.csv").write_text("b\n2\n")
    assert git_tree(tmp_path) == {"git_dirty": False, "git_diff_sha1": None, "git_changed": None}
    (tmp_path / "src" / "m.py").write_text("x = 2\n")
    changed = git_tree(tmp_path)
    assert changed["git_dirty"] and changed["git_diff_sha1"] and changed["git_changed"] == ["src/m.py"]
    _git(tmp_path, "checkout", "-q", "--", "src/m.py")
    (tmp_path / "src" / "new.py").write_text("y = 1\n")  # untracked: a module no commit holds
    new = git_tree(tmp_path)
    assert new["git_dirty"] and new["git_diff_sha1"] not in (None, changed["git_diff_sha1"])
    assert new["git_changed"] == ["src/new.py"]
    (tmp_path / "src" / "new.py").write_text("y = 2\n")
    assert git_tree(tmp_path)["git_diff_sha1"] != new["git_diff_sha1"]  # the hash names the new file's content
    (tmp_path / "src" / "new.py").unlink()
    (tmp_path / "notes.txt").write_text("outside src/ and conf/: not code\n")
    assert git_tree(tmp_path)["git_dirty"] is False
