"""The documentation's text, for tests that hold a page to what the code does: the README is an overview,
and each subject's full account is a page under `docs/` (the site `mkdocs.yml` builds)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"

_HEADING = re.compile(r"#{1,6} ")


def doc(page: str) -> str:
    """The text of `docs/<page>`, e.g. `doc("faults.md")`."""
    return (DOCS / page).read_text(encoding="utf-8")


def headings(text: str) -> list[str]:
    """The Markdown heading lines of `text`, in order; a `#` line inside a fenced code block is not one."""
    found: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and _HEADING.match(line):
            found.append(line)
    return found


def section(page: str, heading: str) -> str:
    """The text right under the heading line `heading` of `docs/<page>` (e.g. `"## Power loss"`), up to the
    next heading of any level."""
    lines = doc(page).splitlines()
    assert heading in headings(doc(page)), f"docs/{page} has no heading {heading!r}"
    body: list[str] = []
    fenced = False
    for line in lines[lines.index(heading) + 1 :]:
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and _HEADING.match(line):
            break
        body.append(line)
    return "\n".join(body)
