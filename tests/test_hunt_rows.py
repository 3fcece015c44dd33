"""A hunt's rows say what each run acknowledged, lost and found beside its verdict, as a matrix's rows do,
not the verdict alone. The runs are stubbed as in tests/test_hunt.py."""

from __future__ import annotations

from typing import Any

import pytest

from kchaos.model.config import RunConfig
from kchaos.runner.outcome import RunOutcome
from tests.test_hunt import OPTIONS, Runs, hunt
from tests.test_hunt import runs as runs  # the fixture

RESULTS: dict[str, Any] = {
    "verdict": "violation",
    "summary": {"sends_acknowledged": 5000, "txn_records_acknowledged": 600},
    "lost": {"count": 7, "parts": {"lost-write": 7}, "unchecked": []},
    "anomalies": {
        "lost-write": {"checked": True, "count": 7, "verdict": "violation"},
        "duplicate": {"checked": True, "count": 0, "verdict": "ok"},
        "lost-committed": {"checked": True, "count": 2, "verdict": "violation"},
    },
}


def test_each_row_has_the_acknowledged_and_lost_counts_and_the_anomalies_found(
    tmp_path: Any, runs: Runs, monkeypatch: pytest.MonkeyPatch
) -> None:
    def execute(config: RunConfig, **kwargs: Any) -> RunOutcome:
        runs.configs.append(config)
        return RunOutcome(config.run_dir, RESULTS, config.run_dir / "report.html")

    monkeypatch.setattr("kchaos.runner.run.execute", execute)
    result = hunt(tmp_path, "--runs", "2", "--seed", "3", *OPTIONS)
    rows = [line for line in result.output.splitlines() if "violation (" in line]
    assert len(rows) == 4, result.output  # each printed as it ends, and again in the summary
    assert all(
        row.endswith("violation (5600 acknowledged, 7 lost; lost-write, lost-committed)") for row in rows
    )
