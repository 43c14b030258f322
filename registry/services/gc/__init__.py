"""Reclaiming storage and checking it: online GC, retention, fsck and storage figures.

Owns the collector (`collect`), version and proposal pruning (`retention`), the end-to-end
check (`fsck`) and what is stored, referenced and reclaimable (`figures`).
"""
