"""Each benchmark rewrites only its own section of bench/RESULTS.md and bench/results.json, so the
checker's and the workload's figures, written by different runs, stand side by side."""

from __future__ import annotations

import json
from pathlib import Path

from bench.sections import write_json_section, write_markdown_section


def test_a_section_is_replaced_in_place_and_the_others_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "RESULTS.md"
    write_markdown_section(path, "checker", "## Checker\n\nfirst")
    write_markdown_section(path, "workload", "## Workload\n\nw")
    write_markdown_section(path, "checker", "## Checker\n\nsecond")
    text = path.read_text(encoding="utf-8")
    assert "first" not in text and text.count("second") == 1 and "## Workload\n\nw" in text
    assert text.index("## Checker") < text.index("## Workload")


def test_a_file_of_the_old_single_report_layout_is_started_afresh(tmp_path: Path) -> None:
    md, js = tmp_path / "RESULTS.md", tmp_path / "results.json"
    md.write_text("# Checker benchmark\n\nold table\n", encoding="utf-8")
    js.write_text(json.dumps({"runs": [], "machine": {}}), encoding="utf-8")
    write_markdown_section(md, "checker", "new")
    write_json_section(js, "checker", {"runs": [1]})
    write_json_section(js, "workload", {"rate": 2})
    assert "old table" not in md.read_text(encoding="utf-8")
    assert json.loads(js.read_text(encoding="utf-8")) == {"checker": {"runs": [1]}, "workload": {"rate": 2}}
