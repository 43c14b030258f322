"""Fake credentials with the shape and entropy of real ones, derived from fixed seeds.

Each value is built at import time from BLAKE3's extendable output, so it is the same on every
run, and no credential-shaped literal is written in the repository, where secret scanners
(this project's own among them) would rightly object to it. None of them grants anything.
"""

from __future__ import annotations

import base64
import json
import string

from blake3 import blake3

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
BASE64 = ALNUM + "+/"
BASE64URL = ALNUM + "-_"


def chars(alphabet: str, length: int, seed: str) -> str:
    """`length` characters of `alphabet`, pseudo-random but fixed by `seed`."""
    stream = blake3(seed.encode()).digest(length=length)
    return "".join(alphabet[byte % len(alphabet)] for byte in stream)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def private_key_block(kind: str = "RSA", body_bytes: int = 160, seed: str = "pem") -> str:
    """A PEM block: `-----BEGIN {kind} PRIVATE KEY-----`, base64 body, END line."""
    body = base64.b64encode(blake3(seed.encode()).digest(length=body_bytes)).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    label = f"{kind} PRIVATE KEY".strip()
    dashes = "-" * 5
    return "\n".join([f"{dashes}BEGIN {label}{dashes}", *lines, f"{dashes}END {label}{dashes}"])


AWS_ACCESS_KEY_ID = "AK" + "IA" + chars(UPPER_DIGITS, 16, "aws-id")
AWS_SECRET_ACCESS_KEY = chars(BASE64, 40, "aws-secret")
GITHUB_TOKEN = "gh" + "p_" + chars(ALNUM, 36, "github")
GITHUB_PAT = "github" + "_pat_" + chars(ALNUM, 22, "pat-1") + "_" + chars(ALNUM, 59, "pat-2")
SLACK_TOKEN = (
    "xo" + "xb-" + chars(string.digits, 12, "slack-1") + "-" + chars(string.digits, 13, "slack-2")
) + ("-" + chars(ALNUM, 24, "slack-3"))
STRIPE_KEY = "sk" + "_live_" + chars(ALNUM, 24, "stripe")
GOOGLE_API_KEY = "AI" + "za" + chars(BASE64URL, 35, "google")
OPENAI_KEY = "sk-" + "proj-" + chars(ALNUM, 48, "openai")
ANTHROPIC_KEY = "sk-" + "ant-api03-" + chars(BASE64URL, 93, "anthropic") + "AA"
JWT = ".".join(
    (
        _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()),
        _b64url(json.dumps({"sub": "1234567890", "name": "corpus", "iat": 1767225600}).encode()),
        chars(BASE64URL, 43, "jwt-signature"),
    )
)
RSA_PRIVATE_KEY = private_key_block("RSA", seed="rsa")
OPENSSH_PRIVATE_KEY = private_key_block("OPENSSH", seed="openssh")
GENERIC_PASSWORD = chars(ALNUM + "!#%&*+?@^", 20, "password")

ALL = {
    "aws_access_key_id": AWS_ACCESS_KEY_ID,
    "aws_secret_access_key": AWS_SECRET_ACCESS_KEY,
    "github_token": GITHUB_TOKEN,
    "github_pat": GITHUB_PAT,
    "slack_token": SLACK_TOKEN,
    "stripe_key": STRIPE_KEY,
    "google_api_key": GOOGLE_API_KEY,
    "openai_key": OPENAI_KEY,
    "anthropic_key": ANTHROPIC_KEY,
    "jwt": JWT,
    "rsa_private_key": RSA_PRIVATE_KEY,
    "openssh_private_key": OPENSSH_PRIVATE_KEY,
    "generic_password": GENERIC_PASSWORD,
}
"""Every fake by name, for tests that check no output ever contains one."""
