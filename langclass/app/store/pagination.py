"""Opaque keyset cursors for any table listed newest or oldest first by ``(created_at, id)``.

A cursor is the URL-safe base64 of ``[created_at ISO-8601, id]`` of the last row of a page; the
next page starts strictly after it in the listing's order. Used by the languages and jobs listings.
Cursors are not signed: only their form is checked, so a well-formed cursor the service did not
issue is accepted and simply starts the listing after that ``(created_at, id)`` (it reveals nothing
a listing does not already show).
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime, timezone
from typing import Any

from langclass.app.errors import InvalidCursorError

__all__ = ["encode_cursor", "decode_cursor"]


def encode_cursor(row: Any) -> str:
    """An opaque cursor pointing after ``row`` (any object with ``created_at`` and a string ``id``)."""
    raw = json.dumps([row.created_at.isoformat(), row.id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """Inverse of :func:`encode_cursor`: ``(created_at, id)`` (timezone-aware).

    Raises:
        InvalidCursorError: not well-formed: not URL-safe base64 of a JSON ``[time, id]`` with a
            timezone-aware ISO-8601 time and a string id (400, ``field`` = ``"cursor"``).
    """
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created, lid = json.loads(raw)
        when = datetime.fromisoformat(created)
        if not isinstance(lid, str) or "\x00" in lid or when.tzinfo is None:
            raise ValueError("bad cursor")
        when.astimezone(timezone.utc)  # 0001-01-01T00:00:00+14:00 lies before year 1 in UTC (OverflowError)
        return when, lid
    except (ValueError, TypeError, OverflowError, binascii.Error, UnicodeDecodeError, json.JSONDecodeError):
        raise InvalidCursorError("the cursor is not well-formed: pass back the next_cursor of a previous page unchanged", field="cursor") from None
