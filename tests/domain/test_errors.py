"""Every registry error, walked: its code, its details, its message, and its copies."""

from __future__ import annotations

import copy
import inspect
import json
import pickle
from collections import Counter
from dataclasses import fields, is_dataclass

import pytest

import registry
import registry.api
from registry import errors
from registry.errors import (
    BlobsMissing,
    DraftKept,
    FrontmatterInvalid,
    HeadConflict,
    Inconsistency,
    InvalidName,
    NotInitialized,
    ProposalStale,
    RegistryError,
    SkillExists,
    StorageUnavailable,
    Unauthenticated,
    WorkspaceBusy,
    all_errors,
    by_code,
)


def subclasses(cls):
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *subclasses(sub)]
    return found


ERRORS = list(dict.fromkeys([RegistryError, *subclasses(RegistryError)]))

# Fields that are attributes but not details: both keep the `StorageUnavailable` fields
# that code handling any outage reads, and report their own data (or, for
# NotInitialized, only the outage) as details; a refused name is never echoed.
ATTRIBUTE_ONLY = {
    WorkspaceBusy: {"what", "detail"},
    NotInitialized: {"current", "head", "missing"},
    InvalidName: {"value"},
}
# Constructor arguments kept under another name.
CARRIED_AS = {(ProposalStale, "base"): "expected"}
# Lists carried in their given order, which means something (closest first); every
# other list is sorted, so its details do not depend on the order things were found.
ORDERED = {(errors.SkillNotFound, "nearest"), (errors.WorkspaceNotFound, "nearest")}
# Codes more than one class may share: none.
SHARED_CODES: set[str] = set()


def sample_arguments(cls):
    """Distinct values for each constructor argument, from its annotation."""
    if not is_dataclass(cls):  # a plain class: it takes a message
        return {}
    params = list(inspect.signature(cls, eval_str=True).parameters.values())
    samples = {
        str: lambda i, name: f"{name}-{i}",
        int: lambda i, _: 10 + i,
        float: lambda i, _: 2.5 + i,
        int | None: lambda i, _: 20 + i,
        str | None: lambda i, name: f"{name}/{i}",
        list[str]: lambda i, _: [f"d{i}-b", f"d{i}-a"],
        list[dict[str, object]]: lambda i, _: [{"path": f"p{i}", "ordinal": i}],
    }
    return {p.name: samples[p.annotation](i, p.name) for i, p in enumerate(params)}


def sample(cls):
    arguments = sample_arguments(cls)
    if not is_dataclass(cls):
        return cls("a message")
    params = inspect.signature(cls).parameters
    keyword = {n: v for n, v in arguments.items() if params[n].kind is params[n].KEYWORD_ONLY}
    return cls(*[v for n, v in arguments.items() if n not in keyword], **keyword)


def test_the_walk_finds_every_error_in_the_module():
    declared = {
        c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, RegistryError)
    }
    assert declared <= set(ERRORS)
    assert len(ERRORS) >= 47  # the 47 of this module, at least


def test_every_class_names_its_own_code_and_no_two_share_one():
    for cls in ERRORS:
        assert "code" in vars(cls), cls
    counts = Counter(cls.code for cls in ERRORS)
    assert {code for code, n in counts.items() if n > 1} == SHARED_CODES


def test_one_table_maps_every_code_to_its_class():
    assert set(all_errors()) == set(ERRORS)
    for cls in ERRORS[1:]:
        assert by_code(cls.code) is cls
    assert by_code("registry_error") is None  # the base is no answer a client can rebuild
    assert by_code("no_such_code") is None


