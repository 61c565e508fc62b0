"""When a lead card (or repeat notice) that failed is tried again: spec/000 "Lead card publishing".

| consecutive failures | next attempt after |
|---|---|
| 1 | 5 s |
| 2 | 15 s |
| 3 | 60 s |
| 4 | 5 min |
| 5 or more | 15 min (and an admin alert at most every 30 minutes, :mod:`leads.outcomes`) |
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta


@dataclass(frozen=True)
class Backoff:
    """``steps``: seconds after 1, 2, … consecutive failures; ``later``: seconds after any more."""

    steps: Sequence[float] = (5.0, 15.0, 60.0, 300.0)
    later: float = 900.0

    def delay(self, failures: int) -> timedelta:
        """The wait after ``failures`` consecutive failures (0 or fewer: no wait)."""
        if failures <= 0:
            return timedelta(0)
        if failures <= len(self.steps):
            return timedelta(seconds=self.steps[failures - 1])
        return timedelta(seconds=self.later)
