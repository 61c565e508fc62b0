"""Optional persistence: ``<data-dir>/state.json`` (the whole ``SimState``) next to ``<data-dir>/files/``.

Saved atomically (temp file + rename) a moment after each change and on shutdown, so a restarted simulator
keeps its users, chats, pending updates, files and sticker sets. The call log, faults and flood buckets are
not kept.
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
SAVE_INTERVAL_S = 1.0

_log = logging.getLogger(__name__)


def load_state(data_dir: Path) -> SimState | None:
    """The saved state, or ``None`` when there is none yet.

    An unreadable file (corrupt, or from an incompatible version) is renamed to ``state.json.corrupt`` and
    the simulator starts empty rather than refusing to start.
    """
    path = data_dir / STATE_FILE
    if not path.is_file():
        return None
    try:
        return SimState.model_validate_json(path.read_bytes())
    except ValidationError:
        _log.warning("ignoring unreadable simulator state %s (kept as %s.corrupt)", path, STATE_FILE)
        os.replace(path, data_dir / f"{STATE_FILE}.corrupt")
        return None


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
