"""``python -m devstack demo [--photo PATH] [--ai-sim]`` and ``python -m devstack up [--ai-sim]``.

``demo`` runs the whole product once on a real photo with no accounts: Postgres and Redis from
``DATABASE_URL`` / ``REDIS_URL`` when they answer (else embedded), the Telegram simulator, the five
services as separate processes; then plays a guest and prints the sticker-set link. ``up`` starts the
same and keeps it running until Ctrl-C.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
import zipfile
from pathlib import Path

import httpx
import redis as redis_lib

from devstack.infra import ensure_database, ensure_infra, port_or_free, recreate_database, with_redis_db
from devstack.journey import JourneyError, download_set, play
from devstack.processes import REPO, Stack, StackConfig

STATE = REPO / "var"
DEFAULT_DB = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"


def default_photo() -> tuple[bytes, str]:
    """scikit-image's public-domain astronaut portrait (Eileen Collins), as PNG bytes."""
    from PIL import Image
    from skimage import data

    buffer = io.BytesIO()
    Image.fromarray(data.astronaut()).save(buffer, format="PNG")
    return buffer.getvalue(), "astronaut.png"


def build_stack(
    database: str, redis_db: int, *, keep_state: bool = False, ai_sim: bool = False
) -> tuple[Stack, object]:
    """Stores (reached or embedded), a migrated database and the stack's config.

    ``keep_state`` (``make up``): reuse the database and Redis data and take the usual ports when free;
    otherwise (``make demo``) start from an empty database and Redis. ``ai_sim``: run the AI provider
    simulator and let the worker call it through the real Gemini and OpenAI SDKs (else: the offline
    ``local`` provider).
    """
    infra = ensure_infra(
        postgres_url=os.environ.get("DATABASE_URL", DEFAULT_DB),
        redis_url=os.environ.get("REDIS_URL", DEFAULT_REDIS),
        state_dir=STATE,
    )
    if infra.embedded:
        print(f"embedded servers started: {', '.join(infra.embedded)}")
    redis_url = with_redis_db(infra.redis_url, redis_db)
    if keep_state:
        db_url = ensure_database(infra.postgres_url, database)
    else:
        db_url = recreate_database(infra.postgres_url, database)
        redis_lib.Redis.from_url(redis_url).flushdb()
    config = StackConfig(
        database_url=db_url, redis_url=redis_url, log_dir=STATE / "logs" / database, ai_sim=ai_sim
    )
    if os.environ.get("ADMIN_USER_IDS"):  # the operator's own bot admins (else the simulator's user 1000)
        config.admin_user_ids = os.environ["ADMIN_USER_IDS"]
    if keep_state:
        config.ingest_port = port_or_free(8000)
        config.sim_port = port_or_free(8081)
    stack = Stack(config)
    stack.migrate()
    return stack, infra


def demo(photo_path: str | None, *, ai_sim: bool = False) -> int:
    if photo_path:
        photo, filename = Path(photo_path).read_bytes(), Path(photo_path).name
    else:
        photo, filename = default_photo()
    stack, infra = build_stack("stickerbooth_demo", 1, ai_sim=ai_sim)
    started = time.monotonic()
    try:
        stack.start_all()
        print(f"stack up: kiosk API {stack.ingest_url}, Telegram simulator {stack.sim_url}")
        result = play(stack.ingest_url, stack.sim_url, photo, user_id=424242, filename=filename)
        if result.status == "rejected":
            error = (result.upload_error or {}).get("error", {})
            print(f"photo refused ({result.upload_status} {error.get('code')}): {error.get('message')}")
            return 2
        if result.link is None or result.set_name is None:
            texts = [m.get("text") for m in result.chat if (m.get("from") or {}).get("is_bot")]
            print(f"job {result.job_id} ended {result.status}; the bot said: {texts}")
            return 1
        out = REPO / "out" / "demo" / result.set_name
        out.mkdir(parents=True, exist_ok=True)
        for old in out.glob("*.png"):
            old.unlink()
        files = download_set(stack.sim_url, result.set_name)
        for index, data in enumerate(files, 1):
            (out / f"{index:02d}.png").write_bytes(data)
        print(f"sticker set link: {result.link}")
        print(f"{len(files)} sticker files: {out}")
        if result.download_url:
            with httpx.Client(timeout=30) as client:
                archive = client.get(f"{result.download_url}/stickers.zip").raise_for_status().content
            with zipfile.ZipFile(io.BytesIO(archive)) as zipped:
                names = zipped.namelist()
            print(f"download page (while running): {result.download_url} (zip: {len(names)} files)")
        print(f"simulator page (while running): {stack.sim_url}/")
        print(f"photo to link: {time.monotonic() - started:.1f}s")
        return 0
    except JourneyError as exc:
        print(f"demo failed: {exc}; logs in {stack.config.log_dir}")
        return 1
    finally:
        stack.stop_all()
        infra.stop()  # type: ignore[attr-defined]


