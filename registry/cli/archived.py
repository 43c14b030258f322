"""Deleted skills on the command line: `WORKSPACE/SLUG~ID@N` and `--archived`.

A deleted skill keeps its id, and `history --archived` prints it with each of its versions
(`SLUG~ID`). A REF whose slug carries `~ID` names that deleted skill; `--archived` names the
slug's only deleted skill (several are an error that lists them). In a diff, a side written
`~ID@N` is version N of deleted skill ID, whatever the REF names (docs/history.md).
"""

from __future__ import annotations

import click

from registry.cli.common import parse_ref, row_id, version_number
from registry.domain.model import ArchivedVersion

archived_option = click.option(
    "--archived",
    is_flag=True,
    help="REF names a version of the slug's deleted skill (several: write SLUG~ID).",
)


def split_slug(ref: str, text: str) -> tuple[str, int | None]:
    """`SLUG` or `SLUG~ID` -> (slug, deleted skill id or None)."""
    slug, sep, raw = text.partition("~")
    if not sep:
        return slug, None
    skill_id = row_id(raw)
    if not slug or skill_id is None:
        msg = f"{ref!r}: a deleted skill is written SLUG~ID (ID as history --archived lists it)"
        raise click.BadParameter(msg)
    return slug, skill_id


def parse_skill_ref(ref: str) -> tuple[str, str, int | None, int | None]:
    """`WORKSPACE/SLUG[~ID][@N]` -> (workspace, slug, deleted skill id, version)."""
    workspace, text, version = parse_ref(ref)
    slug, skill_id = split_slug(ref, text)
    return workspace, slug, skill_id, version


def pinned(
    ref: str, skill_id: int | None, version: int | None, *, archived: bool
) -> int | ArchivedVersion | None:
    """The version a read names: of the live skill, or of a deleted one (`@N` required)."""
    if skill_id is None and not archived:
        return version
    if version is None:
        msg = f"{ref!r}: name the version of a deleted skill, as SLUG~ID@N (or SLUG@N --archived)"
        raise click.BadParameter(msg)
    return ArchivedVersion(version, skill_id)


def archived_side(value: str) -> ArchivedVersion | None:
    """A diff side written `~ID@N` (version N of deleted skill ID), or None if it is not one."""
    if not value.startswith("~"):
        return None
    raw_id, sep, raw_number = value[1:].partition("@")
    skill_id, number = row_id(raw_id), version_number(raw_number)
    if not sep or skill_id is None or number is None:
        msg = f"{value!r}: a version of a deleted skill is written ~ID@N"
        raise click.BadParameter(msg)
    return ArchivedVersion(number, skill_id)
