"""``make preflight`` against the stack ``make up`` runs: ``python -m devstack preflight``.

``make up`` writes its :class:`devstack.processes.StackConfig` (ports, stores, the simulator's dev token,
whether the AI simulator runs; no secrets of the operator's) to :data:`STACK_FILE` and removes it when it
stops. This command rebuilds the environment the services were started with (``Stack.env`` of the gateway
and of the worker, so the checks call the simulators the stack calls, or the real services when the
operator's shell holds real keys) and runs the preflight runner, ``python -m shared.preflight``, in it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

from devstack.processes import REPO, Stack, StackConfig

STACK_FILE = REPO / "var" / "up-stack.json"


def write_stack_file(config: StackConfig, path: Path = STACK_FILE) -> None:
    """Record the running stack's config for :func:`main`."""
    data = dataclasses.asdict(config)
    data["log_dir"] = str(config.log_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))


def remove_stack_file(path: Path = STACK_FILE) -> None:
    path.unlink(missing_ok=True)


def preflight_env(config: StackConfig) -> dict[str, str]:
    """The services' environment: the gateway's (the token, the Bot API URL) over the worker's (the AI keys
    and base URLs when the AI simulator runs); both carry the stores, ``BOT_USERNAME`` and the admins."""
    stack = Stack(config)
    return {**stack.env("worker"), **stack.env("telegram-gateway")}


def main(path: Path = STACK_FILE) -> int:
    """Run the preflight against the stack of ``make up``; its exit status (2: no stack recorded)."""
    if not path.is_file():
        print(f"no stack of `make up` is recorded ({path} is missing): start it with `make up` first")
        return 2
    data = json.loads(path.read_text())
    data["log_dir"] = Path(data["log_dir"])
    # What the operator sets in this shell wins over the stack's own values (``BOT_USERNAME=x make
    # preflight`` checks a change before it is made); the stack's import path stays.
    shell = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env = {**preflight_env(StackConfig(**data)), **shell}
    return subprocess.run(
        [sys.executable, "-m", "shared.preflight", "--source", "make preflight"],
        env=env,
        cwd=REPO,
        check=False,
    ).returncode
