"""`bench/RESULTS.md` and `bench/results.json` as sections, one per benchmark, each rewritten on its own.

Several benchmarks report into the same two files (`bench.run` the checker, others the workload), each
in its own run: a benchmark replaces its own section and leaves the others as they were. In RESULTS.md a
section lies between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`; in results.json it is the value of
the key NAME.

    write_markdown_section(BENCH_DIR / "RESULTS.md", "workload", text)
    write_json_section(BENCH_DIR / "results.json", "workload", report)
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

TITLE = "# Benchmarks\n\nEach section below is written by the benchmark it names; see docs/benchmark.md.\n"


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"


def write_markdown_section(path: Path, name: str, body: str) -> None:
    """Puts `body` in section `name`: in place of its previous text, else after the other sections.

    A file without any section (the single-report layout before sections) is started afresh.
    """
    begin, end = _markers(name)
    block = f"{begin}\n{body.strip()}\n{end}\n"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if "<!-- bench:" not in text:
        text = TITLE
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end) + r"\n?", re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.write_text(text, encoding="utf-8")


def write_json_section(path: Path, name: str, value: Any) -> None:
    """Sets key `name` of the JSON object in `path`, keeping the other keys (a file of the old single-report
    layout, recognised by its top-level `runs`, is started afresh)."""
    sections: dict[str, Any] = {}
    if path.exists():
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            loaded = {}
        if isinstance(loaded, dict) and "runs" not in loaded:
            sections = loaded
    sections[name] = value
    path.write_text(json.dumps(sections, indent=2) + "\n", encoding="utf-8")
