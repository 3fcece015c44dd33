"""Opening a generated HTML page in real headless Chromium, offline, and reading back what it shows.

A report that renders in Jinja can still be broken where it matters, in the browser: a truncated base64
image that never decodes, a table the markup mangles, a stylesheet or script fetched from the network. So
tests load pages in Debian's Chromium through Playwright (its own browser downloads are not used), refuse
every request that is not the file itself or inline data, wait for every image to decode, and hand back
the page's tables and images as the browser sees them.

Chromium missing fails the test instead of skipping it: a skipped browser test looks like a passed one.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

#: Debian's Chromium (package `chromium`), which ./setup.sh installs; KCHAOS_CHROMIUM points elsewhere.
CHROMIUM = Path(os.environ.get("KCHAOS_CHROMIUM", "/usr/bin/chromium"))
FIX = "run ./setup.sh (it installs Debian's chromium and the dev extra with playwright)"

#: What the page looks like to the browser, once every image has been decoded (or failed to).
_READ_PAGE = """
async () => {
  await Promise.all([...document.images].map((img) => img.decode().catch(() => null)));
  const text = (el) => el.innerText.trim();
  return {
    title: document.title,
    headings: [...document.querySelectorAll('h1, h2, h3')].map((h) => ({id: h.id, text: text(h)})),
    tables: [...document.querySelectorAll('table')].map((table) => ({
      id: table.id,
      classes: [...table.classList],
      rows: [...table.rows].map((row) => [...row.cells].map(text)),
      row_ids: [...table.rows].map((row) => row.id),
    })),
    images: [...document.images].map((img) => ({
      id: img.id,
      alt: img.alt,
      scheme: img.src.split(':', 1)[0],
      complete: img.complete,
      natural_width: img.naturalWidth,
      natural_height: img.naturalHeight,
    })),
    ids: [...document.querySelectorAll('[id]')].map((el) => el.id),
  };
}
"""


@dataclass(frozen=True)
class Table:
    id: str
    classes: list[str]
    rows: list[list[str]]
    row_ids: list[str]


@dataclass(frozen=True)
class Image:
    id: str
    alt: str
    scheme: str
    complete: bool
    natural_width: int
    natural_height: int

    @property
    def decoded(self) -> bool:
        return self.complete and self.natural_width > 0 and self.natural_height > 0


@dataclass(frozen=True)
class Page:
    """A loaded page: tables and images by the browser's reading, and anything it tried to fetch."""

    title: str
    headings: list[dict[str, str]]
    tables: list[Table]
    images: list[Image]
    ids: list[str]
    blocked_requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    screenshot: Path | None = None

    def table(self, table_id: str) -> Table:
        found = [t for t in self.tables if t.id == table_id]
        assert found, f"no table #{table_id}; tables: {[t.id for t in self.tables]}"
        return found[0]

    def image(self, image_id: str) -> Image:
        found = [i for i in self.images if i.id == image_id]
        assert found, f"no image #{image_id}; images: {[i.id for i in self.images]}"
        return found[0]


def chromium() -> Path:
    """The Chromium binary, or a failed test that says how to get it."""
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        found = shutil.which("chromium")
        pytest.fail(f"no Chromium at {CHROMIUM}{f' (there is {found})' if found else ''}: {FIX}")
    return CHROMIUM


def open_page(path: Path, screenshot: Path | None = None, timeout_s: float = 60.0) -> Page:
    """Loads `path` in headless Chromium with the network refused and returns what the browser shows.

    `screenshot`, if given, receives a full-page PNG, for a person (or the file viewer) to look at.
    """
    executable = chromium()
    try:
        from playwright.sync_api import Route, sync_playwright
    except ImportError:
        pytest.fail(f"the Python package playwright is missing: {FIX}")
    blocked: list[str] = []
    errors: list[str] = []

    def refuse_network(route: Route) -> None:
        url = route.request.url
        if url.startswith(("file:", "data:")):
            route.continue_()
        else:
            blocked.append(url)
            route.abort()

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(executable), timeout=timeout_s * 1000)
        try:
            page = browser.new_page()
            page.route("**/*", refuse_network)
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on(
                "console", lambda message: errors.append(message.text) if message.type == "error" else None
            )
            page.goto(path.resolve().as_uri(), wait_until="load", timeout=timeout_s * 1000)
            seen: dict[str, Any] = page.evaluate(_READ_PAGE)
            if screenshot is not None:
                page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return Page(
        title=seen["title"],
        headings=seen["headings"],
        tables=[Table(**table) for table in seen["tables"]],
        images=[Image(**image) for image in seen["images"]],
        ids=seen["ids"],
        blocked_requests=blocked,
        errors=errors,
        screenshot=screenshot,
    )
