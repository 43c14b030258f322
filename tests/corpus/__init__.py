"""Reusable test data: the hostile package corpus and credential-shaped fakes.

Data only: importable from any test suite (domain, registry, CLI) without fixtures or I/O.
"""
