"""The rows of ``BENCHMARKS.md`` and how they are written.

Every benchmark module in :mod:`devstack.bench` exposes ``measure(options) -> list[Row]``. A row holds
our figure, the reference measured in the same run (never a constant from elsewhere), the ratio between
them where one makes sense, the target, and whether the target was met; a missed target carries the
reason and what would fix it (issue 12: "where a target is missed the row says why").
"""

from __future__ import annotations

import datetime as dt
import platform
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Options", "Row", "render_markdown", "write_markdown"]


@dataclass(frozen=True)
class Options:
    """What every benchmark gets: ``quick`` shrinks sizes for the test suite (the numbers are then only
    proof that the benchmark runs, never written to ``BENCHMARKS.md``); ``workdir`` is scratch space."""

    quick: bool
    workdir: Path


@dataclass(frozen=True)
class Row:
    """One measured line.

    ``group`` is the table the row belongs to (e.g. "Post-processing"); ``name`` what was measured;
    ``ours`` and ``reference`` are formatted figures with units; ``ratio`` is ours ÷ reference (``None``
    when the two are not comparable as a ratio); ``target`` is the text of the goal; ``met`` is ``None``
    when the row has no pass/fail target; ``note`` says why a target was missed and what would fix it,
    or how the figure was obtained.
    """

    group: str
    name: str
    ours: str
    reference: str
    target: str
    met: bool | None
    ratio: float | None = None
    note: str = ""


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def render_markdown(rows: Sequence[Row], *, elapsed_s: float) -> str:
    """The whole ``BENCHMARKS.md`` text: a header naming the commit, machine and run time, then one table
    per ``group`` in first-seen order."""
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Benchmarks",
        "",
        f"Written by `make bench` at {when} on commit `{_commit()}`, {platform.machine()}, "
        f"{_cpus()} CPU, in {elapsed_s:.0f} s. Every reference is measured in the same run; ratios are "
        "ours ÷ reference. Figures from another machine are not comparable with these.",
        "",
    ]
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(row.group, []).append(row)
    for group, members in groups.items():
        lines += [f"## {group}", "", "| measured | ours | reference | ratio | target | met | note |"]
        lines.append("|---|---|---|---|---|---|---|")
        for row in members:
            ratio = "" if row.ratio is None else f"{row.ratio:.2f}×"
            met = "" if row.met is None else ("yes" if row.met else "**no**")
            cells = (row.name, row.ours, row.reference, ratio, row.target, met, row.note)
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0))


#: A section of ``BENCHMARKS.md`` that ``make bench`` does not measure (``make face-eval`` does, issue 20):
#: from this heading to the end of the file, kept as it is when the file is written again.
KEPT_SECTION = "## Face check"


def write_markdown(path: Path, rows: Sequence[Row], *, elapsed_s: float) -> None:
    """Write ``render_markdown`` to ``path``, replacing it except for its :data:`KEPT_SECTION`."""
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    kept = old[old.index(KEPT_SECTION) :] if KEPT_SECTION in old else ""
    text = render_markdown(rows, elapsed_s=elapsed_s)
    path.write_text(text + ("\n" + kept if kept else ""), encoding="utf-8")
