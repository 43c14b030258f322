"""Serving skills where agents look: the Agent Skills discovery index and its artifacts.

Owns what an owner publishes for discovery (`settings`: the whole scope or skills one by
one, public or behind a token), the index of a scope (`index`: one entry per published
skill in use, with the SHA-256 of its artifact, cached per package state), the
immutable artifacts it names (`artifacts`: a version's zip, or one of its files), the
snapshots of the index (`snapshots`: each state served, numbered and kept, for versioned
discovery) and the older layout (`legacy`: each listed skill's files).
docs/distribution.md describes the whole flow.
"""
