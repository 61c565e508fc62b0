"""The reference of the ingest benchmark: a FastAPI endpoint that only reads the request body, run as its
own process the way ingest runs (uvicorn, no access log): ``python -m devstack.bench.bodyread --port N``.

``POST /upload`` answers ``{"bytes": <body length>}``; ``GET /healthz`` answers ``{"ok": true}``.
"""

from __future__ import annotations

import argparse

import uvicorn
from fastapi import FastAPI, Request

app = FastAPI(title="body read")


@app.post("/upload")
async def upload(request: Request) -> dict[str, int]:
    """Read the whole body chunk by chunk (as ingest's multipart reader pulls it) and count it."""
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
    return {"bytes": size}


@app.get("/healthz")
async def healthz() -> dict[str, bool]:
    return {"ok": True}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m devstack.bench.bodyread")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(app, host=args.host, port=args.port, log_config=None, access_log=False)


if __name__ == "__main__":
    main()
