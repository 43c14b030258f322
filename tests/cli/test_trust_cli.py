"""`skillreg keys`, `attestation` and `verify` on the embedded default, as a new user runs them."""

from __future__ import annotations

import json
import stat

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from registry.domain.signed_state import follow
from tests.support.cli import run, run_json
from tests.support.packages import skill_md


def _skill(folder, slug: str, extra: bytes = b"") -> None:
    folder.mkdir(exist_ok=True)
    (folder / "SKILL.md").write_bytes(skill_md(slug) + extra)


def test_init_makes_the_key_and_every_version_verifies_online_and_offline(embedded):
    run("init")
    key = embedded / ".skillreg" / "signing-key.pem"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert "a key file at" in run("keys", "create", code=4)  # one key; rotate to change it

    _skill(embedded / "notes", "notes")
    run("publish", embedded / "notes", "--workspace", "acme", "--expect-head", "new")
    checked = run_json("verify", "acme/notes@1")
    assert checked["subject"] == "acme/personal/notes@1"
    assert checked["predicate"]["principal"].startswith("os:")
    assert checked["predicate"]["declared_actor"] == "cli"

    run("attestation", "acme/notes@1", "--out", embedded / "att.json")
    run("keys", "export", "--out", embedded / "keys.json")
    run("get", "acme/notes@1", "--out", embedded / "copy")
    offline = [
        "verify", "--dir", embedded / "copy", "--attestation", embedded / "att.json",
        "--keys", embedded / "keys.json", "--subject", "acme/personal/notes@1",
    ]  # fmt: skip
    assert run_json(*offline)["verified"] is True
    (embedded / "copy" / "SKILL.md").write_bytes(skill_md("notes") + b"edited\n")
    refused = run_json(*offline, code=3)
    assert (refused["error"], refused["details"]["rule"]) == (
        "attestation_invalid",
        "subject_mismatch",
    )


def test_rotation_signs_with_the_new_key_and_the_old_signatures_stay_valid(embedded):
    run("init")
    _skill(embedded / "notes", "notes")
    run("publish", embedded / "notes", "--workspace", "acme", "--expect-head", "new")
    first = run_json("verify", "acme/notes@1")["keyid"]
    rotated = run_json("keys", "rotate")
    assert rotated["retired"] == first
    assert list(embedded.joinpath(".skillreg").glob("signing-key.pem.*.retired"))
    _skill(embedded / "notes", "notes", b"more\n")
    run("publish", embedded / "notes", "--workspace", "acme", "--expect-head", "1")
    assert run_json("verify", "acme/notes@1")["keyid"] == first
    assert run_json("verify", "acme/notes@2")["keyid"] == rotated["key"]["keyid"]
    listed = run_json("keys", "list")["keys"]
    assert [(k["keyid"], k["current"], k["retired_at"] is None) for k in listed] == [
        (first, False, False),
        (rotated["key"]["keyid"], True, True),
    ]
    # A host that pinned the old key follows to the new one through its endorsement.
    run("keys", "export", "--out", embedded / "keys.json")
    document = json.loads((embedded / "keys.json").read_bytes())
    old, new = document["keys"]
    assert old["endorsement"] is None
    pinned = {first: Ed25519PublicKey.from_public_bytes(bytes.fromhex(old["public_key"]))}
    followed = follow(pinned, [new["endorsement"].encode()])
    assert list(followed) == [rotated["key"]["keyid"]]
