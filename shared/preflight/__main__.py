"""``python -m shared.preflight``: run every preflight part, print the table, store the report, exit 1 when
anything would fail a guest (:mod:`shared.preflight`).

Each part of :data:`shared.preflight.PARTS` runs as its own ``python -m`` process in this image with this
environment (``shared`` imports no service, so the runner names them instead of importing them); the
parts run at once. A part that cannot run here (its package is not in this image) or crashes is a failed
check naming the part and the last line of its stderr, never a traceback on the operator's screen.

Options: ``--source`` (who ran it: ``make preflight``, ``compose``, ``k8s``; stored with the report),
``--json`` (print the report as JSON instead of the table), ``--no-store`` (do not write the report to
Postgres), ``--part`` (run only these parts; repeatable).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime

from shared.preflight import PARTS, CheckResult, Report, fail, render
from shared.preflight.reports import store

#: Seconds a part may run (its own checks are bounded at 20 s each; these are a backstop).
PART_TIMEOUT_S = 120.0


async def run_part(module: str, *, timeout_s: float = PART_TIMEOUT_S) -> list[CheckResult]:
    """Run ``python -m module`` and read its JSON lines; a part that does not run or crashes is a failed
    check named after it."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        module,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return [fail(module, f"did not finish within {timeout_s:g} s", "see which server hangs")]
    results: list[CheckResult] = []
    for line in out.decode(errors="replace").splitlines():
        try:
            results.append(CheckResult.from_json(json.loads(line)))
        except (ValueError, KeyError, TypeError):
            continue  # a stray print of a library, not a result
    errors = [line for line in err.decode(errors="replace").strip().splitlines() if line.strip()]
    last = errors[-1].strip() if errors else f"exit status {proc.returncode}"
    if not results:
        return [
            fail(
                module,
                f"did not run: {last}",
                "run preflight where every part is installed: make preflight, "
                "docker compose run --rm preflight, or the k8s preflight Job",
            )
        ]
    if proc.returncode not in (0, 1):
        results.append(fail(module, f"stopped after {len(results)} check(s): {last}", "see the part's log"))
    return results


async def run_all(parts: tuple[str, ...] = PARTS) -> list[CheckResult]:
    outcomes = await asyncio.gather(*(run_part(part) for part in parts))
    return [result for outcome in outcomes for result in outcome]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shared.preflight", description=__doc__.splitlines()[0])
    parser.add_argument("--source", default="cli", help="who ran it (stored with the report)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--no-store", action="store_true", help="do not store the report in Postgres")
    parser.add_argument("--part", action="append", choices=PARTS, help="run only this part (repeatable)")
    args = parser.parse_args(argv)
    results = asyncio.run(run_all(tuple(args.part) if args.part else PARTS))
    report = Report(at=datetime.now(UTC), source=args.source, results=tuple(results))
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False, indent=1))
    else:
        print(render(report.results))
    if not args.no_store and not args.part:
        problem = asyncio.run(store(report))
        if problem:
            print(
                f"(the report was not stored for /preflight and the admin page: {problem})", file=sys.stderr
            )
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
