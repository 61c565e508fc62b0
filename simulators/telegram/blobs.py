"""File bytes by content: identical uploads share one blob, optionally mirrored to ``<data-dir>/files``."""

from __future__ import annotations

import hashlib
from pathlib import Path


class BlobStore:
    """Bytes keyed by ``blob_id`` (first 32 hex digits of their SHA-256), in memory and optionally on disk."""

    def __init__(self, directory: Path | None = None) -> None:
        self._directory = directory
        self._blobs: dict[str, bytes] = {}

    def put(self, data: bytes) -> str:
        """Store ``data`` and return its blob id; writes ``<directory>/<blob_id>`` once when persisting."""
        blob_id = hashlib.sha256(data).hexdigest()[:32]
        if blob_id not in self._blobs:
            self._blobs[blob_id] = data
            if self._directory is not None:
                self._directory.mkdir(parents=True, exist_ok=True)
                path = self._directory / blob_id
                if not path.exists():
                    path.write_bytes(data)
        return blob_id

    def get(self, blob_id: str) -> bytes | None:
        """The bytes of a blob, read from disk on first use after a restart; ``None`` if unknown."""
        data = self._blobs.get(blob_id)
        if data is None and self._directory is not None and blob_id.isalnum():
            path = self._directory / blob_id
            if path.is_file():
                data = path.read_bytes()
                self._blobs[blob_id] = data
        return data

    def clear(self) -> None:
        """Forget every blob (``POST /sim/reset``); files already on disk stay until overwritten."""
        self._blobs.clear()
