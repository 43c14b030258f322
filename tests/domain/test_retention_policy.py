"""The retention policy as a pure function."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registry.domain.retention import RetentionPolicy, VersionAge, prunable

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def history(count: int, every_days: float = 1.0) -> list[VersionAge]:
    """Versions 1..count, the newest created now, each `every_days` older than the next."""
    return [
        VersionAge(n, NOW - timedelta(days=(count - n) * every_days)) for n in range(1, count + 1)
    ]


def test_off_without_limits():
    policy = RetentionPolicy()
    assert not policy.enabled
    assert prunable(history(10), head=10, protected=(), policy=policy, now=NOW) == []


def test_keep_versions():
    policy = RetentionPolicy(keep_versions=3)
    assert prunable(history(6), head=6, protected=(), policy=policy, now=NOW) == [1, 2, 3]


def test_keep_days():
    policy = RetentionPolicy(keep_days=2.5)
    assert prunable(history(6), head=6, protected=(), policy=policy, now=NOW) == [1, 2, 3]


def test_either_rule_keeps_a_version():
    policy = RetentionPolicy(keep_versions=2, keep_days=3.5)
    assert prunable(history(6), head=6, protected=(), policy=policy, now=NOW) == [1, 2]


def test_head_and_protected_are_kept_even_when_old():
    policy = RetentionPolicy(keep_versions=1)
    # The head is not the newest number after a rollback: it is kept all the same.
    assert prunable(history(5), head=3, protected={1}, policy=policy, now=NOW) == [2, 4]


@pytest.mark.parametrize(("versions", "days"), [(0, None), (None, 0), (None, -1.0), (-2, 1.0)])
def test_bad_limits_are_refused(versions, days):
    with pytest.raises(ValueError, match="must be"):
        RetentionPolicy(keep_versions=versions, keep_days=days)


@given(
    count=st.integers(1, 30),
    head=st.integers(1, 30),
    keep=st.one_of(st.none(), st.integers(1, 10)),
    days=st.one_of(st.none(), st.floats(0.1, 40)),
    protected=st.sets(st.integers(1, 30), max_size=5),
)
def test_properties(count, head, keep, days, protected):
    head = min(head, count)
    versions = history(count)
    policy = RetentionPolicy(keep, days)
    doomed = prunable(versions, head=head, protected=protected, policy=policy, now=NOW)
    assert doomed == sorted(set(doomed))
    assert head not in doomed
    assert not set(doomed) & protected
    if not policy.enabled:
        assert doomed == []
    if keep is not None:
        newest = {v.number for v in versions[-keep:]}
        assert not set(doomed) & newest
    if days is not None:
        assert all(
            v.created_at < NOW - timedelta(days=days) for v in versions if v.number in doomed
        )
