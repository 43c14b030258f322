"""Persistence: tables, engine, locks, queries and migrations.

Imports the domain, never the services.
"""
