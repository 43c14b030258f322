"""Files crafted against the content check's patterns, each as large as a file may be.

Each case repeats what one pattern scans (long runs of the characters it repeats, the
prefix it searches for, near-misses that fail only at the end) until the file is full, so a
pattern that backtracks, or a single call that covers the whole file, shows as a long stall.
`NEAR_MISSES` find nothing; `LONG_VALUES` hold one credential-shaped value as long as the
file (the check must hash and judge it in bounded steps too).

Prefixes are assembled from pieces, as in `fakes`, so no credential-shaped literal is
written in the repository.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tests.corpus import fakes

FILE_BYTES = 2 * 1024 * 1024
"""The default per-file limit (`Limits.max_file_bytes`)."""

DASHES = "-" * 5
BEGIN = f"{DASHES}BEGIN "
PEM_LINE = f"{BEGIN}PRIVATE KEY{DASHES}"
AWS = "AK" + "IA"
GITHUB = "gh" + "p_"
GITHUB_PAT = "github" + "_pat_"
SLACK = "xo" + "xb-"
STRIPE = "sk" + "_live_"
GOOGLE = "AI" + "za"
ANTHROPIC = "sk" + "-ant-"
OPENAI = "sk" + "-"
JWT = "ey" + "J"


def fill(unit: str, size: int = FILE_BYTES, *, head: str = "", tail: str = "") -> bytes:
    """`head`, then `unit` repeated, then `tail`: exactly `size` bytes (ASCII)."""
    room = size - len(head) - len(tail)
    body = (unit * (room // len(unit) + 1))[:room]
    return (head + body + tail).encode("ascii")


@dataclass(frozen=True)
class Case:
    id: str
    pattern: str
    """The pattern class (or `assignment`, `decoding`) the case is crafted against."""
    make: Callable[[], bytes]


def _pem_header_lines() -> bytes:
    # Seven header lines that each open another block, then one long header line of
    # near-miss base64 runs: a body may not start inside a header value (the old pattern
    # tried every position of every line, for every block).
    head = PEM_LINE + "".join(f"\nA:{PEM_LINE}" for _ in range(7)) + "\nA:"
    return fill("B" * 39 + "!", head=head)


def _pem_header_spaces() -> bytes:
    # Header lines ending in spaces: the old pattern tried every split of them between a
    # header's value and the next header's indentation, (spaces + 1) ** lines ways.
    block = PEM_LINE + ("\nA:" + " " * 4) * 8 + "\n!\n"
    return fill("x" * 61 + "\n", head=block * 8)


NEAR_MISSES: tuple[Case, ...] = (
    Case("pem-header-lines", "private_key", _pem_header_lines),
    Case("pem-header-spaces", "private_key", _pem_header_spaces),
    Case(
        "pem-nested-headers", "private_key", lambda: fill(f"A:{PEM_LINE}\n", head=f"{PEM_LINE}\n")
    ),
    Case("pem-begin-only", "private_key", lambda: fill(f"{PEM_LINE}\n")),
    Case("pem-near-label", "private_key", lambda: fill(f"{BEGIN}{'A' * 39} PRIVATE KE\n")),
    Case("aws-short", "aws_access_key_id", lambda: fill(f" {AWS}{'A' * 15}a")),
    Case("aws-run", "aws_access_key_id", lambda: fill(AWS)),
    Case("github-too-long", "github_token", lambda: fill(f" {GITHUB}{'a' * 300}")),
    Case("github-pat-too-long", "github_token", lambda: fill(f" {GITHUB_PAT}{'a_' * 130}")),
    Case("slack-runs", "slack_token", lambda: fill(f" {SLACK}" + ("a" * 64 + "-") * 7 + "!")),
    Case("slack-short", "slack_token", lambda: fill(f"{SLACK}1-")),
    Case("stripe-too-long", "stripe_key", lambda: fill(f" {STRIPE}{'a' * 260}")),
    Case("google-short", "google_api_key", lambda: fill(f" {GOOGLE}{'a' * 34}!")),
    Case("anthropic-repetitive", "anthropic_key", lambda: fill("a", head=f" {ANTHROPIC}")),
    Case("openai-prefixes", "openai_key", lambda: fill(OPENAI)),
    Case("openai-short", "openai_key", lambda: fill(f" {OPENAI}{'a' * 19}!")),
    Case("jwt-segments", "jwt", lambda: fill(f".{JWT}{'a' * 16}")),
    Case(
        "jwt-long-tail", "jwt", lambda: fill("a", head=f" {JWT}aaaaaaaa.{JWT}aaaaaaaa.", tail=".")
    ),
    Case("assignment-flags", "assignment", lambda: fill(" --key")),
    Case("assignment-words", "assignment", lambda: fill("key")),
    Case("assignment-colons", "assignment", lambda: fill("key:")),
    Case("assignment-long-names", "assignment", lambda: fill(" " + "a" * 63 + "key")),
    Case("assignment-unclosed", "assignment", lambda: fill(' key="' + "a" * 600 + "\n")),
    Case("assignment-spaces", "assignment", lambda: fill("token \t \t")),
    Case("invalid-utf8", "decoding", lambda: bytes(range(128, 256)) * (FILE_BYTES // 128)),
)

LONG_VALUES: tuple[Case, ...] = (
    Case(
        "pem-long-body",
        "private_key",
        lambda: fill("A" * 64 + "\n", head=PEM_LINE + "\n"),
    ),
    Case(
        "openai-long-key",
        "openai_key",
        lambda: fill(fakes.chars(fakes.ALNUM, 4096, "long key"), head=f" {OPENAI}"),
    ),
)
