"""MkDocs hook: heading anchors spelled as GitHub spells them.

The pages are read in two places, on the built site and on GitHub, and the README links into them from
GitHub. Python-Markdown's own anchors fold `(--nemesis)` into one hyphen where GitHub keeps three, so a
link that works in one place would miss in the other; with this slug every anchor is the same in both.
"""

import re
from typing import Any

from mkdocs.config.defaults import MkDocsConfig


def github_slug(text: str, separator: str = "-") -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but `-` and `_` dropped, spaces made `-`."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", separator)


def on_config(config: MkDocsConfig, **_: Any) -> MkDocsConfig:
    """Every page's table of contents, and so every anchor, uses `github_slug`."""
    config.mdx_configs.setdefault("toc", {})["slugify"] = github_slug
    return config
