"""Headless Chromium for the report's tests, and the README's screenshot.

The browser is Debian's ``chromium`` (``PLANFOLD_CHROMIUM`` names another
executable), driven through Playwright for Python; Playwright's own browser
downloads are never used. ``open_page`` loads a report into a fresh page
that refuses every request leaving it (anything but ``data:`` and
``about:``) and records each refused URL, console error and page error, so a
test can require that there were none.

``python -m tests.adapters.report.browser OUT.png`` (``make diagrams``) runs
the demo, reports its session, and writes a screenshot of the page's plan
status machine with one transition chosen: the image the README shows.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from planfold.adapters.cli.demo import run_demo
from planfold.adapters.cli.main import main as planfold

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Route

__all__ = [
    "ARGS",
    "ChromiumMissingError",
    "Opened",
    "chromium_path",
    "demo_report",
    "edge_id",
    "launch",
    "open_page",
    "playwright_missing",
    "screenshot",
]

#: How the browser is started: headless, and quiet on the network.
ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


class ChromiumMissingError(RuntimeError):
    """Chromium or Playwright is not installed."""


def chromium_path() -> str:
    """The Chromium executable; ``ChromiumMissingError`` when there is none."""
    named = os.environ.get("PLANFOLD_CHROMIUM") or shutil.which("chromium")
    if named is None or not os.path.isfile(named) or not os.access(named, os.X_OK):
        where = "on the PATH" if named is None else f"at {named}"
        raise ChromiumMissingError(
            f"no Chromium {where}: install Debian's chromium (apt-get install chromium) "
            "or name one with PLANFOLD_CHROMIUM"
        )
    return named


def playwright_missing() -> str | None:
    """Why Playwright for Python cannot be imported, or ``None`` when it can."""
    try:
        import playwright.sync_api  # noqa: F401, PLC0415  # a test dependency, loaded on use
    except ImportError as exc:
        return f"Playwright for Python is not installed: pip install -e '.[dev]' ({exc})"
    return None


@contextmanager
def launch() -> Iterator[Browser]:
    """A headless Chromium, closed afterwards (``ChromiumMissingError``
    when Chromium or Playwright is not installed)."""
    executable = chromium_path()
    why = playwright_missing()
    if why is not None:
        raise ChromiumMissingError(why)
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable, args=list(ARGS))
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Opened:
    """A page with a report loaded, and what went wrong while it loaded and ran."""

    page: Page
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def open_page(browser: Browser, html: str, width: int = 1200) -> Opened:
    """``html`` in a new page of ``browser`` that may send no request."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    opened = Opened(page)

    def refuse(route: Route) -> None:
        url = route.request.url
        if url.startswith(("data:", "about:")):
            route.continue_()
            return
        opened.requests.append(url)
        route.abort()

    page.route("**/*", refuse)
    page.on("console", lambda message: opened.errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: opened.errors.append(str(error)))
    page.on("requestfailed", lambda request: None)
    page.set_content(html, wait_until="load")
    return opened


def demo_report(directory: Path, runs: int = 1) -> str:
    """The report page of the demo's session, made by ``planfold report``;
    with ``runs`` above 1, the demo runs that many times into one database
    and the page is ``planfold report --all`` of it."""
    db = directory / "demo.sqlite"
    out = directory / "demo.html"
    for _ in range(runs):
        run_demo(str(db), io.StringIO())
    chosen = ["--session", "demo-1"] if runs == 1 else ["--all"]
    status = planfold(["report", "--db", str(db), *chosen, "-o", str(out)], out=io.StringIO(), err=io.StringIO())
    if status != 0:
        raise RuntimeError(f"planfold report exited {status}")
    return out.read_text(encoding="utf-8")


def edge_id(page: Page, machine: str, label: str) -> str:
    """The ``data-edge`` of the transition of ``machine`` labelled ``label``."""
    found = page.eval_on_selector_all(
        f"#machine-{machine} tr[data-edge]",
        "(rows, label) => rows.filter(r => r.cells[2].textContent === label).map(r => r.dataset.edge)",
        label,
    )
    if len(found) != 1:
        raise LookupError(f"{machine} has {len(found)} transitions labelled {label!r}")
    return str(found[0])


def screenshot(browser: Browser, html: str, path: Path) -> None:
    """The plan status machine of ``html``, its ``approve`` transition
    chosen, as a PNG at ``path``."""
    opened = open_page(browser, html, width=1100)
    page = opened.page
    page.locator(f'#machine-plan_status g.edge[data-edge="{edge_id(page, "plan_status", "approve")}"] text').click()
    box = page.locator("#machine-plan_status")
    box.screenshot(path=str(path))
    page.close()


def _main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.adapters.report.browser OUT.png", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch, launch() as browser:
        screenshot(browser, demo_report(Path(scratch)), Path(argv[0]))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
