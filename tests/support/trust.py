"""The root of trust a test host pins: the key the test run's registries sign with.

`tests/conftest.py` gives every registry of a run one key (`SKILLREG_SIGNING_KEY`); a host
that syncs from them pins its public half, as an operator would with `--trust-keys`.
"""

from __future__ import annotations

import os

from registry.client.trust import TrustRoot
from registry.services.signing import Signer


def run_key() -> Signer:
    return Signer.from_pem(os.environ["SKILLREG_SIGNING_KEY"].encode(), "SKILLREG_SIGNING_KEY")


def registry_root() -> TrustRoot:
    signer = run_key()
    return TrustRoot(keys={signer.key_id: signer.public})
