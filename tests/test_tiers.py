"""The Makefile's test tiers (README "Tests") split the suite `make test` ran as one tier, each test once.

The suite is collected once in a child process (as ``make test`` collects it) with a small plugin that
writes every test's markers, after tests/conftest.py has marked them by cost; each tier's ``-m`` expression
from the Makefile is then evaluated on those markers by pytest's own expression parser.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression

from tests.conftest import HEAVY, STACK_FIXTURES, STORE_FIXTURES

pytestmark = pytest.mark.heavy  # collects the whole suite in a child process

REPO = Path(__file__).resolve().parent.parent
TIERS = ("FAST", "INTEGRATION", "E2E", "CHAOS")
#: What `make test` selected before it was split into tiers.
WHOLE = "not slow and not browser"
DUMP = """
import json, os

def pytest_collection_modifyitems(items):
    tests = {
        item.nodeid: [sorted({m.name for m in item.iter_markers()}), getattr(item, "fixturenames", [])]
        for item in items
    }
    with open(os.environ["TIER_DUMP"], "w") as out:
        json.dump(tests, out)
"""


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[set[str], set[str]]]:
    """Every test of the suite (browser and slow ones too) with its markers and the fixtures it uses."""
    plugin = tmp_path_factory.mktemp("plugin")
    (plugin / "tier_dump.py").write_text(DUMP, encoding="utf-8")
    out = plugin / "markers.json"
    env = {**os.environ, "PYTHONPATH": str(plugin), "TIER_DUMP": str(out)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "tier_dump", "-p", "no:cacheprovider"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    tests = json.loads(out.read_text(encoding="utf-8"))
    return {nodeid: (set(names), set(fixtures)) for nodeid, (names, fixtures) in tests.items()}


@pytest.fixture(scope="module")
def markers(collected: dict[str, tuple[set[str], set[str]]]) -> dict[str, set[str]]:
    return {nodeid: names for nodeid, (names, _) in collected.items()}


def selected(expression: str, markers: dict[str, set[str]]) -> set[str]:
    compiled = Expression.compile(expression)
    return {nodeid for nodeid, names in markers.items() if compiled.evaluate(names.__contains__)}


def tiers() -> dict[str, str]:
    """``FAST``, ``INTEGRATION``, ``E2E``, ``CHAOS``: the ``-m`` expression of each tier in the Makefile."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    found = dict(re.findall(r"^(\w+)_MARKS := (.+)$", makefile, re.MULTILINE))
    assert set(found) == set(TIERS), found
    return found


def test_the_tiers_run_every_test_of_the_whole_suite_once(markers: dict[str, set[str]]) -> None:
    by_tier = {tier: selected(expression, markers) for tier, expression in tiers().items()}
    whole = selected(WHOLE, markers)
    assert sum(len(ids) for ids in by_tier.values()) == len(whole)
    assert set().union(*by_tier.values()) == whole


def test_the_fast_tier_has_no_store_stack_or_heavy_test_and_at_least_500(
    collected: dict[str, tuple[set[str], set[str]]], markers: dict[str, set[str]]
) -> None:
    fast = selected(tiers()["FAST"], markers)
    assert len(fast) >= 500
    assert not [n for n in fast if collected[n][1] & (STORE_FIXTURES | STACK_FIXTURES)]
    assert not [n for n in fast if markers[n] & {"integration", "heavy", "e2e", "chaos"}]


def test_the_chaos_run_and_stacks_are_e2e_and_listed_heavy_tests_are_not_fast(
    markers: dict[str, set[str]],
) -> None:
    tier = {nodeid: t for t, expression in tiers().items() for nodeid in selected(expression, markers)}
    assert tier["tests/chaos/test_chaos.py::test_every_guest_is_accounted_for_under_faults"] == "CHAOS"
    # `make test-chaos` collects tests/chaos only
    chaos = {n for n in markers if "chaos" in markers[n]}
    assert chaos == {n for n in markers if n.startswith("tests/chaos/")}
    assert {tier[n] for n in markers if n.startswith("tests/e2e/")} == {"E2E"}
    for prefix in HEAVY:
        named = [n for n in markers if n == prefix or n.startswith((prefix + "[", prefix + "::"))]
        assert named, f"tests/conftest.py HEAVY names no test: {prefix}"
        assert {tier[n] for n in named} <= {"INTEGRATION", "E2E"}, prefix


def test_make_test_runs_all_four_tiers() -> None:
    """`make test` is one pytest run of the fast, integration and e2e expressions with the chaos run beside
    it: its recipe names each of them."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^test: .*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe is not None
    body = recipe.group(1)
    assert '-m "($(FAST_MARKS)) or ($(INTEGRATION_MARKS)) or ($(E2E_MARKS))"' in body
    assert "$(MAKE) --no-print-directory test-chaos" in body
    assert "wait $$chaos || status=1" in body and "exit $$status" in body