def test_a_second_class_cannot_take_a_code():
    with pytest.raises(TypeError, match="head_conflict"):

        class Again(RegistryError, code="head_conflict"):
            """A second class under a taken code."""


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_details_are_the_declared_fields_and_json_safe(cls):
    exc = sample(cls)
    details = exc.details()
    declared = [f.name for f in fields(cls)] if is_dataclass(cls) else []
    hidden = ATTRIBUTE_ONLY.get(cls, set())
    assert hidden <= set(declared)
    assert details == {name: getattr(exc, name) for name in declared if name not in hidden}
    assert json.loads(json.dumps(details)) == details


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_constructor_arguments_are_carried_as_attributes(cls):
    arguments = sample_arguments(cls)
    exc = sample(cls)
    for name, value in arguments.items():
        carried = getattr(exc, CARRIED_AS.get((cls, name), name))
        ordered = any(issubclass(cls, owner) and name == n for owner, n in ORDERED)
        assert carried == (sorted(value) if isinstance(value, list) and not ordered else value)
    by_keyword = cls(**arguments) if arguments else exc
    assert (str(by_keyword), by_keyword.details()) == (str(exc), exc.details())


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_the_message_is_the_classes_own_and_is_in_args(cls):
    exc = sample(cls)
    assert str(exc)
    assert exc.args == (str(exc),)
    if is_dataclass(cls):
        # A template is only used by `RegistryError.__str__`: a class that sets one under a
        # base with its own `__str__` would silently keep the base's wording.
        assert "template" in vars(cls) or "__str__" in vars(cls), cls
        assert "template" not in vars(cls) or cls.__str__ is RegistryError.__str__, cls


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_errors_pickle_and_copy_with_their_data(cls):
    exc = sample(cls)
    exc.add_note("a note")
    # The bytes are our own, just written.
    for twin in (pickle.loads(pickle.dumps(exc)), copy.copy(exc), copy.deepcopy(exc)):  # noqa: S301
        assert type(twin) is cls
        assert twin is not exc
        assert twin != exc  # identity equality: an exception is an event, not a value
        assert (twin.args, str(twin), twin.details()) == (exc.args, str(exc), exc.details())
        assert vars(twin) == vars(exc)
        assert len({exc, twin}) == 2  # hashable, by identity


def test_the_special_cases_keep_their_shapes():
    assert FrontmatterInvalid("no_frontmatter").path == "SKILL.md"
    assert FrontmatterInvalid("r", "d", 3).details() == {
        "path": "SKILL.md",
        "rule": "r",
        "detail": "d",
        "line": 3,
    }

    exists = SkillExists("pdf", 4)
    assert isinstance(exists, HeadConflict)
    assert (exists.expected, exists.current, str(exists)) == (
        None,
        4,
        "skill 'pdf' already exists at version 4",
    )

    kept = DraftKept(2, 3, 9)
    assert str(kept) == f"{HeadConflict(2, 3)}; the draft was kept as proposal 9"
    stale = ProposalStale(7, 2, None)
    assert stale.details() == {"proposal": 7, "expected": 2, "current": None}

    busy = WorkspaceBusy("acme", 1.5)
    assert isinstance(busy, StorageUnavailable)
    assert (busy.what, busy.detail) == ("workspace lock", "not granted within 1.5s")
    assert busy.details() == {"workspace": "acme", "timeout": 1.5}

    stale_schema = NotInitialized(None, "abc")
    assert (stale_schema.what, stale_schema.detail) == ("database", "not initialised")
    assert str(stale_schema).startswith("the database has no schema, ")

    assert Unauthenticated().args == ("a valid access token is required",)
    with pytest.raises(TypeError):
        Unauthenticated("x")

    assert BlobsMissing(["c", "a", "b"]).digests == ["a", "b", "c"]
    assert Inconsistency("fsck").code == "integrity_error"
    assert str(Inconsistency("fsck")) == "fsck"


def test_not_initialized_is_one_class_under_three_names():
    assert registry.NotInitialized is registry.api.NotInitialized is NotInitialized
    assert NotInitialized.__module__ == "registry.errors"


def test_a_subclass_must_name_its_code():
    with pytest.raises(TypeError):

        class Nameless(RegistryError):
            pass
