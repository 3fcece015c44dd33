"""Matrix files, resuming a matrix, and the comparison across its runs, without Kafka.

The runs themselves are stood in for by a runner that writes what a finished run leaves (config and
results), or a synthetic history with latencies and losses the test states; that tests the matrix's
bookkeeping and the comparison's arithmetic. A real matrix runs in tests/cluster/test_matrix_runs.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from kchaos.model.history_schema import SCHEMA
from kchaos.model.matrix import (
    MatrixError,
    MatrixPoint,
    find_matrix_file,
    load_matrix,
    parse_axis_override,
    parse_matrix,
    shipped_matrices,
)
from kchaos.model.run_files import RunDir
from kchaos.runner.cli import main
from kchaos.runner.matrix_run import is_finished, run_matrix
from kchaos.spark_analysis.comparison import ComparedRun, compare, write_comparison
from kchaos.spark_analysis.sends import acknowledged_latencies
from tests.browser import open_page
from tests.histories import HistoryBuilder

EXAMPLE = Path(__file__).parent.parent / "kchaos" / "matrices" / "example.yaml"


def test_points_are_the_cartesian_product_in_file_order(tmp_path: Path) -> None:
    matrix = parse_matrix(
        {
            "base": {"duration": 20, "nemesis": "none"},
            "axes": {"acks": ["all", "1"], "unclean_leader_election": [False, True]},
            "exclude": [{"acks": "1", "unclean_leader_election": True}],
            "repetitions": 2,
        },
        "cmp",
    )
    points = matrix.points(tmp_path)
    assert [(p.settings["acks"], p.settings["unclean_leader_election"], p.repetition) for p in points] == [
        ("all", False, 1), ("all", False, 2), ("all", True, 1), ("all", True, 2),
        ("1", False, 1), ("1", False, 2),
    ]  # fmt: skip
    assert points[0].run_id == "acks-all_unclean-off_r1"
    assert points[0].config.run_dir == tmp_path / "cmp" / "acks-all_unclean-off_r1"
    assert points[0].config.duration == 20
    assert len({p.run_id for p in points}) == len(points)
    assert points[0].key == points[1].key == "acks=all, unclean_leader_election=off"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"axes": {"ack": ["all"]}}, "unknown setting 'ack'"),
        ({"axes": {"acks": "all"}}, "axes.acks must be a non-empty list"),
        ({"axes": {"acks": ["all"]}, "base": {"run_id": "x"}}, "chosen by the matrix"),
        ({"axes": {"acks": ["all"]}, "repeats": 2}, "unknown key(s) repeats"),
        ({"axes": {"acks": ["all"]}, "exclude": [{"seed": 1}]}, "exclude names 'seed', which is not an axis"),
        ({"axes": {"acks": ["all", "all"]}}, "lists a value twice"),
        ({"axes": {"acks": ["all"]}, "repetitions": 0}, "repetitions must be a whole number"),
    ],
)
def test_bad_matrix_files_name_the_key_and_the_fix(data: dict[str, Any], message: str) -> None:
    with pytest.raises(MatrixError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_matrix(data, "bad", "bad.yaml")


def test_every_point_is_validated_before_anything_runs(tmp_path: Path) -> None:
    matrix = parse_matrix({"axes": {"acks": ["all", "1"], "idempotence": [True]}}, "m")
    with pytest.raises(MatrixError) as caught:
        matrix.points(tmp_path)
    assert "point acks=1, idempotence=on" in str(caught.value)
    assert "idempotence requires acks=all" in str(caught.value)
    assert "exclude" in str(caught.value)


def test_a_point_whose_faults_do_not_fit_is_refused_with_the_duration_that_would(tmp_path: Path) -> None:
    matrix = parse_matrix(
        {
            "base": {"nemesis": "kill:target=leader,isolate:target=leader"},
            "axes": {"duration": [30, 60], "seed": [0, 1]},
        },
        "m",
    )
    with pytest.raises(MatrixError) as caught:
        matrix.points(tmp_path)
    message = str(caught.value)
    assert "2 point(s) are invalid" in message
    assert "point duration=30, seed=0: invalid configuration:\n  nemesis: 0 of 2 requested faults" in message
    assert "point duration=30, seed=1" in message and "use --duration 60 or more" in message
    assert "the setting with underscores" in message
    assert "point duration=60" not in message


def test_axis_override_replaces_one_axis(tmp_path: Path) -> None:
    matrix = parse_matrix({"axes": {"kafka_version": ["4.3.1"], "acks": ["all"]}}, "m")
    name, values = parse_axis_override("kafka-version=4.1.1,4.3.1")
    points = matrix.with_axes({name: values}).points(tmp_path)
    assert [p.config.kafka_version for p in points] == ["4.1.1", "4.3.1"]
    assert points[0].run_id == "kafka-4.1.1_acks-all"
    with pytest.raises(MatrixError, match="NAME=V1,V2"):
        parse_axis_override("kafka_version")
    with pytest.raises(MatrixError, match="unknown setting"):
        matrix.with_axes({"kafka": ["4.1.1"]})


def test_the_shipped_example_matrix_is_valid(tmp_path: Path) -> None:
    points = load_matrix(EXAMPLE).points(tmp_path)
    assert 2 <= len(points) <= 6, "the example must run in under 15 minutes here"


def test_every_matrix_file_in_the_folder_is_shipped_by_its_name() -> None:
    on_disk = sorted(EXAMPLE.parent.glob("*.yaml"))

    assert {name: path.resolve() for name, path in shipped_matrices().items()} == {
        path.stem: path.resolve() for path in on_disk
    }


def test_a_name_finds_the_shipped_file_from_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    assert find_matrix_file("example").resolve() == EXAMPLE.resolve()


def test_a_path_that_exists_wins_over_a_shipped_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("example").write_text("axes: {acks: [all]}\n", encoding="utf-8")

    assert find_matrix_file("example") == Path("example")
    assert find_matrix_file(str(EXAMPLE)) == EXAMPLE


def test_an_unknown_matrix_is_refused_naming_the_shipped_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    result = CliRunner().invoke(main, ["matrix", "exmaple"])

    assert result.exit_code == 2, result.output
    assert "kchaos: exmaple: no such matrix file;" in result.stderr
    assert "example, group-churn-auto, group-churn, kafka-history, many-topics, nightly-hunt" in result.stderr
    assert not (tmp_path / "runs").exists()


def _finish(point: MatrixPoint, progress: Any) -> None:
    """What a finished run leaves that the matrix looks at."""
    files = RunDir(point.config.run_dir)
    files.path.mkdir(parents=True)
    files.config.write_text(json.dumps(point.config.to_json_dict()), encoding="utf-8")
    files.results.write_text(json.dumps({"verdict": "ok"}), encoding="utf-8")


def test_a_matrix_resumes_skipping_finished_runs_and_keeps_unfinished_ones(tmp_path: Path) -> None:
    matrix = parse_matrix({"axes": {"acks": ["all", "1"], "seed": [1, 2]}}, "m")
    calls: list[str] = []

    def flaky(point: MatrixPoint, progress: Any) -> None:
        calls.append(point.run_id)
        if point.settings == {"acks": "1", "seed": 1}:
            point.config.run_dir.mkdir(parents=True)  # as a run the harness failed in leaves it
            raise RuntimeError("cluster never became ready")
        _finish(point, progress)

    first = run_matrix(matrix, tmp_path, progress=lambda _: None, runner=flaky)
    assert calls == ["acks-all_seed-1", "acks-all_seed-2", "acks-1_seed-1", "acks-1_seed-2"]
    assert list(first.failed) == ["acks-1_seed-1"]
    assert len(first.finished) == 3

    calls.clear()
    second = run_matrix(matrix, tmp_path, progress=lambda _: None, runner=_finish)
    assert calls == [], "the runner is _finish now; only the failed point may run again"
    assert [p.run_id for p in second.ran] == ["acks-1_seed-1"]
    assert len(second.skipped) == 3 and not second.failed
    assert (tmp_path / "m" / "acks-1_seed-1.unfinished-1").is_dir(), "the failed run's directory is kept"


def test_a_run_directory_of_another_configuration_is_not_taken_for_this_point(tmp_path: Path) -> None:
    matrix = parse_matrix({"base": {"duration": 30, "nemesis": "none"}, "axes": {"acks": ["all"]}}, "m")
    (point,) = matrix.points(tmp_path)
    _finish(point, None)
    edited = parse_matrix({"base": {"duration": 45, "nemesis": "none"}, "axes": {"acks": ["all"]}}, "m")
    (changed,) = edited.points(tmp_path)
    with pytest.raises(MatrixError, match="another configuration \\(duration differ\\)"):
        is_finished(changed)


def _write_run(root: Path, run_id: str, h: HistoryBuilder, results: dict[str, Any]) -> Path:
    """A run directory whose history keeps the builder's clocks (so latencies are the test's)."""
    run_dir = root / run_id
    files = RunDir(run_dir)
    files.history.mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pandas(h.pandas(), schema=SCHEMA, preserve_index=False), files.history_parquet
    )
    files.results.write_text(json.dumps(results), encoding="utf-8")
    return run_dir


def _results(verdict: str, acknowledged: int, invoked: int, lost: int) -> dict[str, Any]:
    return {
        "verdict": verdict,
        "summary": {"sends_invoked": invoked, "sends_acknowledged": acknowledged, "sends_failed": 0,
                    "sends_indeterminate": invoked - acknowledged},
        "anomalies": {
            "lost-write": {"checked": True, "count": lost, "verdict": "permitted" if lost else "ok"},
            "unseen": {"checked": True, "count": 0, "verdict": "ok"},
            "truncated-read": {"checked": True, "count": 0, "verdict": "ok"},
            "replica-divergence": {"checked": False, "count": None, "verdict": "unchecked"},
        },
    }  # fmt: skip


def test_latencies_pair_each_acknowledged_send_with_its_invoke(spark: SparkSession) -> None:
    h = HistoryBuilder(run_id="r", step=0.01)  # 10 ms per event
    h.invoke("a")
    h.invoke("b")
    h.ack("a", 0)  # 20 ms after its invoke
    h.ack("b", 1)  # 20 ms
    h.send("c", 2)  # 10 ms
    h.send("lost", outcome="info")  # no latency: never acknowledged
    h.ack("orphan", 3)  # no invoke: nothing to measure from
    latencies = sorted(round(r["latency_ms"]) for r in acknowledged_latencies(h.frame(spark)).collect())
    assert latencies == [10, 20, 20]


def test_comparison_adds_up_repetitions_per_configuration(tmp_path: Path, spark: SparkSession) -> None:
    runs = []
    for run_id, key, step, results in (
        ("all-r1", "acks=all", 0.01, _results("ok", 100, 100, 0)),
        ("all-r2", "acks=all", 0.03, _results("ok", 100, 110, 0)),
        ("one-r1", "acks=1", 0.002, _results("permitted", 200, 200, 5)),
    ):
        h = HistoryBuilder(run_id=run_id, step=step)
        for n in range(20):
            h.send(f"{run_id}-{n}", n)
        run_dir = _write_run(tmp_path, run_id, h, results)
        runs.append(ComparedRun(run_id, key, {"acks": key.removeprefix("acks=")}, run_dir))

    rows = {row["key"]: row for row in compare(spark, runs)}
    durable, fast = rows["acks=all"], rows["acks=1"]
    assert [run["run_id"] for run in durable["runs"]] == ["all-r1", "all-r2"]
    assert durable["sends_acknowledged"] == 200 and durable["lost"] == 0 and durable["loss_rate"] == 0
    assert durable["availability"] == pytest.approx(200 / 210)
    assert durable["verdict"] == "ok"
    assert fast["loss_rate"] == pytest.approx(5 / 200) and fast["verdict"] == "permitted"
    assert fast["anomalies"]["lost-write"] == {"count": 5, "verdict": "permitted"}
    assert fast["anomalies"]["replica-divergence"] == {"count": None, "verdict": "unchecked"}
    # Each send is one step from invoke to ok: 10 ms in r1, 30 ms in r2, 2 ms for acks=1.
    assert durable["latency_ms"]["p50"] == pytest.approx(10.0, abs=0.1)
    assert durable["latency_ms"]["max"] == pytest.approx(30.0, abs=0.1)
    assert fast["latency_ms"]["p99"] == pytest.approx(2.0, abs=0.1)

    page_file = write_comparison(spark, tmp_path, runs, "cmp")
    document = json.loads((tmp_path / "comparison.json").read_text(encoding="utf-8"))
    assert document["axes"] == ["acks"] and len(document["configurations"]) == 2

    page = open_page(page_file)
    assert page.blocked_requests == [] and page.errors == []
    assert page.title == "kchaos comparison cmp: permitted"
    table = page.table("configurations")
    assert table.rows[0][:2] == ["acks", "runs"]
    assert [row[0] for row in table.rows[1:]] == ["all", "1"]
    assert table.rows[2][-1] == "permitted"
    assert len(page.table("anomaly-counts").rows) == 3
    for plot in ("plot-loss-rate", "plot-availability", "plot-latency"):
        assert page.image(plot).decoded, plot


def test_the_transaction_example_compares_each_way_a_group_commits(tmp_path: Path) -> None:
    """Sync and auto commits of a plain group against offsets committed inside the transaction (eos):
    three valid runs, none asking eos for a commit mode it does not take."""
    matrix = load_matrix(EXAMPLE.parent / "example-txn.yaml")
    points = matrix.points(tmp_path)
    ways = [(p.config.workload, p.config.commit) for p in points]
    assert ways == [("group", "sync"), ("group", "auto"), ("eos", None)]
    assert all("kill-member" in p.config.nemesis for p in points)
