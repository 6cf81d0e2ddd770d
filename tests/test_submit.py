"""The recipe path's SLURM request without a cluster (issue #57 §1): any sbatch option through --slurm-set, checked;
each job's time limit from its price; a sweep's jobs followed through submitit's public Job alone."""
import pytest

from gatelab.core.config import ConfigError
from gatelab.launch import slurm, submit


def test_any_sbatch_option_passes_and_a_misspelt_one_is_refused_with_the_nearest():
    known = {"constraint", "gres", "exclude", "qos", "mail-type"}
    got = submit.settings(["constraint=a100", "gres=gpu:a100:1", "exclude=node07", "mail_type=END", "gpu_kind=h200",
                           "timeout_min=60"], known=known)
    assert got["extra"] == {"constraint": "a100", "gres": "gpu:a100:1", "exclude": "node07", "mail-type": "END"}
    assert got["gpu_kind"] == "h200" and got["timeout_min"] == 60
    with pytest.raises(ConfigError, match="no option --constrant .*did you mean --constraint"):
        submit.settings(["constrant=a100"], known=known)
    with pytest.raises(ConfigError, match="give key=value"):
        submit.settings(["constraint"], known=known)
    assert submit.settings(["anything=1"], known=None)["extra"] == {"anything": 1}  # no sbatch to ask: passed on


def test_a_jobs_time_limit_is_its_price_with_the_margin_rounded_up_and_capped():
    p = {"timeout_min": 240, "time_margin": 1.5, "signal_delay_s": 120}
    assert submit.minutes(600, p) == 30  # 15 min x 1.5 + 2 + 1 = 25.5 -> 30
    assert submit.minutes(60, p) == 5  # 1.5 + 2 + 1 = 4.5 -> 5
    assert submit.minutes(3600 * 3, p) == 240  # 4.5 h and more: capped at timeout_min
    assert submit.minutes(None, p) == 240  # not priced: timeout_min
    assert submit.minutes(600, {**p, "time_margin": 3}) == 45  # 30 + 2 + 1 = 33 -> 45
    assert submit.minutes(600, {**p, "timeout_min": 20}) == 20


class _Paths:
    def __init__(self, path):
        self.result_pickle = path


class _Submission:
    def __init__(self, overrides):
        self.args = (overrides,)


class _Job:
    """submitit's public Job surface that wait_for reads: job_id, paths.result_pickle, results(), submission()."""

    def __init__(self, job_id, pickle, result=None, error=None):
        self.job_id, self.paths, self._result, self._error = job_id, _Paths(pickle), result, error

    def submission(self):
        return _Submission([f"seed={self.job_id[-1]}"])

    def results(self):
        if self._error:
            raise self._error
        return [self._result]


def test_a_sweeps_jobs_are_followed_by_their_result_files_and_slurms_state(tmp_path, monkeypatch):
    """A job with its result returns it; one SLURM no longer runs and that left no result is recorded failed with
    SLURM's state; one that raised is failed with its error; a live one is waited for."""
    recorded = []
    monkeypatch.setattr(slurm.sweep, "record", lambda root, what, outcome, why: recorded.append((what, outcome, why)))
    done = tmp_path / "done.pkl"
    done.write_text("x")
    states = iter([{"7_1": ("CANCELLED", "None"), "7_3": ("RUNNING", "None")},
                   {"7_1": ("CANCELLED", "None"), "7_3": ("COMPLETED", "None")}])
    late = tmp_path / "late.pkl"

    def fake(ids):
        got = next(states)
        if "COMPLETED" in str(got):
            late.write_text("x")  # the live job finished: its result file appears
        return got
    monkeypatch.setattr(slurm, "states", fake)
    jobs = [_Job("7_0", done, result="ok"), _Job("7_1", tmp_path / "none.pkl"),
            _Job("7_2", done, error=RuntimeError("boom\nline 2")), _Job("7_3", late, result="later")]
    out = slurm.wait_for(jobs, "root", poll_s=0, grace_s=0)
    assert out[0] == "ok" and out[3] == "later"
    assert out[1].overrides == ["seed=1"] and out[2].overrides == ["seed=2"]
    assert [(w, o) for w, o, _ in recorded] == [("job seed=1", "failed"), ("job seed=2", "failed")]
    assert "SLURM job 7_1 ended without a result: CANCELLED" in recorded[0][2]
    assert "SLURM job 7_2 ended without a result: boom" in recorded[1][2]
