"""Download links: ``/d/<token>`` opens a guest's 12 stickers as a page, PNG and WebP files and a zip
(issue 23 item 3), for guests who want the files and not (or not only) a Telegram sticker set.

A token is the job's id and a MAC of it, so it needs no table and no row to erase or expire: the page
lives exactly as long as the job's stickers. Erasure deletes the job (the token then names nothing) and
retention deletes its stickers ``STICKER_RETENTION_DAYS`` after delivery (the page then answers that it
has expired).

``token = base64url(job_id (16 bytes) ‖ HMAC-SHA256(key, "download:" ‖ job_id)[:16])``, 43 characters.
The 128-bit tag makes a token unguessable without the key (NIST SP 800-107 r1 §5.3.4 allows truncating
an HMAC tag to any length of at least 32 bits; 128 bits leaves an attacker no realistic chance at any
request rate). The key is 32 random bytes (:func:`secrets.token_bytes`) created once per deployment in the
``settings`` table under :data:`KEY_SETTING` by whichever service needs it first; every replica reads
the same key, so any ingest replica can answer any link. Deleting that row revokes every link issued.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from uuid import UUID

from shared.repositories import Repositories

__all__ = ["KEY_SETTING", "download_key", "download_token", "download_url", "job_of_token"]

#: The ``settings`` row holding the MAC key (hex, 64 characters).
KEY_SETTING = "download_link_key"
_TAG_BYTES = 16
_TOKEN_CHARS = 43  # base64url of 32 bytes without its "=" padding


async def download_key(repos: Repositories) -> bytes:
    """The deployment's MAC key for download tokens (32 bytes); created on first use.

    One read when the key exists (every page and file request after the first); only the first call
    writes. Concurrent first calls agree: the insert does nothing when another replica's key is already
    there, and the stored key is what every caller returns.
    """
    stored = await repos.settings.get(KEY_SETTING)
    if stored is None:
        await repos.settings.put_if_absent(KEY_SETTING, secrets.token_bytes(32).hex())
        stored = await repos.settings.get(KEY_SETTING)
    return bytes.fromhex(stored)


def _tag(key: bytes, job_id: UUID) -> bytes:
    return hmac.new(key, b"download:" + job_id.bytes, hashlib.sha256).digest()[:_TAG_BYTES]


def download_token(key: bytes, job_id: UUID) -> str:
    """The token of ``job_id``'s download page (43 characters of ``[A-Za-z0-9_-]``)."""
    return base64.urlsafe_b64encode(job_id.bytes + _tag(key, job_id)).decode().rstrip("=")


async def download_url(repos: Repositories, base_url: str | None, job_id: UUID) -> str | None:
    """``<base_url>/d/<token>`` for ``job_id`` (``PUBLIC_BASE_URL``,
    :class:`shared.settings.DownloadSettings`), or ``None`` when ``base_url`` is unset."""
    if not base_url:
        return None
    return f"{base_url}/d/{download_token(await download_key(repos), job_id)}"


def job_of_token(key: bytes, token: str) -> UUID | None:
    """The job ``token`` was issued for, or ``None`` when it is malformed or its tag is not ours
    (compared in constant time, :func:`hmac.compare_digest`)."""
    if len(token) != _TOKEN_CHARS:
        return None
    try:
        raw = base64.urlsafe_b64decode(token + "=")
    except (binascii.Error, ValueError):
        return None
    job_id = UUID(bytes=raw[:16])
    if not hmac.compare_digest(raw[16:], _tag(key, job_id)):
        return None
    return job_id
