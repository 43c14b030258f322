"""The console's pages, one module per area; each module has a `router`."""