def up(*, ai_sim: bool = False, gateways: int = 1) -> int:
    """Run the stack until Ctrl-C; ``gateways`` 2 adds the gateway's hot standby (issue 22)."""
    from devstack import preflight

    stack, infra = build_stack("stickerbooth_dev", 2, keep_state=True, ai_sim=ai_sim)
    stack.config.gateway_replicas = gateways
    try:
        stack.start_all()
        preflight.write_stack_file(stack.config)  # for `make preflight`
        print(f"kiosk:               {stack.ingest_url}/kiosk")
        admin = "" if os.environ.get("ADMIN_TOKEN") else "  (set ADMIN_TOKEN to sign in)"
        print(f"admin page:          {stack.ingest_url}/admin{admin}")
        print(f"landing page:        {stack.ingest_url}/landing")
        print(f"kiosk API:           {stack.ingest_url}  (OpenAPI: /admin/openapi.json, admin token)")
        print(f"Telegram simulator:  {stack.sim_url}/")
        print(f"bot admins:          ADMIN_USER_IDS={stack.config.admin_user_ids} (/status, /pause, /resume)")
        if stack.config.ai_sim:
            print(f"AI simulator:        {stack.ai_sim_url}/")
        if gateways > 1:
            print("gateways:            2 (one leads, one stands by: SELECT * FROM gateway_lease)")
        print(f"logs:                {stack.config.log_dir}")
        print("preflight:           make preflight (in another terminal)")
        print("Ctrl-C stops everything.")
        while all(p.poll() is None for p in stack.procs.values()):
            time.sleep(1)
        print("a process exited; stopping")
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        preflight.remove_stack_file()
        stack.stop_all()
        infra.stop()  # type: ignore[attr-defined]


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="devstack", description=__doc__.splitlines()[0] if __doc__ else None
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo_cmd = sub.add_parser("demo", help="run one guest journey on a real photo")
    demo_cmd.add_argument("--photo", help="path of a photo (default: the scikit-image astronaut)")
    up_cmd = sub.add_parser("up", help="start the stack and keep it running")
    for command in (demo_cmd, up_cmd):
        command.add_argument(
            "--ai-sim", action="store_true", help="render through the AI provider simulator (real SDKs)"
        )
    up_cmd.add_argument(
        "--gateways", type=int, choices=(1, 2), default=1, help="2: run the gateway's hot standby too"
    )
    sub.add_parser("preflight", help="run the preflight against the stack `make up` runs")
    face_eval_cmd = sub.add_parser(
        "face-eval", help="score the face check on the face set: Haar vs the product's detector (issue 20)"
    )
    from devstack.bench import faces as face_eval

    face_eval.add_arguments(face_eval_cmd)
    chaos_cmd = sub.add_parser(
        "chaos", help="journeys and leads under faults; a ledger of every guest's outcome"
    )
    chaos_cmd.add_argument("--journeys", type=int, default=100, help="guests, in bursts of 20 kiosks")
    chaos_cmd.add_argument("--leads", type=int, default=100)
    chaos_cmd.add_argument("--reps", type=int, default=3, help="injections of every fault kind")
    chaos_cmd.add_argument("--seed", type=int, default=7)
    chaos_cmd.add_argument(
        "--interval", type=float, nargs=2, default=(15.0, 30.0), help="seconds between faults (min max)"
    )
    chaos_cmd.add_argument("--lead-every", type=float, default=6.0, help="seconds between leads")
    chaos_cmd.add_argument(
        "--settle", type=float, default=960, help="seconds to wait for every job to end after the traffic"
    )
    chaos_cmd.add_argument("--faces", type=int, default=None, help="at most so many photos with a face")
    chaos_cmd.add_argument(
        "--skip",
        nargs="*",
        default=[],
        help="fault kinds not to inject (then absent from the table: not checked)",
    )
    args = parser.parse_args()
    if args.command == "chaos":
        return run_chaos(args)
    if args.command == "face-eval":
        return face_eval.run(args)
    if args.command == "preflight":
        from devstack import preflight

        return preflight.main()
    if args.command == "demo":
        return demo(args.photo, ai_sim=args.ai_sim)
    return up(ai_sim=args.ai_sim, gateways=args.gateways)


def run_chaos(args: argparse.Namespace) -> int:
    """``make chaos``: exits 1 on any guest let down, anything lost or duplicated, an unexpected exit, or a
    fault that was injected but never met."""
    from devstack import chaos

    result = chaos.run(
        journeys=args.journeys,
        leads=args.leads,
        reps=args.reps,
        seed=args.seed,
        interval=tuple(args.interval),
        lead_every_s=args.lead_every,
        skip=frozenset(args.skip),
        settle_s=args.settle,
        faces=args.faces,
    )
    print(result.table())
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
