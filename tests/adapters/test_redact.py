"""A URL's password never shows: ``redact_url`` and ``redact_text``."""

from __future__ import annotations

import pytest

from planfold.adapters.redact import redact_text, redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:secret@127.0.0.1:3128", "http://user:***@127.0.0.1:3128"),
        (
            "postgresql://bob:p%40ss@db.example:5432/app?sslmode=require",
            "postgresql://bob:***@db.example:5432/app?sslmode=require",
        ),
        ("user:secret@proxy.example:3128", "user:***@proxy.example:3128"),
        ("socks5://:secret@127.0.0.1:1080", "socks5://:***@127.0.0.1:1080"),
        ("http://user@127.0.0.1:3128", "http://user@127.0.0.1:3128"),
        ("https://api.openai.com/v1", "https://api.openai.com/v1"),
        ("/var/lib/planfold/log.db", "/var/lib/planfold/log.db"),
    ],
)
def test_a_url_is_shown_with_its_password_replaced(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_every_url_and_libpq_password_in_a_message_is_replaced() -> None:
    message = (
        "connection to postgresql://app:s3cret@db:5432/x failed; tried host=db password='it''s' user=app"
        " and password=plain via http://p:xy@proxy:3128"
    )
    shown = redact_text(message)
    assert "s3cret" not in shown and "plain" not in shown and "xy@" not in shown and "it''s" not in shown
    assert "postgresql://app:***@db:5432/x" in shown and "http://p:***@proxy:3128" in shown
