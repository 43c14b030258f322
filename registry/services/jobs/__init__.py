"""Durable jobs: a generic queue in the database, claimed under a lease, retried with backoff.

Owns the queue (`queue`: enqueue by idempotency key, claim, run, record the outcome, the
worker loop). What a job does is its handler's business: the marketplace's install and
update (`registry/services/marketplace/install.py`) are the handlers today.
"""
