"""docs/async-stores.md: its example runs and prints what the page says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[3] / "docs" / "async-stores.md"


def _blocks(language: str) -> list[str]:
    """The page's fenced blocks of ``language`` ("" for the plain ones), in order."""
    found = re.findall(r"^```(\w*)\n(.*?)^```$", PAGE.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)
    return [body for lang, body in found if lang == language]


def test_the_async_stores_example_prints_what_the_page_says() -> None:
    (code,) = _blocks("python")
    printed = _blocks("text")[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(PAGE), "exec"), {"__name__": "docs_example"})
    assert out.getvalue() == printed
