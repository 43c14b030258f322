"""The marketplace: a catalog of listings, and install and update jobs into workspaces.

Owns the catalog (`catalog`), install and update with merges and proposals (`install`) and
the durable job queue that runs them (`jobs`). Packages are written through `services.write`.
"""
