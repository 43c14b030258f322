"""`python -m bench.report` answers `--help` and a missing results file without a traceback."""

from __future__ import annotations

import pytest

from bench import report


def test_help_shows_the_usage(capsys):
    with pytest.raises(SystemExit) as exit_:
        report.main(["--help"])
    assert exit_.value.code == 0
    assert "usage: python -m bench.report [-h] [results]" in capsys.readouterr().out


def test_a_missing_results_file_is_named_and_nothing_is_written(tmp_path, capsys, monkeypatch):
    page = tmp_path / "benchmarks.md"
    monkeypatch.setattr(report, "DOC", page)
    missing = tmp_path / "none.json"
    assert report.main([str(missing)]) == 2
    assert f"cannot read results from {missing}" in capsys.readouterr().err
    assert not page.exists()


def test_a_results_file_that_is_not_json_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(report, "DOC", tmp_path / "benchmarks.md")
    broken = tmp_path / "broken.json"
    broken.write_text("{ not json")
    assert report.main([str(broken)]) == 2
    assert "cannot read results from" in capsys.readouterr().err
