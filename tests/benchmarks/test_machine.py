"""The machine probes a run records, and the sentence the report makes of them.

Nothing here judges a time: the probes must measure something and clean up after
themselves, and the report must print them when a run has them and stay quiet otherwise.
"""

from __future__ import annotations

from bench import machine
from bench.report import _speed


def test_the_probes_measure_and_leave_nothing_behind(tmp_path):
    speed = machine.probe(tmp_path)
    assert set(speed) == {"cpu", "fsync", "domain"}
    assert all(value > 0 for value in speed.values())
    assert list(tmp_path.iterdir()) == []


def test_the_report_prints_the_probes_of_a_run_that_has_them():
    meta = {
        "speed": {
            "start": {"cpu": 0.00125, "fsync": 0.0004},
            "end": {"cpu": 0.0025, "fsync": 0.0008},
        }
    }
    sentence = _speed(meta)
    assert "pure Python 1.25 ms at the start, 2.50 ms at the end" in sentence
    assert "`fdatasync` 400 µs at the start, 800 µs at the end" in sentence
    assert "domain work" not in sentence  # a run before that probe
    meta["speed"]["start"]["domain"] = 0.00025
    meta["speed"]["end"]["domain"] = 0.0005
    sentence = _speed(meta)
    assert "(validate, hash, scan) 250 µs at the start, 500 µs at the end" in sentence
    assert _speed({}) == ""  # runs before the probes
