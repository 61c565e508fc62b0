"""``make bench``: every benchmark of issue 12, written to ``BENCHMARKS.md``.

Each module listed in :data:`devstack.bench.__main__.BENCHMARKS` measures one group of rows (see
:mod:`devstack.bench.report`). ``python -m devstack.bench --only NAME`` runs one; ``--quick`` runs small
sizes (what the test suite does) and prints instead of writing the file.
"""
