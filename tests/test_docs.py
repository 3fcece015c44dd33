"""The documentation: the README is an overview of at most 400 lines, everything else is a page of the site
under `docs/`, which `mkdocs build --strict` builds without a broken link, anchor or unlisted page, and
every link from the README into `docs/` reaches a page and, when it names one, a heading on it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from docs_slugs import github_slug
from tests.docs_text import DOCS, README, ROOT, headings

#: Longest README, in lines: an overview a reader takes in at once, the rest a link away.
README_LINES = 400


def _nav_pages(nav: list[Any]) -> list[str]:
    pages: list[str] = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def _mkdocs_config() -> dict[str, Any]:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert isinstance(config, dict)
    return config


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """Strict: a broken link or anchor, a page missing from the nav or a nav entry without a page fails it."""
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "site" / "faults" / "index.html").is_file()


def test_every_page_is_in_the_nav_once() -> None:
    config = _mkdocs_config()
    assert config["docs_dir"] == "docs"
    pages = _nav_pages(config["nav"])
    assert sorted(pages) == sorted(path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md"))
    assert len(set(pages)) == len(pages), pages


def test_the_readme_is_an_overview() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_LINES, f"README.md has {len(lines)} lines; move a subject to docs/"


def test_every_readme_link_into_docs_reaches_its_page_and_heading() -> None:
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#\s]*)(?:#([^)\s]*))?\)", text)
    assert links, "the README links to no docs page"
    for path, anchor in links:
        target = ROOT / path
        assert target.is_file(), f"README links to {path}, which does not exist"
        if anchor:
            titles = [line.lstrip("#").strip().replace("`", "") for line in headings(target.read_text())]
            slugs = [github_slug(title) for title in titles]
            assert anchor in slugs, f"README links to {path}#{anchor}; its headings' anchors are {slugs}"
    unlinked = {f"docs/{page}" for page in _nav_pages(_mkdocs_config()["nav"])} - {path for path, _ in links}
    assert not unlinked, f"the README's list of pages omits {sorted(unlinked)}"


def test_the_sites_home_is_the_readme() -> None:
    """docs/index.md is the README with its links made relative to docs/, so the two never tell apart."""
    readme = README.read_text(encoding="utf-8")
    assert (DOCS / "index.md").read_text(encoding="utf-8") == readme.replace("](docs/", "](")
