"""Untrusted text with every character that would act on its reader made
visible: the one escaping of the command lines and the report.

Theory of operation
-------------------
Text that planfold did not write (ids, file names, a log's messages and
payloads, another program's output) may hold characters that change how the
text around them is shown rather than showing themselves. ``visible(text)``
replaces each with a backslash sequence a reader can type back:

- control characters, so a log cannot drive a terminal (move the cursor, set
  the window title, ring the bell, overwrite a line with a carriage return)
  or hide itself in a page: every C0 character (``\\x00``-``\\x1f``), DEL
  (``\\x7f``) and every C1 character (``\\x80``-``\\x9f``). A newline, a
  carriage return and a tab read as ``\\n``, ``\\r`` and ``\\t``, the others
  as ``\\xNN``;
- the bidirectional formatting characters (``BIDI``: the embeddings and
  overrides U+202A-U+202E, the isolates U+2066-U+2069, the marks U+200E,
  U+200F and U+061C), so ``evil\\u202etxt.sh`` cannot read as ``evilhs.txt``
  and a message cannot read backwards; each reads as ``\\uNNNN``;
- what is not Unicode, so no output can fail to encode: a lone surrogate
  (``\\udc80``), or a file name's undecodable byte, which comes back as the
  byte it was (``\\xff``).

``escapes(text)`` splits text into its runs, each plain or escaped, for a
writer that marks the escaped ones (the report shows them in their own
style, so a typed backslash and an escaped character are told apart).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["BIDI", "escapes", "visible"]

#: The bidirectional formatting characters ``visible`` escapes.
BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")

_ACTING = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]+")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _one(char: str) -> str:
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _unicode(text: str) -> str:
    """``text`` with lone surrogates and undecodable bytes as escapes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def escapes(text: object) -> Iterator[tuple[str, bool]]:
    """The runs of ``text`` as ``visible`` writes them: ``(run, escaped)``,
    ``escaped`` true for a run of backslash sequences that stand for
    characters that act on their reader."""
    value = _unicode(str(text))
    at = 0
    for match in _ACTING.finditer(value):
        if match.start() > at:
            yield value[at : match.start()], False
        yield "".join(_one(char) for char in match.group()), True
        at = match.end()
    if at < len(value):
        yield value[at:], False


def visible(text: object) -> str:
    """``text`` with every control and bidirectional formatting character,
    lone surrogate and undecodable byte written as a backslash sequence."""
    value = _unicode(str(text))
    return _ACTING.sub(lambda m: "".join(_one(char) for char in m.group()), value)
