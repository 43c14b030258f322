"""The `skillreg` command line. Every command has `--json` for machines."""
