"""Untrusted text as a terminal may print it: the one escaping helper of the
command lines.

Theory of operation
-------------------
Whatever a command prints for people that it did not write itself (session,
plan and goal ids, file names, a log's text, an error's detail, another
program's output) goes through ``shown`` first. The password of a URL in it
becomes ``***`` (``adapters.redact``); then three kinds of character are
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
  ``\\xNN``;
- the bidirectional formatting characters (overrides, embeddings, isolates
  and marks), so a name cannot read in another order than it is written;
  each reads as ``\\uNNNN``.

The escaping is ``adapters.visible``'s, which the report shares.

JSON output needs none of this: the encoder escapes every control character
and writes ASCII.
"""

from __future__ import annotations

from ..redact import redact_text
from ..visible import visible

__all__ = ["shown"]


def shown(text: object) -> str:
    """``text`` as any terminal can print it, nothing in it acted on, no
    password in it shown (see the module docstring)."""
    return visible(redact_text(str(text)))
