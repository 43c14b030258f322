"""`skillreg sync` against a registry that lies (tests/support/hostile.py): nothing escapes.

Every case serves one honest skill (`good`) beside the attack, in link and copy mode where
the mode changes what reaches the disk. Each asserts that nothing outside the target
changed (a snapshot of the host's folder taken before and after), what the client
reported (the rule it names), and that the client ended within its deadline.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from registry.client import Sync
from registry.client.http import Bounds, check_url, is_loopback
from registry.domain.limits import Limits
from registry.domain.model import Scope
from registry.errors import (
    InvalidName,
    LimitExceeded,
    PathRejected,
    RemoteRefused,
    StorageUnavailable,
)
from registry.services.materialize.reconcile import SKILLS_AT_ONCE
from registry.services.materialize.report import ReconcileReport
from tests.support.hostile import HostileRegistry, Reply, endless, skill_md, trickle
from tests.support.targets import load_skill

MODES = ("link", "copy")
GOOD = {"SKILL.md": skill_md("good"), "notes.md": b"fine\n"}
SMALL = Bounds(max_json_bytes=256 * 1024, request_timeout=1.0, run_timeout=4.0)
# Far above any honest run of these tests, far below "never": a liveness bound, not a timing.
ENDED_WITHIN = 30.0


@pytest.fixture
async def hostile() -> AsyncIterator[HostileRegistry]:
    server = HostileRegistry()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """The host's folder: the target inside it, and files an attack would like to reach."""
    root = tmp_path / "host"
    (root / "outside").mkdir(parents=True)
    (root / "agent").mkdir()
    (root / "outside" / "file").write_bytes(b"keep\n")
    (root / "victim.txt").write_bytes(b"keep me\n")
    return root


def _target(host: Path) -> Path:
    return host / "agent" / "skills"


def _outside(host: Path) -> dict[str, bytes | str]:
    """Everything under the host's folder but the target: a file's bytes, a link's text."""
    found: dict[str, bytes | str] = {}
    target = _target(host)
    for path in sorted(host.rglob("*")):
        if path == target or target in path.parents:
            continue
        key = str(path.relative_to(host))
        if path.is_symlink():
            found[key] = str(path.readlink())
        elif path.is_file():
            found[key] = path.read_bytes()
        else:
            found[key] = "<dir>"
    return found


async def _run(
    server: HostileRegistry, host: Path, mode: str = "link", bounds: Bounds = SMALL
) -> tuple[ReconcileReport | Exception, float]:
    started = time.monotonic()
    syncer = Sync(
        server.url,
        "secret-token",
        Scope("acme"),
        _target(host),
        mode=mode,
        bounds=bounds,
        trust=server.root(),
    )
    async with syncer:
        try:
            report: ReconcileReport | Exception = await syncer.once()
        except Exception as exc:
            report = exc
    return report, time.monotonic() - started


async def _attack(server, host, mode="link", bounds=SMALL) -> ReconcileReport | Exception:
    before = _outside(host)
    outcome, took = await _run(server, host, mode, bounds)
    assert _outside(host) == before, "something outside the target changed"
    assert took < ENDED_WITHIN
    return outcome


