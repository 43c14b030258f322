"""The benchmark harness (`make bench`): scenarios measured side by side with their references.

Not shipped with the package. `python -m bench.run --help` lists the options; `bench/report.py`
turns the JSON results into `docs/benchmarks.md` and its plots.
"""
