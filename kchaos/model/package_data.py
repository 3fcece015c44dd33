"""Files kchaos ships beside its code (the image recipe, the example matrices), found the same way in a clone
and in an installed kchaos: each lives in a resource package that `importlib.resources` resolves, never in a
folder guessed relative to the source tree."""

from __future__ import annotations

import importlib.resources
from pathlib import Path


def package_dir(package: str) -> Path | None:
    """The folder of resource package `package` on disk; None when it is not installed or not a folder
    (zipped), since bash, Maven and the user need real paths."""
    try:
        root = importlib.resources.files(package)
    except ModuleNotFoundError:
        return None
    return root if isinstance(root, Path) and root.is_dir() else None
