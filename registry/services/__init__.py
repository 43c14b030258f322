"""Services: the write path, reads, history, reconcile, GC.

They orchestrate the domain, persistence and blob storage.
"""
