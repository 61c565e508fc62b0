"""Fixtures of the worker tests: the AI provider simulator served in-process (``aisim``, shared with the
simulator's own tests)."""

from __future__ import annotations

from tests.simulators.ai.conftest import aisim

__all__ = ["aisim"]
