"""The pure domain: value types, path rules, frontmatter, manifests, content checks.

Nothing in this package performs I/O or imports a persistence or service module.
"""
