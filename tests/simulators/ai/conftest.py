"""Fixtures of the AI provider simulator tests: a simulator served in-process."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.simulators.ai.helpers import RunningAiSim, serve_aisim


@pytest.fixture
async def aisim() -> AsyncIterator[RunningAiSim]:
    """A fresh simulator accepting the test key only."""
    runner, running = await serve_aisim()
    yield running
    await running.http.close()
    await runner.cleanup()
