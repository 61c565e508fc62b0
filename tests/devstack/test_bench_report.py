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


def test_a_quick_cost_run_prices_the_default_and_the_one_sheet_pack_from_their_calls(tmp_path: Path) -> None:
    from devstack.bench import cost
    from devstack.bench.report import Options
    from shared.ai_models import CATALOGUE, TokenUsage

    rows = cost.measure(Options(quick=True, workdir=tmp_path))
    assert [row.name for row in rows] == ["consistency, 3x4", "consistency, 1x12"]
    info = CATALOGUE[("gemini", "gemini-3.1-flash-image", "image")]
    assert info.price is not None
    # the image output tokens alone (the prompt and reference images are a fraction of a cent)
    price = info.price
    gemini = {size: price.cost(TokenUsage(output_image_tokens=n)) for size, n in info.image_tokens.items()}
    default, one_sheet = rows
    # passport + verify + pack QA; the anchor at 1K and 3 sheets or 1 sheet at 2K
    assert "· 4.0 image + 3.0 vision calls · 12.0/12 valid" in default.ours
    assert "· 2.0 image + 3.0 vision calls · 12.0/12 valid" in one_sheet.ours
    images = {row.name: gemini["1K"] + (3 if "3x4" in row.name else 1) * gemini["2K"] for row in rows}
    for row in rows:
        usd = float(row.ours.split(" ")[0].lstrip("$"))
        assert round(images[row.name], 3) <= usd < images[row.name] + 0.01  # vision: under a cent
    assert default.ratio == 1.0 and one_sheet.ratio is not None and one_sheet.ratio < 0.5
    # at the sourced prices (2K image $0.1008, 1K $0.0672) even the one-sheet pack misses the $0.15 target
    assert not one_sheet.met and not default.met and "missed" in default.note
