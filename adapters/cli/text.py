"""Untrusted text as a terminal may print it: the one escaping helper of the
command lines.

Theory of operation
-------------------
Whatever a command prints for people that it did not write itself (session,
plan and goal ids, file names, a log's text, an error's detail, another
program's output) goes through ``shown`` first. The password of a URL in it
becomes ``***`` (``adapters.redact``); then two kinds of character are
escaped, each as a backslash sequence a reader can type back:

- what is not Unicode, so no output can fail to encode: a lone surrogate
  (``\\udc80``), or a file name's undecodable byte, which comes back as the
  byte it was (``\\xff``);
- control characters, so a log cannot drive the reader's terminal (move the
  cursor, set the window title, ring the bell, overwrite a line with a
  carriage return): every C0 character (``\\x00``-``\\x1f``), DEL
  (``\\x7f``) and every C1 character (``\\x80``-``\\x9f``, which some
  terminals take as the start of an escape sequence). A newline, a carriage
  return and a tab read as ``\\n``, ``\\r`` and ``\\t``, the others as
  ``\\xNN``.

JSON output needs none of this: the encoder escapes every control character
and writes ASCII.
"""

from __future__ import annotations

import re

from ..redact import redact_text

__all__ = ["shown"]

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED.get(char) or f"\\x{ord(char):02x}"


def shown(text: object) -> str:
    """``text`` as any terminal can print it, nothing in it acted on, no
    password in it shown (see the module docstring)."""
    value = redact_text(str(text))
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        try:
            value = value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            value = value.encode("utf-8", "backslashreplace").decode("utf-8")
    return _CONTROL.sub(_escape, value)
