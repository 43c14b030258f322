"""Session cookies and CSRF tokens: signed, tamper-evident, expiring, bound to a session,
and verified under every key of a rotation."""

from __future__ import annotations

import time

import pytest

from registry.console.session import Session, Sessions
from registry.settings import Settings

KEY = b"k" * 32
OLD = b"o" * 32


def sessions(*keys: bytes, lifetime: float = 60) -> Sessions:
    return Sessions(keys or (KEY,), lifetime=lifetime)


def test_a_cookie_round_trips_and_carries_no_token_secret():
    made = sessions().new(token_id="0123456789abcdef", workspace="acme")
    cookie = sessions().encode(made)
    assert sessions().decode(cookie) == made
    assert "skr_" not in cookie


def _flip(text: str, index: int) -> str:
    return text[:index] + ("A" if text[index] != "A" else "B") + text[index + 1 :]


@pytest.mark.parametrize(
    "tamper",
    [
        lambda c: _flip(c, len(c) - 2),  # the signature
        lambda c: _flip(c, 2),  # the payload
        lambda c: _flip(c, c.index(".") + 2),  # the timestamp
        lambda c: c.rsplit(".", 1)[0] + ".",
        lambda c: c.rsplit(".", 1)[0],
        lambda _: "garbage",
        lambda _: "",
        lambda _: "%%%.%%%.%%%",
        # The format the console used before issue 38: a version, a payload and an HMAC.
        lambda _: "v1.eyJzIjoiaWQifQ.c2lnbmF0dXJl",
    ],
    ids=[
        *("signature", "payload", "timestamp", "empty-signature", "no-signature", "garbage"),
        *("empty", "not-base64", "old-format"),
    ],
)
def test_a_changed_cookie_is_no_session(tamper):
    cookie = sessions().encode(sessions().new(token_id="0123456789abcdef", workspace="acme"))
    assert sessions().decode(tamper(cookie)) is None


def test_a_payload_signed_with_another_key_is_refused():
    forged = sessions(b"x" * 32).encode(Session("id", int(time.time()) + 60, "t", "acme"))
    assert sessions().decode(forged) is None


def _signed_ago(made: Sessions, seconds: float, monkeypatch) -> str:
    """A cookie of a fresh session, as `made` signed it `seconds` ago."""
    now = time.time()
    with monkeypatch.context() as patched:
        patched.setattr(time, "time", lambda: now - seconds)
        return made.encode(made.new(token_id="t", workspace="acme"))


def test_a_session_ends_its_lifetime_after_it_was_signed(monkeypatch):
    made = sessions(lifetime=60)
    assert made.decode(_signed_ago(made, 30, monkeypatch)) is not None
    assert made.decode(_signed_ago(made, 61, monkeypatch)) is None
    # A shorter lifetime ends the sessions already open.
    assert sessions(lifetime=20).decode(_signed_ago(made, 30, monkeypatch)) is None


def test_a_decoded_session_expires_when_its_signature_does(monkeypatch):
    made = sessions(lifetime=60)
    session = made.decode(_signed_ago(made, 30, monkeypatch))
    assert session is not None
    assert abs(session.expires - (time.time() + 30)) <= 2


def test_csrf_tokens_belong_to_one_session():
    s = sessions()
    a, b = s.new(), s.new()
    assert a.id != b.id
    assert s.csrf_valid(a, s.csrf_token(a))
    assert not s.csrf_valid(b, s.csrf_token(a))
    assert not s.csrf_valid(a, "")
    assert not s.csrf_valid(a, None)
    assert not s.csrf_valid(a, "é" + s.csrf_token(a))


def test_a_csrf_token_is_no_cookie_and_a_cookie_no_csrf_token():
    s = sessions()
    session = s.new(token_id="t", workspace="acme")
    cookie = s.encode(session)
    assert s.decode(f"{session.id}.{s.csrf_token(session)}") is None
    assert not s.csrf_valid(session, cookie.rsplit(".", 1)[1])


def test_after_a_rotation_the_new_key_signs_and_the_old_one_still_verifies():
    before = sessions(OLD)
    after = sessions(KEY, OLD)
    session = before.new(token_id="t", workspace="acme")
    old_cookie, old_csrf = before.encode(session), before.csrf_token(session)
    # Cookies and forms from before the rotation stay valid...
    assert after.decode(old_cookie) == session
    assert after.csrf_valid(session, old_csrf)
    # ...what the console signs now, it signs with the new key...
    new_cookie, new_csrf = after.encode(session), after.csrf_token(session)
    assert sessions(KEY).decode(new_cookie) == session
    assert sessions(KEY).csrf_valid(session, new_csrf)
    assert before.decode(new_cookie) is None
    assert not before.csrf_valid(session, new_csrf)
    # ...and once the old key is dropped, what it signed is no session.
    assert sessions(KEY).decode(old_cookie) is None
    assert not sessions(KEY).csrf_valid(session, old_csrf)


@pytest.mark.parametrize("keys", [(b"short",), (KEY, b"short"), ()])
def test_every_key_must_be_long_enough(keys):
    with pytest.raises(ValueError, match=r"16 bytes|needs a key"):
        Sessions(keys, lifetime=60)


def test_the_previous_keys_are_a_json_list_in_the_environment(monkeypatch):
    monkeypatch.setenv("SKILLREG_CONSOLE_SECRET", "n" * 32)
    monkeypatch.setenv("SKILLREG_CONSOLE_PREVIOUS_SECRETS", '["' + "o" * 32 + '"]')
    settings = Settings()
    assert [key.get_secret_value() for key in settings.console_previous_secrets] == ["o" * 32]
