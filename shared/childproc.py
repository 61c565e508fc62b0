"""Pool children that leave with their parent.

A ``multiprocessing`` pool child started by a fork server is the fork server's child, not the service's:
when the service is killed (SIGKILL, OOM), nothing tells the child, which then lives on holding its
models (a likeness scoring child is ~115 MB; the chaos run kills services dozens of times). Each pool
initializer calls :func:`exit_with` with the service's pid; a daemon thread in the child polls it and
ends the child when it is gone. Inside a container the service is PID 1 and the kernel ends every
process with it; this matters on a laptop (``make up``, ``make chaos``).
"""

from __future__ import annotations

import os
import threading
import time

__all__ = ["PARENT_POLL_S", "exit_with"]

#: How often (s) a child checks that the service that started it is alive.
PARENT_POLL_S = 1.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True


def exit_with(pid: int, poll_s: float = PARENT_POLL_S) -> None:
    """End this process (``os._exit(0)``: no cleanup runs, a pool child has none) within ``poll_s``
    seconds of process ``pid`` ending. Returns at once; the watch runs in a daemon thread."""

    def watch() -> None:
        while _alive(pid):
            time.sleep(poll_s)
        os._exit(0)

    threading.Thread(target=watch, name=f"exit-with-{pid}", daemon=True).start()
