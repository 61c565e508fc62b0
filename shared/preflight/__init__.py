"""Preflight: before the doors open, one command says whether tonight will work (issue 18 item 6).

Three parts, each a module run as ``python -m <part>`` in the same image (``PARTS``), each printing its
results as JSON lines (one :class:`CheckResult` per line) and exiting 1 when one of them fails:

- ``shared.preflight.stores``: settings every service shares, the longest sticker set name, Postgres at
  the head migration, Redis, free disk, the clock against Postgres, the last backup;
- ``telegram_gateway.preflight``: the bot token, ``getMe`` against ``BOT_USERNAME``, webhook or polling,
  the staff groups, every admin's private chat, the clock against Telegram's ``Date`` header;
- ``worker.preflight``: each configured AI key and model (exists at the provider, in the catalogue,
  priced, not shut down or about to be).

The Telegram checks live in the gateway because only it holds the token and python-telegram-bot, the AI
checks in the worker because only it holds the AI keys and SDKs (``pyproject.toml`` import rules); this
package holds what every part shares and the runner (``python -m shared.preflight``,
:mod:`shared.preflight.__main__`), which runs the parts as subprocesses (it may import no service),
prints one line per check with what to do when it fails, stores the report in Postgres (a ``settings``
row, :data:`REPORT_KEY`) for ``/preflight`` and the admin page, and exits 1 when anything would fail a
guest. A status is ``ok``, ``warn`` (works tonight, needs attention soon), ``skip`` (not configured here,
nothing to check) or ``fail``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = [
    "PARTS",
    "REPORT_KEY",
    "CheckResult",
    "PreflightSettings",
    "Report",
    "Status",
    "emit",
    "exit_code",
    "render",
]

Status = Literal["ok", "warn", "skip", "fail"]
STATUSES: tuple[Status, ...] = ("ok", "warn", "skip", "fail")

#: The modules the runner runs, in order (each ``python -m <module>``).
PARTS: tuple[str, ...] = ("shared.preflight.stores", "telegram_gateway.preflight", "worker.preflight")

#: The ``settings`` row holding the last full report (:meth:`Report.to_json`).
REPORT_KEY = "preflight_report"


_MARK = {"ok": "ok  ", "warn": "WARN", "skip": "skip", "fail": "FAIL"}


class PreflightSettings(BaseSettings):
    """What every part reads: ``PREFLIGHT_MAX_CLOCK_SKEW_SEC`` (10 s: the largest difference between this
    machine's clock and Postgres's or Telegram's that passes)."""

    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    preflight_max_clock_skew_sec: float = Field(10.0, gt=0, validation_alias="PREFLIGHT_MAX_CLOCK_SKEW_SEC")


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check: ``name`` (``area.what``, e.g. ``telegram.bot_username``), ``status``, ``detail`` (what
    was found, never a secret) and ``fix`` (what the operator does when it is not ``ok``)."""

    name: str
    status: Status
    detail: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckResult:
        status = str(data.get("status"))
        if status not in STATUSES:
            raise ValueError(f"unknown preflight status {status!r}")
        return cls(str(data["name"]), status, str(data.get("detail", "")), str(data.get("fix", "")))


def ok(name: str, detail: str) -> CheckResult:
    return CheckResult(name, "ok", detail)


def warn(name: str, detail: str, fix: str) -> CheckResult:
    return CheckResult(name, "warn", detail, fix)


def skip(name: str, detail: str, fix: str = "") -> CheckResult:
    return CheckResult(name, "skip", detail, fix)


def fail(name: str, detail: str, fix: str) -> CheckResult:
    return CheckResult(name, "fail", detail, fix)


def exit_code(results: Iterable[CheckResult]) -> int:
    """1 when any check failed (something would fail a guest), else 0."""
    return 1 if any(r.status == "fail" for r in results) else 0


def emit(results: Sequence[CheckResult]) -> int:
    """A part's output: one JSON object per line on stdout; returns the part's exit code."""
    for result in results:
        sys.stdout.write(json.dumps(result.to_json(), ensure_ascii=False) + "\n")
    sys.stdout.flush()
    return exit_code(results)


def render(results: Sequence[CheckResult]) -> str:
    """The operator's table: one line per check (``FAIL name: detail``) and, under a check that is not
    ``ok``, its fix; then a verdict line."""
    width = max((len(r.name) for r in results), default=0)
    lines = []
    for r in results:
        lines.append(f"{_MARK[r.status]}  {r.name.ljust(width)}  {r.detail}")
        if r.fix and r.status != "ok":
            lines.append(f"{'':4}  {'':{width}}  → {r.fix}")
    failed = [r.name for r in results if r.status == "fail"]
    warned = sum(r.status == "warn" for r in results)
    if failed:
        lines.append(f"NOT READY: {len(failed)} check(s) failed ({', '.join(failed)}).")
    else:
        lines.append(
            f"READY: {len(results)} checks, none failed" + (f", {warned} warning(s)." if warned else ".")
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class Report:
    """A full preflight run: when, from where (``make preflight``, ``compose``, ``k8s``…), the results."""

    at: datetime
    source: str
    results: tuple[CheckResult, ...]

    @property
    def ok(self) -> bool:
        return exit_code(self.results) == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "at": self.at.isoformat(),
            "source": self.source,
            "ok": self.ok,
            "results": [r.to_json() for r in self.results],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Report:
        at = datetime.fromisoformat(str(data["at"]))
        results = tuple(CheckResult.from_json(r) for r in data.get("results", []))
        return cls(
            at=at if at.tzinfo else at.replace(tzinfo=UTC),
            source=str(data.get("source", "")),
            results=results,
        )

    def age_s(self, now: datetime | None = None) -> float:
        return ((now or datetime.now(UTC)) - self.at).total_seconds()
