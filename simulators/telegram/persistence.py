"""Optional persistence: ``<data-dir>/state.json`` (the whole ``SimState``) next to ``<data-dir>/files/``.

Saved atomically (temp file + rename) a moment after each change and on shutdown, so a restarted simulator
keeps its users, chats, pending updates, files and sticker sets. The call log, faults and flood buckets are
not kept.

The update counter is also written at once, to ``<data-dir>/next_update_id``, before ``getUpdates`` hands
out an update numbered above the last value written: even a simulator killed (SIGKILL) between two saves
never numbers an update below one a bot has already received, so the bot's ``offset`` never skips it.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

from pydantic import ValidationError

from simulators.telegram.simulator import Simulator
from simulators.telegram.state import SimState

STATE_FILE = "state.json"
COUNTER_FILE = "next_update_id"
SAVE_INTERVAL_S = 1.0

_log = logging.getLogger(__name__)


def load_state(data_dir: Path) -> SimState | None:
    """The saved state, or ``None`` when there is none yet.

    An unreadable file (corrupt, or from an incompatible version) is renamed to ``state.json.corrupt`` and
    the simulator starts empty rather than refusing to start.
    The state's ``next_update_id`` is raised to the counter file's when that one is higher.
    """
    path = data_dir / STATE_FILE
    state: SimState | None = None
    if path.is_file():
        try:
            state = SimState.model_validate_json(path.read_bytes())
        except ValidationError:
            _log.warning("ignoring unreadable simulator state %s (kept as %s.corrupt)", path, STATE_FILE)
            os.replace(path, data_dir / f"{STATE_FILE}.corrupt")
    counter = load_counter(data_dir)
    if counter is not None:
        state = state or SimState()
        state.next_update_id = max(state.next_update_id, counter)
    return state


def load_counter(data_dir: Path) -> int | None:
    """The update id last written by :class:`CounterKeeper`, or ``None`` (missing or unreadable)."""
    try:
        return int((data_dir / COUNTER_FILE).read_text(encoding="ascii"))
    except (OSError, ValueError):
        return None


class CounterKeeper:
    """``Simulator.before_handout`` for a data dir: writes the next update id before a batch goes out.

    Writes only when ``next_id`` is above what it wrote last (one small atomic write per new batch).
    Raises ``OSError`` when the file cannot be written, which fails that ``getUpdates`` call rather than
    handing out an update a restart could number again.
    """

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir
        self._written = load_counter(data_dir) or 0

    def __call__(self, next_id: int) -> None:
        if next_id <= self._written:
            return
        self._data_dir.mkdir(parents=True, exist_ok=True)
        temporary = self._data_dir / f"{COUNTER_FILE}.tmp"
        temporary.write_text(str(next_id), encoding="ascii")
        os.replace(temporary, self._data_dir / COUNTER_FILE)
        self._written = next_id


def save_state(data_dir: Path, state: SimState) -> None:
    """Write ``state`` to ``<data_dir>/state.json`` atomically."""
    data_dir.mkdir(parents=True, exist_ok=True)
    temporary = data_dir / f"{STATE_FILE}.tmp"
    temporary.write_text(state.model_dump_json(), encoding="utf-8")
    os.replace(temporary, data_dir / STATE_FILE)


async def autosave(sim: Simulator, data_dir: Path, interval_s: float = SAVE_INTERVAL_S) -> None:
    """Save whenever ``sim.revision`` moved, checking every ``interval_s`` seconds; runs until cancelled."""
    saved = sim.revision
    while True:
        await asyncio.sleep(interval_s)
        if sim.revision != saved:
            saved = sim.revision
            try:
                save_state(data_dir, sim.state)
            except OSError:
                _log.exception("could not save simulator state to %s", data_dir)
