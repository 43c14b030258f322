"""Profiling (filled in next)."""
