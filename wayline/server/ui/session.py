"""Dashboard sign-in: a key exchanged for a session cookie, and a CSRF token per session.

The cookie holds only a random session id (HttpOnly, SameSite=Strict, Secure over HTTPS,
path /ui); the session holds the key's principal and is checked against the key's row on
every page, so revoking the key signs its sessions out. Every form carries the session's
CSRF token and every POST is refused without it (and with a foreign Origin).
"""

from __future__ import annotations

import dataclasses
import hmac
import secrets
import threading
import time

from starlette.requests import Request

from wayline.control.keys import Principal, authenticate
from wayline.errors import AuthError
from wayline.store.server_tables import ServerTables

__all__ = ["COOKIE", "Session", "Sessions"]

COOKIE = "wayline_session"
LIFETIME = 8 * 3600.0


@dataclasses.dataclass(frozen=True, slots=True)
class Session:
    principal: Principal
    csrf: str
    expires: float


class Sessions:
    def __init__(self, tables: ServerTables) -> None:
        self.tables = tables
        self._by_id: dict[str, Session] = {}
        self._lock = threading.Lock()

    def sign_in(self, key: str) -> tuple[str, Session]:
        """A new session for a live key (``AuthError`` otherwise)."""
        return self.sign_in_as(authenticate(self.tables, key.strip()))

    def sign_in_as(self, who: Principal) -> tuple[str, Session]:
        sid = secrets.token_urlsafe(32)
        session = Session(who, secrets.token_urlsafe(32), time.time() + LIFETIME)
        with self._lock:
            self._by_id = {k: s for k, s in self._by_id.items() if s.expires > time.time()}
            self._by_id[sid] = session
        return sid, session

    def sign_out(self, sid: str | None) -> None:
        with self._lock:
            self._by_id.pop(sid or "", None)

    def current(self, request: Request) -> Session | None:
        sid = request.cookies.get(COOKIE)
        with self._lock:
            session = self._by_id.get(sid or "")
        if session is None or session.expires < time.time():
            return None
        key_id = session.principal.key_id
        if key_id is not None:  # revoked keys sign their sessions out
            row = self.tables.find_key(key_id)
            if row is None or row.revoked_at is not None:
                self.sign_out(sid)
                return None
        return session

    @staticmethod
    def check_post(request: Request, session: Session, token: str | None) -> None:
        """Refuse a form post without this session's CSRF token or from another origin."""
        origin = request.headers.get("origin")
        if origin and origin != f"{request.url.scheme}://{request.url.netloc}":
            raise AuthError(f"form posted from another origin ({origin})", status=403)
        if not token or not hmac.compare_digest(token, session.csrf):
            raise AuthError(
                "missing or wrong CSRF token: reload the page and try again", status=403
            )
