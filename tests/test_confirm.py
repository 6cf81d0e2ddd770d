"""``python -m gatelab confirm`` (issue #54 §3, #55): every target's command is complete before it runs."""
from pathlib import Path

from gatelab.papers import confirm


def test_every_figure_targets_command_has_its_placeholders_filled(tmp_path):
    """A figure target's {out}, {seed}, {seeds} and {data} are filled by one function, for the dry run and the run
    alike (the dry run once crashed on races-figure7's {data} and {seeds}, which only the run filled)."""
    figures = [t for t in confirm.TARGETS if t.figure]
    assert figures
    for t in figures:
        argv = confirm._figure_argv(t, tmp_path / "out", 100, 3, str(tmp_path / "data"))
        assert not any("{" in a for a in argv), (t.name, argv)
        assert str(tmp_path / "out") in argv
        if any("{seeds}" in a for a in t.figure):
            assert "100,101,102" in argv
        if any("{data}" in a for a in t.figure):
            assert str(tmp_path / "data") in argv


def test_the_targets_cover_distinct_items_and_the_not_built_list_names_none_of_them():
    names = [t.name for t in confirm.TARGETS]
    assert len(names) == len(set(names))
    assert not set(confirm.NOT_BUILT) & set(names)
    items = [i for t in confirm.TARGETS for i in t.items]
    assert len(items) == len(set(items))
