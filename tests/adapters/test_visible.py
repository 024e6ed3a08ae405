"""Untrusted text made visible: every control and bidirectional formatting
character, lone surrogate and undecodable byte becomes a backslash sequence,
for the command lines and the report alike."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planfold.adapters.cli.text import shown
from planfold.adapters.visible import BIDI, escapes, visible

#: Text as it arrives, and as it is shown, by what the text holds.
SHOWN = {
    "a right-to-left override": ("evil\u202etxt.sh", "evil\\u202etxt.sh"),
    "isolates and directional marks": ("\u2066a\u2069\u200e\u200f\u061c", "\\u2066a\\u2069\\u200e\\u200f\\u061c"),
    "a NUL, a terminal escape and a bell": ("\x00\x1b[31m\x07", "\\x00\\x1b[31m\\x07"),
    "line breaks and a tab": ("a\nb\rc\td", "a\\nb\\rc\\td"),
    "DEL and C1 controls": ("\x7f\x85\x9b", "\\x7f\\x85\\x9b"),
    "an undecodable byte kept as a lone surrogate": ("caf\udce9", "caf\\xe9"),
    "printable text in any script": ("plain text, é and 漢字", "plain text, é and 漢字"),
}


@pytest.mark.parametrize(("text", "seen"), SHOWN.values(), ids=SHOWN.keys())
def test_acting_characters_become_escapes_and_the_rest_stays(text: str, seen: str) -> None:
    assert visible(text) == seen
    assert shown(text) == seen  # the command lines show them the same way


def test_every_bidirectional_formatting_character_is_escaped() -> None:
    assert len(BIDI) == 12
    for char in BIDI:
        assert visible(char) == f"\\u{ord(char):04x}"


def test_the_runs_mark_which_parts_are_escapes() -> None:
    assert list(escapes("a\u202eb\x00\x01")) == [("a", False), ("\\u202e", True), ("b", False), ("\\x00\\x01", True)]
    assert list(escapes("")) == []


@given(st.text())
def test_the_runs_join_to_the_visible_text_and_nothing_acting_is_left(text: str) -> None:
    runs = list(escapes(text))
    assert "".join(run for run, _ in runs) == visible(text)
    out = visible(text)
    assert not any(ch in BIDI or ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in out)
    out.encode("utf-8")
