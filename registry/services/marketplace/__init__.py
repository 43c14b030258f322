"""The marketplace: a catalog of listings, and install and update jobs into workspaces.

Owns the catalog (`catalog`), install and update with merges and proposals (`install`),
where installed copies stand against their listings (`copies`) and the durable job queue
that runs installs and updates (`jobs`). Packages are written through `services.write`.
"""
