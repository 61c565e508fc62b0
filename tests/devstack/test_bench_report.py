"""``make bench``'s report: rows become one table per group, and a missed target is visible."""

from __future__ import annotations

from pathlib import Path

from devstack.bench.__main__ import main
from devstack.bench.report import Row, render_markdown


def test_a_missed_target_is_marked_and_carries_its_reason() -> None:
    rows = [
        Row("Post-processing", "1K", "0.5 s", "0.2 s", "≤ 1.5× floor", False, 2.5, "cut is slow"),
        Row("Post-processing", "2K", "0.3 s", "0.2 s", "≤ 1.5× floor", True, 1.5),
        Row("Cost", "consistency", "$0.24", "", "", None),
    ]
    text = render_markdown(rows, elapsed_s=3.0)
    assert "## Post-processing" in text and "## Cost" in text
    assert "| 1K | 0.5 s | 0.2 s | 2.50× | ≤ 1.5× floor | **no** | cut is slow |" in text
    assert "| 2K | 0.3 s | 0.2 s | 1.50× | ≤ 1.5× floor | yes |  |" in text


def test_a_quick_run_measures_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "BENCHMARKS.md"
    assert main(["--quick", "--only", "postproc", "--out", str(out)]) == 0
    assert not out.exists()
