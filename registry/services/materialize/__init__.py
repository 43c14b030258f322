"""Disk follows the database: package-atomic folders, drift, reconcile and lock files.

Owns a target's layout and lock (`target`), drift detection (`drift`), the atomic swap of
a package (`swap`), desired and applied state (`desired`, `applied`), the reconciler
(`reconcile`), folders in and out (`folder`) and lock files (`lockfile`). Its file
operations are `registry/services/fsops.py`, shared.
"""
