"""Services: the capabilities of the registry, one folder each, over `db`, `domain` and `blobstore`.

    write/        the package write, edit, restore, two-phase upload
    history/      versions, diffs, proposals, approvals, exclusions, owner controls
    materialize/  disk follows the database: swaps, drift, reconcile, lock files
    gc/           online GC, retention, fsck, storage figures
    marketplace/  catalog, install and update jobs
    ops/          readiness, status, access tokens

`context` (the injected dependencies) and `read` (package reads and listings) are shared by
all of them. docs/architecture.md has the map and the import rules between capabilities.
"""
