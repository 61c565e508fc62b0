"""``python -m devstack.bench [--only NAME ...] [--quick] [--out BENCHMARKS.md]``.

Runs the benchmarks in order, prints each row as it comes and writes the Markdown file (not with
``--quick`` or ``--only``, whose figures are partial). Exit status 0 when every benchmark ran, whether
or not its targets were met (a missed target is reported in its row); 1 when one raised.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

from devstack.bench.report import Options, Row, write_markdown
from shared.logging import configure_logging

#: Module names under ``devstack.bench``, in the order their tables appear.
BENCHMARKS: tuple[str, ...] = (
    "postproc",
    "hops",
    "overhead",
    "cost",
    "likeness",
    "fleet",
    "ingest",
    "gateway",
    "soak",
)

REPO = Path(__file__).resolve().parents[2]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devstack.bench", description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", choices=BENCHMARKS, default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=REPO / "BENCHMARKS.md")
    args = parser.parse_args(argv)
    names = args.only or list(BENCHMARKS)
    rows: list[Row] = []
    failed = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sb-bench-") as scratch:
        for name in names:
            module = importlib.import_module(f"devstack.bench.{name}")
            print(f"== {name}", flush=True)
            try:
                measured = module.measure(Options(quick=args.quick, workdir=Path(scratch) / name))
            except Exception:  # one benchmark's failure is reported; the others still run
                traceback.print_exc()
                failed.append(name)
                continue
            for row in measured:
                met = "" if row.met is None else (" [met]" if row.met else " [MISSED]")
                ratio = "" if row.ratio is None else f" ratio {row.ratio:.2f}x"
                print(f"  {row.name}: {row.ours} vs {row.reference}{ratio} (target {row.target}){met}")
            rows.extend(measured)
    elapsed = time.monotonic() - started
    if not args.quick and args.only is None and not failed:
        write_markdown(args.out, rows, elapsed_s=elapsed)
        print(f"wrote {args.out} ({elapsed:.0f} s)")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    # the pipeline's own info lines would bury the rows; configured here, not in main(), so a test calling
    # main() keeps its log capture (structlog caches loggers configured this way)
    configure_logging(service="bench", level="WARNING", fmt="console")
    sys.exit(main())
