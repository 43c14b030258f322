"""Serving skills where agents look: the Agent Skills discovery index and its artifacts.

Owns what an owner publishes for discovery (`settings`: the whole scope or skills one by
one, public or behind a token), the index of a scope (`index`: one entry per published
skill in use, with the SHA-256 of its artifact, cached per package state) and the
immutable artifacts it names (`artifacts`: a version's zip, or one of its files).
docs/distribution.md describes the whole flow.
"""
