"""`kchaos matrix` end to end on real Kafka: two configurations run, compared, and resumed.

Short runs without faults keep this to about two minutes; what matters here is the matrix's plumbing on
real runs (run directories, results, the Spark comparison, resuming), not what faults do, which
tests/chaos/ covers. Both runs carry a platform team's own producer settings (`producer_config`, as
`--producer-config` gives them): a linger the latencies show the clients took, and one request in flight,
which the oracle reads (without idempotence, acks=1's, a reordering is then a violation); and an older
librdkafka than kchaos's own (`librdkafka_version`, as `--librdkafka-version` gives it), whose processes
are the ones that write. They write two topics (`topics`, as `--topics 2` gives it), a producer each,
lz4-compressed (`compression.type`), with no reader during the run (the final read alone: readers of
several topics are tests/chaos/test_transactions.py's): both topics reach the log compressed, are read back
whole, and get a row of their own on the report.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kchaos.runner.cli import main
from tests.cluster.conftest import assert_no_leftovers, dumped_codecs

pytestmark = pytest.mark.cluster

MATRIX = """\
name: smoke
base:
  duration: 12
  rate: 100
  nemesis: none
  consumers: 0
  topics: 2
  producer_config: {linger.ms: 400, max.in.flight.requests.per.connection: 1, compression.type: lz4}
  librdkafka_version: "2.6.1"
axes:
  acks: ["all", "1"]
"""


def test_matrix_runs_every_configuration_compares_them_and_resumes(tmp_path: Path) -> None:
    matrix_file = tmp_path / "smoke.yaml"
    matrix_file.write_text(MATRIX, encoding="utf-8")
    runs_dir = tmp_path / "runs"
    command = ["matrix", str(matrix_file), "--runs-dir", str(runs_dir)]

    first = CliRunner().invoke(main, command)
    assert first.exit_code == 0, first.output
    assert_no_leftovers()
    directory = runs_dir / "smoke"
    document = json.loads((directory / "comparison.json").read_text(encoding="utf-8"))
    rows = {row["key"]: row for row in document["configurations"]}
    assert set(rows) == {"acks=all", "acks=1"}
    for row in rows.values():
        assert row["sends_acknowledged"] > 500
        assert row["loss_rate"] == 0 and row["verdict"] == "ok"
        # Each batch waited out the linger (it fills far slower at 100 sends a second), so a send waited
        # up to the whole linger, half of it at the median (5 ms linger: a few ms): the clients ran with
        # the setting, not just config.json.
        assert row["latency_ms"]["p50"] >= 100 and row["latency_ms"]["p95"] >= 300, row["latency_ms"]
        (run,) = row["runs"]
        report = (directory / run["dir"] / "report.html").read_text(encoding="utf-8")
        assert 'id="run-delivery-timeout"' in report and "delivery timeout 30 s" in report
        config = json.loads((directory / run["dir"] / "config.json").read_text(encoding="utf-8"))
        assert (config["librdkafka_version"], config["client_image"]) == (
            "2.6.1",
            "kchaos/rdkafka-client:2.6.1",
        )
        harness_log = (directory / run["dir"] / "logs" / "harness.log").read_text(encoding="utf-8")
        assert "producer-0: client 2.6.1 started" in harness_log
        results = json.loads((directory / run["dir"] / "results.json").read_text(encoding="utf-8"))
        assert results["context"]["max_in_flight"] == 1
        order = results["anomalies"]["nonmonotonic-send"]
        expected = "idempotent-order" if row["key"] == "acks=all" else "one-in-flight-order"
        assert (order["checked"], order["rule_id"], order["count"]) == (True, expected, 0), order
        tally = results["topics"]["tally"]
        assert set(tally) == {"kchaos", "kchaos-1"}, tally
        for counts in tally.values():
            assert counts["acknowledged"] > 200 and counts["read_poll"] == 0, tally
            assert counts["read_final"] == counts["acknowledged"] and counts["unread"] == 0, tally
        assert 'id="run-topics"' in report
        codecs = dumped_codecs(directory / run["dir"])
        assert all("lz4" in codecs.get(topic, set()) for topic in tally), codecs
    assert (directory / "comparison.html").exists()

    again = CliRunner().invoke(main, command)
    assert again.exit_code == 0, again.output
    assert again.output.count("finished before, skipped") == 2