def _escapes(host: Path) -> list[str]:
    outside = host / "outside" / "file"
    return [
        "../" * 40 + str(outside).lstrip("/"),  # relative traversal to an absolute place
        "../../../outside/file",
        str(outside),  # absolute
        "..\\..\\outside\\file",  # Windows separators
        "\uff0e\uff0e/\uff0e\uff0e/outside/file",  # fullwidth dots: '..' under NFKC
        "scripts/\x00/file",
        "scripts/\x1b[2Jfile",
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_a_path_that_leaves_the_skill_is_refused_and_the_rest_goes_on(hostile, host, mode):
    hostile.add("good", GOOD)
    attacks = _escapes(host)
    for n, path in enumerate(attacks):
        hostile.add(f"evil-{n}", {"SKILL.md": skill_md(f"evil-{n}"), path: b"owned\n"})
    report = await _attack(hostile, host, mode)
    assert isinstance(report, ReconcileReport)
    assert report.written == ["good"]
    assert load_skill(_target(host), "good") == {p: (d, False) for p, d in GOOD.items()}
    for n in range(len(attacks)):
        outcome = report.outcome(f"evil-{n}")
        assert outcome is not None
        assert (outcome.action, outcome.error_code) == ("failed", "path_rejected")
        assert isinstance(outcome.error, PathRejected)
        assert not (_target(host) / f"evil-{n}").exists()
    assert hostile.count("GET", "/blobs/") == len(GOOD), "a refused package's blobs were fetched"


@pytest.fixture
def victim() -> Iterator[Path]:
    """A file at a short absolute path, as a slug can name one (a slug is 64 characters)."""
    folder = Path(tempfile.mkdtemp(prefix="sr-"))
    (folder / "victim").write_bytes(b"keep me\n")
    yield folder / "victim"
    shutil.rmtree(folder)


@pytest.mark.parametrize("mode", MODES)
async def test_a_slug_that_is_a_path_is_refused_and_nothing_is_done_under_it(
    hostile, host, victim, mode
):
    hostile.add("good", GOOD)
    slugs = ["../../../../x", "../outside", str(victim.parent / "planted"), "a/b", "..", "-x"]
    for slug in slugs:
        hostile.add(slug, {"SKILL.md": skill_md("x")})
    report = await _attack(hostile, host, mode)
    assert isinstance(report, ReconcileReport)
    assert report.written == ["good"]
    assert not report.ok
    assert sorted(e.value for e in report.refused if isinstance(e, InvalidName)) == sorted(slugs)
    assert sorted(p.name for p in _target(host).iterdir()) == [".skillreg", "good"]
    assert sorted(p.name for p in victim.parent.iterdir()) == ["victim"]
    assert hostile.count("PUT", "/skills/") == 1, "a refused slug was recorded"


@pytest.mark.parametrize("mode", MODES)
async def test_a_record_of_an_absolute_slug_removes_nothing(hostile, host, victim, mode):
    hostile.add("good", GOOD)
    record = {"manifest_hash": "0" * 64, "version": 1, "outcome": "applied", "error": None}
    hostile.state["applied"] = [{"slug": str(victim), **record}]
    report = await _attack(hostile, host, mode)
    assert isinstance(report, ReconcileReport)
    assert victim.read_bytes() == b"keep me\n"
    [refused] = report.refused
    assert isinstance(refused, InvalidName)
    assert refused.value == str(victim)


async def test_a_slug_longer_than_any_slug_refuses_the_whole_state(hostile, host):
    hostile.add("good", GOOD)
    hostile.add("../" * 30 + "x", {"SKILL.md": skill_md("x")})
    refused = await _attack(hostile, host)
    assert isinstance(refused, RemoteRefused)
    assert refused.rule == "malformed"
    assert not (_target(host) / "good").exists()


@pytest.mark.parametrize("mode", MODES)
async def test_a_record_alone_does_not_make_a_folder_the_syncs_to_remove(hostile, host, mode):
    mine = _target(host) / "mine"
    mine.mkdir(parents=True)
    (mine / "SKILL.md").write_bytes(skill_md("mine"))
    hostile.add("good", GOOD)
    hostile.state["applied"] = [
        {
            "slug": "mine",
            "manifest_hash": "1" * 64,
            "version": 3,
            "outcome": "applied",
            "error": None,
        }
    ]
    report = await _attack(hostile, host, mode)
    assert isinstance(report, ReconcileReport)
    assert report.removed == []
    assert (mine / "SKILL.md").read_bytes() == skill_md("mine")

    hostile.add("mine", {"SKILL.md": skill_md("mine") + b"x"})
    again = await _attack(hostile, host, mode)
    assert isinstance(again, ReconcileReport)
    outcome = again.outcome("mine")
    assert outcome is not None
    assert (outcome.action, outcome.error_code) == ("failed", "entry_in_the_way")
    assert (mine / "SKILL.md").read_bytes() == skill_md("mine")


async def test_an_endless_desired_state_is_cut_at_its_bound(hostile, host):
    hostile.route("GET", "/desired", lambda _: Reply(200, endless()))
    refused = await _attack(hostile, host)
    assert isinstance(refused, RemoteRefused)
    assert refused.rule == "too_large"
    [seen] = [s for s in hostile.seen if "/desired" in s.path]
    # What the server managed to push before the client hung up: the bound plus what the
    # sockets buffer on the way, nowhere near "endless".
    assert seen.sent < 64 * 1024 * 1024


async def test_a_content_length_over_the_bound_is_refused_unread(hostile, host):
    lying = {"content-length": str(10 * 1024**3), "content-type": "application/json"}
    hostile.route("GET", "/desired", lambda _: Reply(200, endless(), lying))
    refused = await _attack(hostile, host)
    assert isinstance(refused, RemoteRefused)
    assert refused.rule == "too_large"
    assert str(10 * 1024**3) in refused.detail


async def test_an_endless_error_body_is_read_only_up_to_its_bound(hostile, host):
    hostile.route("GET", "/desired", lambda _: Reply(500, endless(b"x" * 65536)))
    failed = await _attack(hostile, host)
    assert isinstance(failed, StorageUnavailable)
    [seen] = [s for s in hostile.seen if "/desired" in s.path]
    assert seen.sent < 64 * 1024 * 1024


async def test_a_trickled_desired_state_ends_at_the_request_deadline(hostile, host):
    hostile.route("GET", "/desired", lambda _: Reply(200, trickle(b"{", 0.05)))
    refused = await _attack(hostile, host)
    assert isinstance(refused, RemoteRefused)
    assert refused.rule == "too_slow"


@pytest.mark.parametrize("mode", MODES)
async def test_trickled_blobs_fail_their_skills_and_the_run_keeps_its_deadline(hostile, host, mode):
    # Skills are fetched `SKILLS_AT_ONCE` at a time: five rounds of them, at one request
    # deadline (1 s) each, would take 5 s; the run's deadline is 4 s.
    for n in range(5 * SKILLS_AT_ONCE):
        hostile.add(f"slow-{n}", {"SKILL.md": skill_md(f"slow-{n}")})
    hostile.route("GET", "/blobs/", lambda _: Reply(200, trickle(b"-", 0.05)))
    refused = await _attack(hostile, host, mode)
    assert isinstance(refused, RemoteRefused)
    assert refused.rule == "run_deadline"
    assert [p.name for p in _target(host).iterdir()] == [".skillreg"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_declared_size_over_the_limits_is_refused_before_any_download(hostile, host, mode):
    hostile.add("good", GOOD)
    hostile.add(
        "huge",
        {"SKILL.md": skill_md("huge"), "data.bin": b"0"},
        sizes={"data.bin": 10 * 1024**3},
    )
    report = await _attack(hostile, host, mode)
    assert isinstance(report, ReconcileReport)
    outcome = report.outcome("huge")
    assert outcome is not None
    assert isinstance(outcome.error, LimitExceeded)
    assert outcome.error.rule == "max_file_bytes"
    assert hostile.count("GET", "/blobs/") == len(GOOD)


async def test_the_host_limits_apply_to_what_the_registry_allows(hostile, host):
    hostile.add("wide", {"SKILL.md": skill_md("wide"), **{f"f{n}": b"%d" % n for n in range(5)}})
    before = _outside(host)
    syncer = Sync(
        hostile.url,
        "t",
        Scope("acme"),
        _target(host),
        bounds=SMALL,
        limits=Limits(max_files=3),
        trust=hostile.root(),
    )
    async with syncer:
        report = await syncer.once()
    assert _outside(host) == before
    outcome = report.outcome("wide")
    assert outcome is not None
    assert isinstance(outcome.error, LimitExceeded)
    assert outcome.error.rule == "max_files"


@pytest.mark.parametrize("mode", MODES)
async def test_a_blob_that_does_not_hash_to_its_digest_is_never_written(hostile, host, mode):
    entry = hostile.add("good", GOOD)
    notes = next(f for f in entry["files"] if f["path"] == "notes.md")
    hostile.blobs[notes["digest"]] = b"evil\n"
    report = await _attack(hostile, host, mode)
    assert isinstance(report, ReconcileReport)
    outcome = report.outcome("good")
    assert outcome is not None
    assert outcome.error_code == "integrity_error"
    assert not (_target(host) / "good").exists()


async def test_a_redirect_is_not_followed_and_the_token_goes_nowhere_else(hostile, host):
    elsewhere = HostileRegistry()
    await elsewhere.start("127.0.0.2")
    try:
        location = {"location": f"{elsewhere.url}/v1/workspaces/acme/desired"}
        hostile.route("GET", "/desired", lambda _: Reply(302, b"", location))
        refused = await _attack(hostile, host)
    finally:
        await elsewhere.stop()
    assert isinstance(refused, RemoteRefused)
    assert refused.rule == "redirect"
    assert "127.0.0.2" in refused.detail
    assert elsewhere.seen == []
    assert hostile.seen[0].path == "/v1/workspaces/acme/desired"
    assert {s.headers["authorization"] for s in hostile.seen} == {"Bearer secret-token"}


@pytest.mark.parametrize("signed", ["both", "one"])
async def test_duplicate_slugs_refuse_the_whole_state(hostile, host, signed):
    first = hostile.add("good", GOOD)
    hostile.add("good", {**GOOD, "more.md": b"more\n"})
    if signed == "one":  # the signed state lists it once, the listing twice
        hostile.signed = hostile.sign([first])
    refused = await _attack(hostile, host)
    assert isinstance(refused, RemoteRefused)
    assert refused.rule == {"both": "malformed_statement", "one": "mixed_state"}[signed]
    assert not _target(host).joinpath("good").exists()


async def test_slugs_equal_under_case_folding_are_both_refused(hostile, host):
    hostile.add("good", GOOD)
    hostile.add("straße", {"SKILL.md": skill_md("straße")})
    hostile.add("strasse", {"SKILL.md": skill_md("strasse")})
    report = await _attack(hostile, host)
    assert isinstance(report, ReconcileReport)
    assert report.written == ["good"]
    for slug in ("strasse", "straße"):
        outcome = report.outcome(slug)
        assert outcome is not None
        assert isinstance(outcome.error, PathRejected)
        assert outcome.error.rule == "case_collision"


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://registry.example", True),
        ("http://127.0.0.1:8080", True),
        ("http://127.9.9.9", True),
        ("http://[::1]:8080/", True),
        ("http://localhost:8080", True),
        ("http://registry.example", False),
        ("http://10.0.0.7:8080", False),
        ("http://localhost.registry.example", False),
        ("ftp://registry.example", False),
        ("https://user:pw@registry.example", False),
        ("registry.example", False),
    ],
)
def test_which_urls_a_host_accepts(url, allowed):
    if allowed:
        assert check_url(url) == url.rstrip("/")
        return
    with pytest.raises(RemoteRefused) as refused:
        check_url(url)
    assert refused.value.what == "url"


async def test_plain_http_elsewhere_needs_the_flag_and_sends_nothing_before(host):
    sent: list[object] = []

    async def never(request):
        sent.append(request)
        raise AssertionError("a request was sent")

    transport = httpx.MockTransport(never)
    with pytest.raises(RemoteRefused) as refused:
        Sync("http://registry.example", "t", Scope("acme"), _target(host), transport=transport)
    assert refused.value.rule == "plain_http"
    assert "unencrypted" in refused.value.detail
    allowed = Sync(
        "http://registry.example",
        "t",
        Scope("acme"),
        _target(host),
        transport=transport,
        allow_plain_http=True,
    )
    await allowed.client.close()
    assert sent == []
    assert is_loopback("127.0.0.1")
    assert not is_loopback("localhost.example")


async def test_a_server_detail_cannot_drive_the_terminal(hostile, host):
    body = {
        "code": "injected",
        "detail": "\x1b[2J\x1b]8;;http://evil\x07click\u202e",
        "status": 400,
    }
    hostile.route("GET", "/desired", lambda _: Reply.json(body, 400))
    failed = await _attack(hostile, host)
    text = str(failed)
    assert "\x1b" not in text
    assert "\u202e" not in text
    assert "\x07" not in text
