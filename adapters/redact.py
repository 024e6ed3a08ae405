"""Secrets out of what is shown: the password of a URL becomes ``***``.

A proxy URL, a model server's base URL or a PostgreSQL URL may carry a user
and a password (``http://user:secret@proxy:3128``). Whatever planfold prints
or puts into an error message shows such a URL as ``user:***@host``:
``redact_url`` for one URL, ``redact_text`` for a message that may hold
several (a driver's message, a library's exception text).
"""

from __future__ import annotations

import re
import urllib.parse

__all__ = ["redact_text", "redact_url"]

#: A URL's ``scheme://user:password@`` prefix; group 1 keeps ``scheme://user:``.
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*:)[^\s/@]*@")
#: A libpq ``password=...`` keyword (plain or single-quoted).
_KEYWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def redact_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``; anything that
    does not parse as a URL goes through ``redact_text``. A URL without a
    scheme (``user:pw@proxy:3128``, as proxy variables are often written)
    counts as one."""
    if "://" not in url and "@" in url:
        return redact_url(f"http://{url}").removeprefix("http://")
    try:
        parts = urllib.parse.urlsplit(url)
        password = parts.password
    except ValueError:
        return redact_text(url)
    if password is None:
        return redact_text(url)
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def redact_text(text: str) -> str:
    """``text`` with the password of every URL in it (``scheme://user:pw@``)
    and of every libpq ``password=`` keyword replaced by ``***``."""
    return _KEYWORD.sub(r"\1***", _USERINFO.sub(r"\1***@", text))
