"""The guest-outcome ledger of a chaos run: pure judging of what guests saw, no stack needed.

Input is :class:`Observed` (gathered by :mod:`devstack.chaos.run` from the Telegram simulator, the rows and
the run's own records); output is a :class:`Ledger` that gives every guest exactly one outcome:

- ``delivered``: one link message, one sticker set of 12 owned by the guest, the job ``delivered``, the
  link within the deadline (15 minutes from the accepted upload, spec/000); an "unavailable, photo saved"
  or maintenance text on the way is fine only if the run injected a fault that pauses the queue, and a
  "busy, press Start again" answer to Start only if it took Postgres away (:attr:`FaultKind.store_busy`).
- ``designed`` (failed as designed): exactly one failure text, the one the job's error class calls for
  (:data:`CLASS_TEXTS`), caused by a fault the run injected: every such job consumes one unit of an
  injected fault kind that can cause that class (:class:`FaultKind.causes`, ``per_fault`` jobs per
  injection), or the upload of a photo without a face was refused with 422 ``no_face``.
- ``let_down``: anything else (a generic failure text without an injected cause, a wrong text, two texts,
  silence, a late link, a good photo refused with a 4xx); and, since issue 19: the preview sticker with no
  link text, a link after a "something went wrong", a pause or maintenance text while the booth was
  auto-paused for a reason no injected fault explains (one guest's photo pausing the whole booth, e.g. a
  content refusal classed as an outage). A link past the deadline is ``delivered`` only with the words
  for it (``pack_ready_late``, "sorry for the wait").

Totals: ``lost`` (an accepted photo with no outcome at all, a lead with no card or no number),
``duplicated`` (two links or two sets for a guest, any bot message sent twice to a guest chat or the leads
group, a card posted twice, one lead number given to two requestIds or one requestId given two numbers),
unexpected process exits (every exit the run did not cause), and p50/p95 seconds from accepted upload to
the link message.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from devstack.processes import ProcessExit
from shared.texts import TEXTS

__all__ = ["ProcessExit"]  # re-exported: the ledger judges the stack's exit records

DEADLINE_S = 15 * 60  # spec/000: the failure text at 15 minutes from the upload
#: The bot answers Start "within a few seconds" (issue 8), whatever flood wait another chat is under; a
#: minute leaves room for a killed gateway or a restarting Postgres on the way.
ANSWER_BOUND_S = 60.0
CARD = re.compile(r"Lead #(\d+)\b")

DELIVERED, DESIGNED, LET_DOWN = "delivered", "designed", "let_down"
OUTCOMES = (DELIVERED, DESIGNED, LET_DOWN)
#: Texts that end a job for the guest (keys of ``shared.texts.TEXTS``; ``content_refused`` may not exist
#: yet on a branch: then no text can match it, and a content refusal can only be judged let down).
FAILURE_KEYS = ("failed", "no_face", "content_refused")
#: The failure texts each error class calls for (worker.outcomes; DESIGN.md §5).
CLASS_TEXTS: dict[str, frozenset[str]] = {
    "permanent": frozenset({"no_face", "failed"}),
    "content": frozenset({"content_refused"}),
}
GENERIC = frozenset({"failed"})
#: The link message, in the words that fit the wait (:func:`shared.link_message.link_message`).
LINK_KEYS = frozenset({"pack_ready", "pack_ready_late", "pack_ready_after_failure"})
LATE_LINK = "pack_ready_late"
#: The link's preview sticker (``job:<id>:preview``), read as ``[sticker <set name>]`` (chaos.run): once,
#: and only with a link.
PREVIEW = "sticker_preview"
PREVIEW_PREFIX = "[sticker "
#: Texts a guest may see on the way (``unavailable``/``maintenance`` only when a pause was injected).
ON_THE_WAY = frozenset({"linked", "generating", "still_working", "unavailable", "maintenance"})


def _matcher(template: str) -> re.Pattern[str]:
    parts = re.split(r"\{[a-z_]+\}", template)
    return re.compile(r"\S+".join(re.escape(p) for p in parts) + r"\Z", re.S)


_PATTERNS = [(key, _matcher(t)) for key, texts in TEXTS.items() for t in texts.values()]


def classify(text: str) -> str:
    """The ``shared.texts.TEXTS`` key a bot message is (either language), :data:`PREVIEW`, or ``other``."""
    if text.startswith(PREVIEW_PREFIX):
        return PREVIEW
    for key, pattern in _PATTERNS:
        if pattern.match(text):
            return key
    return "other"


def texts_for_class(error_class: str | None) -> frozenset[str]:
    """The failure texts a job failed with ``error_class`` may send."""
    return CLASS_TEXTS.get(error_class or "", GENERIC)


@dataclass(frozen=True)
class FaultKind:
    """What one kind of injected fault may do to guests (the expected outcome of the module table).

    ``causes``: the error classes of failed jobs it can explain (each injection explains ``per_fault``
    jobs); ``pauses``: it may pause the queue, so "unavailable" and maintenance texts are expected, for an
    auto pause whose reason (the worker's error class) is one of ``pause_reasons`` (any reason when
    empty); ``holds_reply``: aimed at the guest's own reply to Start (which may then come late or never);
    ``store_busy``: see the field.
    """

    name: str
    expected: str
    causes: frozenset[str] = frozenset()
    per_fault: int = 1
    pauses: bool = False
    holds_reply: bool = False
    pause_reasons: frozenset[str] = frozenset()
    #: Postgres is unreachable for a while: a Start the gateway could not record is answered "busy"
    #: ("press Start again"), so that text on the way is fine, once per Start the guest pressed.
    store_busy: bool = False


@dataclass(frozen=True)
class Guest:
    """One guest as the run played them; ``accepted_at`` / ``started_at``: wall-clock seconds of the
    accepted upload / of pressing Start, ``targeted`` the fault kinds aimed at (or seen hitting) them,
    ``starts`` how many times they sent ``/start`` (a guest told "short break" presses it again),
    ``silent_starts`` how many of those came after no answer at all
    (:data:`devstack.chaos.traffic.SILENT_START_AGAIN_S`)."""

    user_id: int
    photo: str
    face: bool
    upload_status: int
    upload_code: str | None = None
    job_id: str | None = None
    accepted_at: float | None = None
    targeted: tuple[str, ...] = ()
    started_at: float | None = None
    starts: int = 1
    silent_starts: int = 0


@dataclass(frozen=True)
class JobRow:
    job_id: str
    status: str
    error_class: str | None
    user_id: int | None


@dataclass(frozen=True)
class BotMessage:
    """A message the bot sent (``date`` in wall-clock seconds, as Telegram's ``date``)."""

    chat_id: int
    text: str
    date: float
    message_id: int = 0


@dataclass(frozen=True)
class StickerSet:
    name: str
    owner_user_id: int
    sticker_count: int


@dataclass(frozen=True)
class PauseSeen:
    """A pause of the booth the run saw (``GET /admin/status``): ``source`` ``auto``/``admin``/``env``,
    ``reason`` (an auto pause's: the worker's error class, e.g. ``credit``, ``outage``)."""

    source: str
    reason: str


@dataclass(frozen=True)
class LeadSubmission:
    """A lead the run posted; ``number`` is what ``POST /leads`` answered (``None``: never answered)."""

    request_id: str
    number: int | None


@dataclass
class Observed:
    """Everything the ledger judges from."""

    guests: list[Guest]
    jobs: dict[str, JobRow]
    messages: dict[int, list[BotMessage]]
    sets: list[StickerSet]
    leads: list[LeadSubmission]
    leads_chat_id: int
    injected: Counter[str]
    exits: list[ProcessExit] = field(default_factory=list)
    deadline_s: float = DEADLINE_S
    pauses: list[PauseSeen] = field(default_factory=list)


@dataclass(frozen=True)
class Verdict:
    user_id: int
    outcome: str
    reason: str
    kinds: tuple[str, ...]


@dataclass
class Ledger:
    """The judged run (see the module docstring)."""

    verdicts: list[Verdict] = field(default_factory=list)
    injected: Counter[str] = field(default_factory=Counter)
    leads: int = 0
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    unexpected_exits: list[str] = field(default_factory=list)
    link_s: list[float] = field(default_factory=list)
    #: Auto pauses no injected fault explains (a whole booth paused by one guest's photo).
    unexplained_pauses: list[str] = field(default_factory=list)

    @property
    def let_down(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.outcome == LET_DOWN]

    @property
    def ok(self) -> bool:
        """No guest let down, nothing lost or duplicated, no unexpected exit, no unexplained pause."""
        return not (
            self.let_down or self.lost or self.duplicated or self.unexpected_exits or self.unexplained_pauses
        )

    def link_pct(self, pct: int) -> float:
        """The ``pct``-th percentile (nearest rank) of seconds from accepted upload to link; 0 for none."""
        return _pct(self.link_s, pct)

    def per_kind(self) -> dict[str, Counter[str]]:
        """Guests per fault kind aimed at or credited to them (``-`` for untargeted guests)."""
        rows: dict[str, Counter[str]] = defaultdict(Counter)
        for kind in self.injected:
            rows.setdefault(kind, Counter())  # a row for every injected kind, even with no guest
        for verdict in self.verdicts:
            for kind in verdict.kinds or ("-",):
                rows[kind][verdict.outcome] += 1
        return dict(rows)

    def summary(self) -> str:
        return (
            f"chaos: journeys={len(self.verdicts)} leads={self.leads} faults={sum(self.injected.values())} "
            f"let_down={len(self.let_down)} lost={len(self.lost)} duplicated={len(self.duplicated)} "
            f"unexpected_exits={len(self.unexpected_exits)}"
        )

    def table(self) -> str:
        """Per fault kind: injected, guests delivered / failed as designed / let down; then totals."""
        rows = self.per_kind()
        width = max([len(k) for k in rows] + [10])
        lines = [f"{'fault kind'.ljust(width)}  injected  delivered  designed  let_down"]
        for kind in sorted(rows, key=lambda k: (k == "-", k)):
            c = rows[kind]
            injected = str(self.injected[kind]) if kind != "-" else "-"
            lines.append(
                f"{kind.ljust(width)}  {injected:>8}  {c[DELIVERED]:>9}  {c[DESIGNED]:>8}  {c[LET_DOWN]:>8}"
            )
        totals = Counter(v.outcome for v in self.verdicts)
        lines.append(
            f"guests: delivered={totals[DELIVERED]} designed={totals[DESIGNED]} let_down={totals[LET_DOWN]}"
        )
        lines.append(f"time to link p50/p95 (s): {_pct(self.link_s, 50):.1f}/{_pct(self.link_s, 95):.1f}")
        lines += [
            f"LET DOWN user {v.user_id} ({','.join(v.kinds) or '-'}): {v.reason}" for v in self.let_down
        ]
        lines += [f"LOST {x}" for x in self.lost] + [f"DUPLICATED {x}" for x in self.duplicated]
        lines += [f"UNEXPECTED EXIT {x}" for x in self.unexpected_exits]
        lines += [f"UNEXPLAINED PAUSE {x}" for x in self.unexplained_pauses]
        lines.append(self.summary())
        return "\n".join(lines)


def _pct(values: list[float], pct: int) -> float:
    """The ``pct``-th percentile (nearest rank); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, -(-pct * len(ordered) // 100))
    return ordered[rank - 1]


class _Causes:
    """Injected faults as a budget of failed jobs they can explain, consumed one job at a time."""

    def __init__(self, injected: Counter[str], kinds: Mapping[str, FaultKind]) -> None:
        self._kinds = kinds
        self._left = {k: n * kinds[k].per_fault for k, n in injected.items() if k in kinds}

    def take(self, error_class: str | None, prefer: tuple[str, ...]) -> str | None:
        able = [k for k, n in self._left.items() if n > 0 and (error_class or "") in self._kinds[k].causes]
        able.sort(key=lambda k: k not in prefer)
        if not able:
            return None
        self._left[able[0]] -= 1
        return able[0]


#: Texts that answer each message of the guest, so a guest who wrote ``n`` times may get them ``n`` times.
REPLIES = frozenset({"maintenance", "busy"})


def _duplicate_texts(where: str, messages: list[BotMessage], ledger: Ledger, *, prompts: int = 1) -> None:
    """Each text once; a :data:`REPLIES` text once per message the guest sent (``prompts``)."""
    for text, count in Counter(m.text for m in messages).items():
        allowed = prompts if classify(text) in REPLIES else 1
        if count > allowed:
            ledger.duplicated.append(f"{where}: message sent {count} times: {text[:60]!r}")


def judge(observed: Observed, kinds: Mapping[str, FaultKind]) -> Ledger:
    """Judge a run: one verdict per guest, the leads, the exits (see the module docstring)."""
    ledger = Ledger(injected=Counter(observed.injected), leads=len(observed.leads))
    causes = _Causes(observed.injected, kinds)
    pausing = [kinds[k] for k, n in observed.injected.items() if n and k in kinds and kinds[k].pauses]
    ledger.unexplained_pauses = sorted(
        {
            f"auto pause ({p.reason}) that no injected fault explains"
            for p in observed.pauses
            if p.source == "auto"
            and not any(not k.pause_reasons or p.reason in k.pause_reasons for k in pausing)
        }
    )
    pause_injected = bool(pausing) and not ledger.unexplained_pauses
    busy_injected = any(n and k in kinds and kinds[k].store_busy for k, n in observed.injected.items())
    sets_of: dict[int, list[StickerSet]] = defaultdict(list)
    for sticker_set in observed.sets:
        sets_of[sticker_set.owner_user_id].append(sticker_set)
    for guest in observed.guests:
        messages = observed.messages.get(guest.user_id, [])
        _duplicate_texts(f"guest {guest.user_id}", messages, ledger, prompts=guest.starts)
        links = [m for m in messages if classify(m.text) in LINK_KEYS]
        owned = sets_of.get(guest.user_id, [])
        if len(links) > 1:
            ledger.duplicated.append(f"guest {guest.user_id}: {len(links)} links")
        if len(owned) > 1:
            ledger.duplicated.append(f"guest {guest.user_id}: {len(owned)} sticker sets")
        outcome, reason, credited = _judge_guest(
            observed, guest, messages, owned, causes, pause_injected, busy_injected
        )
        held = any(kinds[k].holds_reply for k in guest.targeted if k in kinds)
        if outcome != LET_DOWN and guest.silent_starts and not held:
            outcome, reason = LET_DOWN, "the bot never answered a Start (pressed again after silence)"
        if outcome != LET_DOWN and guest.started_at is not None and messages and not held:
            answered = messages[0].date - guest.started_at
            if answered > ANSWER_BOUND_S:
                outcome, reason = LET_DOWN, f"the bot answered Start after {answered:.0f}s"
        if outcome == DELIVERED and guest.accepted_at is not None:
            ledger.link_s.append(links[0].date - guest.accepted_at)
        if reason.startswith("silence") or reason.startswith("accepted but"):
            ledger.lost.append(f"guest {guest.user_id} job {guest.job_id}: {reason}")
        tags = tuple(dict.fromkeys((*guest.targeted, *((credited,) if credited else ()))))
        ledger.verdicts.append(Verdict(guest.user_id, outcome, reason, tags))
    _judge_leads(observed, ledger)
    ledger.unexpected_exits = [
        f"{e.service} exited with {e.returncode}" for e in observed.exits if not e.caused
    ]
    return ledger


def _judge_guest(
    observed: Observed,
    guest: Guest,
    messages: list[BotMessage],
    owned: list[StickerSet],
    causes: _Causes,
    pause_injected: bool,
    busy_injected: bool,
) -> tuple[str, str, str | None]:
    """(outcome, reason, the fault kind credited with a designed failure)."""
    keys = [classify(m.text) for m in messages]
    links = [m for m, k in zip(messages, keys, strict=True) if k in LINK_KEYS]
    link_key = next((k for k in keys if k in LINK_KEYS), None)
    finals = [k for k in keys if k in FAILURE_KEYS]
    if guest.job_id is None:
        if not guest.face and guest.upload_status == 422 and guest.upload_code == "no_face":
            return DESIGNED, "no-face photo refused with 422 no_face", None
        if guest.upload_status == 0:
            return LET_DOWN, f"the guest could not get through ({guest.upload_code})", None
        return LET_DOWN, f"{guest.photo} refused with {guest.upload_status} {guest.upload_code}", None
    job = observed.jobs.get(guest.job_id)
    if job is None:
        return LET_DOWN, "accepted but not in the database", None
    paused = {"unavailable", "maintenance"} & set(keys)
    if paused and not pause_injected:
        return LET_DOWN, f"{'/'.join(sorted(paused))} text without an injected pause", None
    if "busy" in keys and not busy_injected:
        return LET_DOWN, "busy text without an injected Postgres outage", None
    if PREVIEW in keys and not links:
        return LET_DOWN, "no link text: only the preview sticker", None
    allowed = ON_THE_WAY | LINK_KEYS | {*FAILURE_KEYS, "busy"} | ({PREVIEW} if links else set())
    if unknown := [m.text for m, k in zip(messages, keys, strict=True) if k not in allowed]:
        return LET_DOWN, f"an unexpected text: {unknown[0][:60]!r}", None
    if links and finals:
        first_final = next(m for m, k in zip(messages, keys, strict=True) if k in FAILURE_KEYS)
        if first_final.date <= links[0].date:
            return LET_DOWN, f"a link after a failure text ({finals[0]})", None
        return LET_DOWN, f"a link and a failure text ({finals[0]})", None
    if links:
        late = links[0].date - (guest.accepted_at or links[0].date)
        if job.status != "delivered":
            return LET_DOWN, f"a link but the job is {job.status}", None
        if late > observed.deadline_s and link_key != LATE_LINK:
            return (
                LET_DOWN,
                f"link after {late:.0f}s (deadline {observed.deadline_s:.0f}s) without a sorry",
                None,
            )
        if not owned or owned[0].sticker_count != 12:
            return LET_DOWN, f"a link but the set has {owned[0].sticker_count if owned else 0} stickers", None
        return DELIVERED, "", None
    if len(finals) > 1:
        return LET_DOWN, f"{len(finals)} failure texts: {', '.join(finals)}", None
    if finals:
        if job.status != "failed":
            return LET_DOWN, f"a failure text but the job is {job.status}", None
        if finals[0] not in texts_for_class(job.error_class):
            return LET_DOWN, f"text {finals[0]!r} for class {job.error_class}", None
        if job.error_class == "permanent" and finals[0] == "no_face" and not guest.face:
            return DESIGNED, "no face found by the worker", None
        credited = causes.take(job.error_class, guest.targeted)
        if credited is None:
            return LET_DOWN, f"{finals[0]!r} text (class {job.error_class}) without an injected cause", None
        return DESIGNED, f"class {job.error_class}", credited
    return (
        LET_DOWN,
        f"silence: job {job.status} ({job.error_class}) when the run ended, no link, no failure text",
        None,
    )


def _judge_leads(observed: Observed, ledger: Ledger) -> None:
    requests_of: dict[int, set[str]] = defaultdict(set)
    numbers_of: dict[str, set[int]] = defaultdict(set)
    for lead in observed.leads:
        if lead.number is None:
            ledger.lost.append(f"lead {lead.request_id}: never got a number")
            continue
        requests_of[lead.number].add(lead.request_id)
        numbers_of[lead.request_id].add(lead.number)
    for number, request_ids in sorted(requests_of.items()):
        if len(request_ids) > 1:
            ledger.duplicated.append(f"lead #{number} given to {len(request_ids)} requests")
    for request_id, numbers in sorted(numbers_of.items()):
        if len(numbers) > 1:
            ledger.duplicated.append(f"lead {request_id} got numbers {sorted(numbers)}")
    group = observed.messages.get(observed.leads_chat_id, [])
    cards = Counter(int(m[1]) for msg in group if (m := CARD.match(msg.text)))
    for number in sorted(requests_of):
        if cards[number] == 0:
            ledger.lost.append(f"lead #{number}: no card")
        elif cards[number] > 1:
            ledger.duplicated.append(f"lead #{number}: {cards[number]} cards")
    _duplicate_texts("leads group", [m for m in group if not CARD.match(m.text)], ledger)
