"""The cycle benchmark's generator (bench/cycles.py) plants exactly the cycles it says, by the pandas
reference's edges and the driver's search, no Spark: one cycle of each class per plant, each its own
component, and none anywhere else; its floor is the same history without the `txn-poll` rows."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd

from bench.cycles import generate
from kchaos.checkers.anomalies.cycle_search import find_cycles
from kchaos.checkers.rules.anomaly_names import BASE_CYCLE_CLASSES, CYCLE_CLASSES
from kchaos.model.events import TXN_POLL
from tests.reference.dependencies import dependency_edges


def test_the_generator_plants_exactly_the_cycles_it_says(tmp_path: Path) -> None:
    expected = generate(2_000, 2, tmp_path / "rw-2000")
    assert expected["anomalies"] == {name: 2 if name in BASE_CYCLE_CLASSES else 0 for name in CYCLE_CLASSES}
    history = pd.read_parquet(tmp_path / "rw-2000" / "history" / "history.parquet")
    assert len(history) == expected["history_rows"]
    assert history["index"].tolist() == list(range(len(history)))
    edges = dependency_edges(history)
    cycles = find_cycles(sorted(edges, key=lambda e: (e.source, e.target, e.kind)))
    assert Counter(cycle.kind for cycle in cycles) == dict.fromkeys(BASE_CYCLE_CLASSES, 2)
    # Each plant is a pair of transactions committed after the serial ones it follows, and its own cycle.
    assert all(len(cycle.transactions) == 2 for cycle in cycles)
    assert len({txn for cycle in cycles for txn in cycle.transactions}) == 2 * len(cycles)
    floor = pd.read_parquet(tmp_path / "rw-2000-floor" / "history" / "history.parquet")
    assert len(floor) == expected["floor_rows"] == len(history) - expected["polls"]
    assert TXN_POLL not in set(floor["f"])
    columns = ["process", "type", "f", "key", "value"]
    kept = history[history["f"] != TXN_POLL][columns].reset_index(drop=True)
    assert kept.equals(floor[columns])
    config = json.loads((tmp_path / "rw-2000" / "config.json").read_text(encoding="utf-8"))
    assert config["workload"] == "txn"
