"""Session cookies and CSRF tokens: signed, tamper-evident, expiring, bound to a session."""

from __future__ import annotations

import time

import pytest

from registry.console.session import Session, Sessions


def sessions(key: bytes = b"k" * 32, lifetime: float = 60) -> Sessions:
    return Sessions(key, lifetime=lifetime)


def test_a_cookie_round_trips_and_carries_no_token_secret():
    made = sessions().new(token_id="0123456789abcdef", workspace="acme")
    cookie = sessions().encode(made)
    assert sessions().decode(cookie) == made
    assert "skr_" not in cookie


@pytest.mark.parametrize(
    "tamper",
    [
        lambda c: c[:-2] + ("AA" if not c.endswith("AA") else "BB"),
        lambda c: c.replace("v1.", "v2.", 1),
        lambda c: c.split(".")[0] + "." + c.split(".")[1] + ".",
        lambda _: "garbage",
        lambda _: "",
        lambda _: "v1.%%%.%%%",
    ],
)
def test_a_changed_cookie_is_no_session(tamper):
    cookie = sessions().encode(sessions().new(token_id="0123456789abcdef", workspace="acme"))
    assert sessions().decode(tamper(cookie)) is None


def test_a_payload_signed_with_another_key_is_refused():
    forged = sessions(b"x" * 32).encode(Session("id", int(time.time()) + 60, "t", "acme"))
    assert sessions().decode(forged) is None


def test_an_expired_session_is_no_session():
    expired = Session("id", int(time.time()) - 1, "t", "acme")
    assert sessions().decode(sessions().encode(expired)) is None


def test_csrf_tokens_belong_to_one_session():
    s = sessions()
    a, b = s.new(), s.new()
    assert a.id != b.id
    assert s.csrf_valid(a, s.csrf_token(a))
    assert not s.csrf_valid(b, s.csrf_token(a))
    assert not s.csrf_valid(a, "")
    assert not s.csrf_valid(a, None)


def test_a_short_key_is_refused():
    with pytest.raises(ValueError, match="16 bytes"):
        Sessions(b"short", lifetime=60)
