"""Store URLs as they may be shown: without the password (banners, errors, logs)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["redact_url"]


def redact_url(url: str) -> str:
    """``postgresql://u:secret@h/db`` → ``postgresql://u:***@h/db``; other URLs unchanged."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # a malformed port or netloc: show nothing of the credentials
        return url.split("@", 1)[-1] if "@" in url else url
    if not password:
        return url
    user = parts.username or ""
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
