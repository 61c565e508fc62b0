"""The honest chaos check: guests and leads under faults of the stack and of the outside world, judged by a
guest-outcome ledger. ``ledger`` (pure judging), ``faults`` (the kinds, their wire shapes and expected
outcomes), ``traffic`` (photos, guests, leads), ``run`` (one run)."""

from devstack.chaos.run import RunResult, run

__all__ = ["RunResult", "run"]
