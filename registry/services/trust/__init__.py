"""Trust: the keys that sign, every version's attestation, and what hosts verify.

Owns the signing keys (`keys`: create, rotate, list, export; the private key from settings)
and the attestations of versions (`attest`: signed in the publish transaction, read and
verified). The pure part, statements and DSSE envelopes, is `registry/domain/attestation.py`.
docs/trust.md has the threat model.
"""
