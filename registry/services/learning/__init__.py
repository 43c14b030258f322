"""Learning: what the automated learning job leaves for the owner, and what it is told.

Owns pending writes (`pending`: learning writes waiting for a saved slot, applied in order,
and the write that applies them after it had to wait), suppressions (`suppressions`: what
an owner's restore or delete undid, listed and lifted), loads (`loads`: which version a
runtime loaded for a conversation) and the learning section of the status (`status`).

The learning rules that run inside a write (a learning write as a guest: its package's
sections, its route to a proposal, a suppression or a pending write) are part of the write
path, in `registry/services/write/learning.py`; the one decision list across agents is the
proposals' (`registry/services/history/decisions.py`).
"""
