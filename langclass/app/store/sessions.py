"""Revocable sign-in sessions of the pages: created by ``POST /login``, deleted by ``POST /logout``.

A session is a random nonce; the table keeps only its SHA-256 (``page_sessions.id``) with the key id
and the expiry, so a session ends when it is deleted (logout), when it expires, or when its key is
removed from the settings (:mod:`langclass.app.web.security` checks the key id).
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from .orm import PageSessionRow, utcnow

__all__ = ["create_session", "session_key", "delete_session", "nonce_id"]


def nonce_id(nonce: str) -> str:
    """The stored id of a session nonce (SHA-256 hex)."""
    return hashlib.sha256(nonce.encode("utf-8")).hexdigest()


def create_session(session: Session, nonce: str, key_id: str, lifetime_s: float, now: datetime | None = None) -> datetime:
    """Store a session (and delete the expired ones); returns its expiry (UTC)."""
    now = now or utcnow()
    session.execute(delete(PageSessionRow).where(PageSessionRow.expires_at < now))
    expires = now + timedelta(seconds=lifetime_s)
    session.add(PageSessionRow(id=nonce_id(nonce), key_id=key_id, created_at=now, expires_at=expires))
    return expires


def session_key(session: Session, nonce: str, now: datetime | None = None) -> str | None:
    """The key id of a live session, or None (unknown, deleted or expired)."""
    row = session.execute(select(PageSessionRow).where(PageSessionRow.id == nonce_id(nonce))).scalar_one_or_none()
    if row is None or row.expires_at <= (now or utcnow()):
        return None
    return row.key_id


def delete_session(session: Session, nonce: str) -> bool:
    """End a session (logout); True when there was one."""
    return session.execute(delete(PageSessionRow).where(PageSessionRow.id == nonce_id(nonce))).rowcount > 0
