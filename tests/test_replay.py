"""`kchaos run --replay RUN_DIR`: the original's faults on the original's nodes, without a cluster.

The original's history gives each fault key its nodes; a fault given them keeps them while they are valid
for its target and, when the cluster's state makes them invalid (another leader, a node down or held), hits
what it would have chosen and records why. The replay's configuration is the original's, its topics are
created with the original's assignment, options that would change the plan are refused, and so is a
directory that cannot be replayed, before anything starts. The clusters here are stand-ins with just what
target resolution asks of them.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pandas as pd
import pytest
from click.testing import CliRunner, Result
from confluent_kafka.cimpl import NewTopic

import kchaos.harness.engine
import kchaos.runner.run
from kchaos.checkers.faults import fault_application
from kchaos.harness import readiness
from kchaos.harness.metadata import MetadataView, PartitionState
from kchaos.model.config import RunConfig, load_config
from kchaos.model.events import INFO, NEMESIS_PROCESS, SKIPPED, START, STOP
from kchaos.model.fault_pins import FaultPin, PinsUnreadable, pinned_faults, read_pins
from kchaos.model.fault_plan import PlannedFault
from kchaos.model.fault_record import FaultRecord
from kchaos.model.fault_spec import parse_spec
from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from kchaos.model.topic_assignment import misfit, read_assignment, write_assignment
from kchaos.nemesis.carriers import fault_classes
from kchaos.nemesis.fault import Fault
from kchaos.nemesis.reassign import Reassign
from kchaos.nemesis.schedule import Nemesis
from kchaos.runner.cli import main
from kchaos.runner.hunt_command import program_name
from kchaos.runner.outcome import RunOutcome
from kchaos.runner.replay import Replay

# --- the original's nodes, read back -----------------------------------------------------------------


def start_row(index: int, key: str, nodes: list[Any], value: str = START) -> dict[str, Any]:
    detail = json.dumps({"kind": "crash", "nodes": nodes, "spec": "kill"})
    return {"index": index, "process": NEMESIS_PROCESS, "key": key, "value": value, "detail": detail}


def test_each_fault_key_is_pinned_to_the_nodes_of_its_first_start_row() -> None:
    rows = [
        start_row(5, "kill#1", [2]),
        start_row(9, "kill#1", [2], value=STOP),
        start_row(12, "clock#2", [2, 3]),
        start_row(14, "clock#2", [1], value=START),  # a second start of a key in force changes nothing
        start_row(15, "pause#3", [], value=SKIPPED),  # skipped: hit nothing, pinned to nothing
        {**start_row(16, "kill#4", [1]), "process": "producer-0"},
        start_row(3, "isolate#0", [1, 3]),  # rows are taken in index order
    ]
    pins = pinned_faults(rows)
    assert pins == {"isolate#0": FaultPin((1, 3)), "kill#1": FaultPin((2,)), "clock#2": FaultPin((2, 3))}
    assert list(pins) == ["isolate#0", "kill#1", "clock#2"]
    with pytest.raises(PinsUnreadable, match=r"the start row of kill#1 names \['a'\], not node ids"):
        pinned_faults([start_row(1, "kill#1", ["a"])])


def write_history(run_dir: Path, records: dict[str, FaultRecord]) -> None:
    history = HistoryWriter(RunDir(run_dir), run_dir.name)
    for key, record in records.items():
        name = key.split("#")[0]
        history.record(NEMESIS_PROCESS, INFO, name, key=key, value=START, detail=record.to_detail())
        history.record(NEMESIS_PROCESS, INFO, name, key=key, value=STOP, detail=record.to_detail())
    history.finish()


def test_a_runs_history_gives_the_nodes_its_records_name(tmp_path: Path) -> None:
    records = {
        "reassign#1": FaultRecord(kind="reassign", nodes=(3, 3), spec="reassign"),
        "clock#2": FaultRecord(kind="clock", nodes=(2, 3), spec="clock:target=followers"),
    }
    write_history(tmp_path, records)
    assert read_pins(tmp_path) == {"reassign#1": FaultPin((3, 3)), "clock#2": FaultPin((2, 3))}


def test_the_reason_a_fault_was_re_chosen_is_read_back_with_what_every_fault_records() -> None:
    record = FaultRecord(kind="clock", nodes=(1, 3), re_chosen="the original hit [2, 3]; ...")
    assert FaultRecord.read(json.loads(json.dumps(record.to_detail()))).re_chosen == record.re_chosen
    assert "re_chosen" not in FaultRecord(kind="clock").to_detail()


# --- a pinned fault, on stand-in clusters ------------------------------------------------------------


class Metadata:
    """A cluster's answers about partition 0 of the run's topic: who leads, and its replicas."""

    def __init__(self, leader: int, replicas: tuple[int, ...]) -> None:
        self.leader = leader
        self.replicas = replicas

    def leader_of(self, topic: str, partition: int, among: object = None) -> int:
        return self.leader

    def views(self, topic: str, nodes: object = None) -> list[MetadataView]:
        state = PartitionState(0, self.leader, self.replicas, self.replicas)
        return [MetadataView(1, frozenset((1, 2, 3, 4)), {0: state})]


def cluster(
    leader: int = 1, replicas: tuple[int, ...] = (1, 2, 3), down: tuple[int, ...] = (), brokers: int = 3
) -> Any:
    """Brokers 1 to `brokers`, `down` of them not running; partition 0 on `replicas`, led by `leader`."""
    ids = range(1, brokers + 1)
    nodes = {n: SimpleNamespace(state="killed" if n in down else "running") for n in ids}
    return SimpleNamespace(nodes=nodes, servers=nodes, metadata=Metadata(leader, replicas), controllers={})


class StandIn(Fault):
    """A fault that hits the nodes its target names and does nothing to them."""

    def start(self) -> FaultRecord:
        self.nodes = self.resolve(self.spec.option("target"))
        return self.record()

    def stop(self) -> FaultRecord:
        return self.record()

    def effect_reached(self) -> bool:
        return True

    def describe(self) -> str:
        return f"stand-in {self.spec}"

    def healed(self) -> bool:
        return True


def started(
    spec: str,
    on: Any,
    pinned: tuple[int, ...] | None,
    seed: int = 0,
    held: dict[int | str, str] | None = None,
    kind: type[Fault] = StandIn,
) -> FaultRecord:
    fault = kind(on, "kchaos", 0, "f#1", parse_spec(spec), random.Random(seed))
    fault.pinned = pinned
    fault.held_by = held or {}
    return fault.start()


def test_a_pinned_drawn_target_keeps_the_originals_node_where_a_new_draw_would_move() -> None:
    unpinned = {started("kill:target=random", cluster(), None, seed).nodes for seed in range(20)}
    assert len(unpinned) == 3  # seed after seed the draw moves ...
    for seed in range(20):  # ... and the pin holds it
        record = started("kill:target=random", cluster(), (3,), seed)
        assert record.nodes == (3,) and record.re_chosen is None


def test_a_pinned_role_target_keeps_its_nodes_while_they_still_play_the_role() -> None:
    record = started("clock:target=followers", cluster(leader=1), (2, 3))
    assert record.nodes == (2, 3) and record.re_chosen is None


def test_a_pinned_role_target_whose_node_no_longer_plays_it_is_re_chosen_and_the_record_says_why() -> None:
    record = started("clock:target=followers", cluster(leader=2), (2, 3))
    assert record.nodes == (1, 3)
    assert record.re_chosen == "the original hit [2, 3]; now the nodes target 'followers' may name are [1, 3]"
    leader = started("kill:target=leader", cluster(leader=2), (1,))
    assert leader.nodes == (2,)
    assert leader.re_chosen == "the original hit [1]; now the nodes target 'leader' may name is [2]"


@pytest.mark.parametrize(
    ("on", "held", "why"),
    [
        (cluster(down=(3,)), {}, "node 3 is not running now"),
        (cluster(), {3: "kill#1"}, "node 3 is held by kill#1"),
        (cluster(), {}, "node 7 is not in the cluster now"),
    ],
)
def test_a_pinned_node_down_held_or_gone_is_re_chosen_and_the_record_says_why(
    on: Any, held: dict[int | str, str], why: str
) -> None:
    pinned = (7,) if "node 7" in why else (3,)
    record = started("kill:target=random", on, pinned, held=held)
    assert record.nodes != pinned and record.re_chosen == f"the original hit {list(pinned)}; {why}"


def test_choosing_among_the_nodes_a_target_names_keeps_the_originals_choice_while_it_may_name_it() -> None:
    fault = StandIn(
        cluster(leader=1), "kchaos", 0, "f#1", parse_spec("kill:target=followers"), random.Random(0)
    )
    fault.pinned = (3,)
    assert {fault.choose("followers") for _ in range(10)} == {3}
    fault.cluster = cluster(leader=3)
    assert fault.choose("followers") in (1, 2)
    assert fault.re_chosen == ["the original hit [3]; now the nodes target 'followers' may name are [1, 2]"]


def reassigned(on: Any, pinned: tuple[int, ...] | None, seed: int, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(Reassign, "_submit", lambda self, target, interrupt=True: None)
    return started("reassign", on, pinned, seed, kind=Reassign)


def test_a_pinned_reassign_moves_the_originals_follower_while_it_is_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    unpinned = {reassigned(cluster(leader=1), None, seed, monkeypatch).outgoing for seed in range(20)}
    assert unpinned == {2, 3}
    for seed in range(20):
        record = reassigned(cluster(leader=1), (3, 3), seed, monkeypatch)
        assert (record.outgoing, record.incoming, record.nodes, record.re_chosen) == (3, 3, (3, 3), None)
    # Onto a broker without a replica: both the outgoing and the incoming one are the original's.
    for seed in range(10):
        record = reassigned(cluster(leader=1, brokers=4), (2, 5), seed, monkeypatch)
        assert (record.outgoing, record.incoming) == (2, 4)  # 5 is no broker of this cluster: re-chosen
        assert record.re_chosen is not None and "the original hit [5]; node 5 is not in the cluster" in (
            record.re_chosen
        )
    moved = reassigned(cluster(leader=3), (3, 3), 0, monkeypatch)
    assert moved.outgoing in (1, 2)
    assert moved.re_chosen == "the original hit [3]; now the followers are [1, 2]"


def test_the_nemesis_gives_each_fault_its_keys_pins_and_the_rows_record_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(cast(dict[Any, Any], fault_classes()), ("kill", "nodes"), StandIn)
    planned = [
        PlannedFault("kill#1", "kill:target=random", 0.0, 0.1),
        PlannedFault("kill#2", "kill:target=followers", 0.2, 0.1),
        PlannedFault("kill#3", "kill:target=random", 0.4, 0.1),
    ]
    history = HistoryWriter(RunDir(tmp_path), "pinned")
    pins = {"kill#1": FaultPin((3,)), "kill#2": FaultPin((2, 3))}  # kill#3 was skipped: nothing to pin
    nemesis = Nemesis(cluster(leader=2), history, "kchaos", 0, planned, pins=pins, effect_timeout=5)
    nemesis.start()
    assert nemesis.finished.wait(20) and nemesis.error is None, nemesis.error
    rows = pd.read_parquet(history.finish())
    starts = rows[(rows["process"] == NEMESIS_PROCESS) & (rows["value"] == START)].set_index("key")
    details = starts["detail"].map(json.loads)
    assert details["kill#1"]["nodes"] == [3] and "re_chosen" not in details["kill#1"]
    assert details["kill#2"]["nodes"] == [1, 3]
    assert details["kill#2"]["re_chosen"].startswith("the original hit [2, 3]; now the nodes target")
    assert "re_chosen" not in details["kill#3"]
    # The check carries each re-chosen fault to the outcome, which prints a line for it.
    applied = fault_application([p.key for p in planned], cast(Any, rows.to_dict("records")))
    results = {"fault_application": applied.to_json()}
    lines = RunOutcome(tmp_path, results, tmp_path / "report.html").run_lines()
    assert [line for line in lines if "replays" in line] == [
        f"kill#2 hit or chose otherwise than in the run it replays: {details['kill#2']['re_chosen']}"
    ]


# --- the topics' assignment --------------------------------------------------------------------------


def test_an_assignment_is_read_back_as_written_in_its_order(tmp_path: Path) -> None:
    placed = {"kchaos": {0: (2, 3, 1), 1: (3, 1, 2)}, "kchaos-out": {0: (1, 2, 3)}}
    write_assignment(tmp_path / "a.json", placed)
    assert read_assignment(tmp_path / "a.json") == placed
    assert misfit(placed, ["kchaos"], 2, 3, 3) is None
    assert misfit(placed, ["kchaos"], 3, 3, 3) == "topic kchaos had partitions [0, 1], not 0 to 2"
    assert misfit(placed, ["kchaos"], 2, 3, 2) == "kchaos-0 had replicas on [3], which 2 brokers do not have"
    assert misfit(placed, ["other"], 2, 3, 3) == "it has no assignment of topic other"


def test_a_topic_given_an_assignment_is_created_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[NewTopic] = []

    class Admin:
        def create_topics(self, topics: list[NewTopic], operation_timeout: float) -> dict[str, Any]:
            made.extend(topics)
            return {topic.topic: SimpleNamespace(result=lambda timeout: None) for topic in topics}

    monkeypatch.setattr(readiness, "wait_until", lambda *args, **kwargs: None)
    admin, config = cast(Any, Admin()), {"min.insync.replicas": "2"}
    readiness.create_topic(
        admin, cast(Any, None), {}, "kchaos", 2, 3, config, 5.0, {1: (3, 1, 2), 0: (2, 3, 1)}
    )
    readiness.create_topic(admin, cast(Any, None), {}, "kchaos", 2, 3, config, 5.0)
    assert made[0].replica_assignment == [[2, 3, 1], [3, 1, 2]] and made[0].num_partitions == 2
    assert made[1].replica_assignment is None and made[1].replication_factor == 3


# --- kchaos run --replay ------------------------------------------------------------------------------


ORIGINAL: dict[str, Any] = {
    "nemesis": "clock:target=followers,reassign", "duration": 60, "seed": 7, "acks": "1",
    "idempotence": False, "broker_config": {"num.io.threads": "4"},
}  # fmt: skip


def original_run(runs_dir: Path) -> RunConfig:
    """A finished run's directory as a run leaves it: its resolved config.json, its topics' assignment
    and a history whose faults hit nodes."""
    config = load_config(run_id="orig", runs_dir=runs_dir, **ORIGINAL)
    files = RunDir(config.run_dir)
    files.path.mkdir(parents=True)
    resolved = {**config.to_json_dict(), "kafka_image": f"kchaos/kafka:{config.kafka_version}",
                "image_id": "sha256:0", "started_at": 1.0}  # fmt: skip
    files.config.write_text(json.dumps(resolved), encoding="utf-8")
    write_assignment(files.assignment, {"kchaos": {0: (2, 3, 1), 1: (3, 1, 2), 2: (1, 2, 3)}})
    write_history(
        config.run_dir,
        {
            "clock#1": FaultRecord(kind="clock", nodes=(1, 3), spec="clock:target=followers"),
            "reassign#2": FaultRecord(kind="reassign", nodes=(1, 1), spec="reassign"),
        },
    )
    return config


class Runs:
    """`execute` stubbed: what each run was given."""

    def __init__(self) -> None:
        self.given: list[tuple[RunConfig, Replay | None]] = []

    def execute(self, config: RunConfig, replay: Replay | None = None, **kwargs: Any) -> RunOutcome:
        self.given.append((config, replay))
        results = {"verdict": "ok", "summary": {}, "anomalies": {}}
        return RunOutcome(config.run_dir, results, config.run_dir / "report.html")


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> Runs:
    stub = Runs()
    monkeypatch.setattr(kchaos.runner.run, "execute", stub.execute)
    monkeypatch.setattr(kchaos.harness.engine, "require_engine", lambda timeout=0.0: None)
    return stub


def replay(*args: str) -> Result:
    return CliRunner().invoke(main, ["run", "--replay", *args])


def test_a_replay_runs_the_originals_configuration_with_its_assignment_and_its_faults_nodes(
    tmp_path: Path, runs: Runs
) -> None:
    original = original_run(tmp_path / "runs")
    result = replay(str(original.run_dir))
    assert result.exit_code == 0, result.output
    [(config, replayed)] = runs.given
    assert config.model_dump(exclude={"run_id"}) == original.model_dump(exclude={"run_id"})
    assert config.run_id == "orig-replay" and config.run_dir == tmp_path / "runs" / "orig-replay"
    assert replayed is not None and replayed.source == original.run_dir
    assert replayed.pins == {"clock#1": FaultPin((1, 3)), "reassign#2": FaultPin((1, 1))}
    assert replayed.assignment == {"kchaos": {0: (2, 3, 1), 1: (3, 1, 2), 2: (1, 2, 3)}}
    # The next replay beside it gets a directory of its own.
    config.run_dir.mkdir()
    assert replay(str(original.run_dir)).exit_code == 0
    assert runs.given[1][0].run_id == "orig-replay-2"


def test_an_option_that_changes_nothing_planned_overrides_the_originals(tmp_path: Path, runs: Runs) -> None:
    original = original_run(tmp_path / "runs")
    result = replay(str(original.run_dir), "--spark-master", "local[1]", "--run-id", "again", "--seed", "7")
    assert result.exit_code == 0, result.output
    [(config, _)] = runs.given
    assert config.spark_master == "local[1]" and config.run_id == "again" and config.seed == 7
    assert config.model_dump(exclude={"run_id", "spark_master"}) == original.model_dump(
        exclude={"run_id", "spark_master"}
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--seed", "8"], "--seed: would change the faults the run plans"),
        (["--duration", "200", "--nemesis", "kill"], "--duration, --nemesis: would change the faults"),
        (["--partitions", "4"], "--partitions: the original's topics cannot be placed as they were"),
        (
            ["--brokers", "2", "--replication-factor", "2", "--min-insync-replicas", "1"],
            "--replication-factor, --brokers:",
        ),
    ],
)
def test_an_option_that_would_change_the_plan_or_the_placement_is_refused_naming_it(
    tmp_path: Path, runs: Runs, args: list[str], expected: str
) -> None:
    original = original_run(tmp_path / "runs")
    result = replay(str(original.run_dir), *args)
    assert result.exit_code == 2, result.output
    assert f"--replay {original.run_dir} {expected}" in " ".join(result.output.split())
    assert runs.given == [] and sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["orig"]


def damage(run_dir: Path, what: str) -> None:
    files = RunDir(run_dir)
    if what == "missing":
        for path in sorted(run_dir.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        run_dir.rmdir()
    elif what == "config":
        files.config.write_text("{not json", encoding="utf-8")
    elif what == "assignment":
        files.assignment.unlink()
    elif what == "history":
        files.history_parquet.unlink()
        files.history_staging.write_text('{"index": 0}\nnot json\n{"index": 2}\n', encoding="utf-8")


@pytest.mark.parametrize(
    ("what", "expected"),
    [
        ("missing", "no such run directory; give the directory of a run kchaos made"),
        ("config", "its config.json cannot be read"),
        ("assignment", "its assignment.json cannot be read"),
        ("history", "its history (history/history.parquet or history/history.ndjson) cannot be read"),
    ],
)
def test_a_run_directory_that_cannot_be_replayed_is_refused_naming_the_option_and_the_fix(
    tmp_path: Path, runs: Runs, what: str, expected: str
) -> None:
    original = original_run(tmp_path / "runs")
    damage(original.run_dir, what)
    result = replay(str(original.run_dir))
    text = " ".join(result.output.split())
    assert result.exit_code == 2 and f"--replay {original.run_dir}: {expected}" in text, result.output
    assert "Traceback" not in result.output and runs.given == []
    assert not (tmp_path / "runs" / "orig-replay").exists()
    if what == "assignment":
        assert "plan the run again instead, with its options and --seed 7" in text


# --- the printed command ------------------------------------------------------------------------------


def test_the_printed_program_is_the_one_invoked_written_so_it_runs_from_here(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    script = clone / ".venv" / "bin" / "kchaos"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    assert program_name(str(script), clone) == ".venv/bin/kchaos"
    assert program_name(".venv/bin/kchaos", clone) == ".venv/bin/kchaos"
    assert program_name(str(script), clone / ".venv" / "bin") == "./kchaos"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert program_name(str(script), elsewhere, lambda name: str(script)) == "kchaos"  # what PATH finds
    other = tmp_path / "other-kchaos"
    other.write_text("#!/bin/sh\n")
    assert program_name(str(script), elsewhere, lambda name: str(other)) == str(script)
    assert program_name(str(script), elsewhere, lambda name: None) == str(script)
    assert program_name("kchaos", elsewhere, lambda name: "/usr/bin/kchaos") == "kchaos"
