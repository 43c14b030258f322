"""Services: the write path, reads, history, reconcile, GC. They orchestrate domain and persistence."""
