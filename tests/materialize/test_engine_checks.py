"""The engine checks what any source gives it (defence in depth, for `reconcile` too).

A source that is the registry's own database is trusted to hold what the write path
stored; the engine still checks every slug and every manifest before the disk sees it, so
a corrupted row, or a bug in a source, cannot write outside a skill's folder. A minimal
in-memory source stands in for the database here: the checks are the engine's, whatever
feeds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from registry.domain.limits import Limits
from registry.domain.manifest import Manifest, ManifestEntry, file_digest
from registry.domain.model import PackageFile, Scope
from registry.errors import InvalidName, LimitExceeded, PathRejected
from registry.services.materialize.reconcile import materialize
from registry.services.materialize.source import Applied, Change, Desired, Snapshot, Want

SKILL_MD = b"---\nname: x\ndescription: d\n---\n"


@dataclass
class Given:
    """A source that gives what the test says, as the database source would."""

    manifests: dict[str, Manifest]
    blobs: dict[str, bytes]
    applied: dict[str, Applied] = field(default_factory=dict)
    records_prove_ownership: bool = True
    fetched: int = 0

    async def begin(self, target, lock) -> Snapshot:
        del target, lock  # the engine's: this source needs neither
        wants = {s: Want(None, 1, m.hash, manifest=m) for s, m in self.manifests.items()}
        return Snapshot(Desired(wants), self.applied)

    async def manifest(self, want: Want) -> Manifest:
        assert want.manifest is not None
        return want.manifest

    async def files(self, manifest: Manifest) -> dict[str, PackageFile]:
        self.fetched += len(manifest)
        return {e.path: PackageFile(self.blobs[e.digest], e.executable) for e in manifest}

    async def record(self, *, expected: Applied | None, new: Applied, change: Change) -> None:
        del expected, change  # no compare-and-swap here: one engine writes
        self.applied[new.slug] = new

    async def finish(self, desired: Desired) -> None:
        del desired  # nothing cached to trim


def _package(files: dict[str, bytes]) -> tuple[Manifest, dict[str, bytes]]:
    entries = [ManifestEntry(p, file_digest(d), len(d)) for p, d in files.items()]
    return Manifest(entries), {file_digest(d): d for d in files.values()}


@pytest.mark.parametrize("mode", ["link", "copy"])
@pytest.mark.parametrize(
    ("path", "rule"),
    [("../../../escaped", "dot_segment"), ("/tmp/escaped", "absolute_path")],
)
async def test_a_stored_manifest_that_leaves_the_folder_is_not_written(tmp_path, mode, path, rule):
    manifest, blobs = _package({"SKILL.md": SKILL_MD, path: b"owned\n"})
    source = Given({"evil": manifest}, blobs)
    target = tmp_path / "deep" / "er" / "target"
    report = await materialize(source, Scope("acme"), target, mode=mode)
    [outcome] = report.outcomes
    assert isinstance(outcome.error, PathRejected)
    assert outcome.error.rule == rule
    assert source.fetched == 0
    assert not Path("/tmp/escaped").exists() or Path("/tmp/escaped").read_bytes() != b"owned\n"
    assert sorted(p.name for p in tmp_path.rglob("escaped")) == []


async def test_a_stored_slug_that_is_a_path_is_refused(tmp_path):
    manifest, blobs = _package({"SKILL.md": SKILL_MD})
    source = Given({"../x": manifest, "good": manifest}, blobs)
    report = await materialize(source, Scope("acme"), tmp_path / "target", mode="copy")
    assert report.written == ["good"]
    [refused] = report.refused
    assert isinstance(refused, InvalidName)
    assert not (tmp_path / "x").exists()


async def test_the_limits_given_to_the_engine_hold(tmp_path):
    manifest, blobs = _package({"SKILL.md": SKILL_MD, "big": b"x" * 100})
    source = Given({"big": manifest}, blobs)
    report = await materialize(
        source, Scope("acme"), tmp_path / "target", limits=Limits(max_file_bytes=64)
    )
    [outcome] = report.outcomes
    assert isinstance(outcome.error, LimitExceeded)
    assert (outcome.error.rule, outcome.error.path) == ("max_file_bytes", "big")
