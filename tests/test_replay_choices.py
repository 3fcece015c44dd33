"""A replay keeps to every choice the original's faults made, not only their nodes, without a cluster.

Beside the nodes a fault hit, its rows record the choices it made (`FaultRecord.chose`): a one-way cut's
receivers, the replica `add-broker` moved of each partition, the broker that took each replica a drained
broker held, the client processes `target=clients` hit, the member a `kill-member` drew. A replay reads them
back (`kchaos.model.fault_pins`), the start row's and, for choices made after the start, the stop row's,
and each fault keeps to its key's while they are valid now; otherwise it chooses as it would have, and its
record says why. A history written before the choices were recorded still replays, each choice re-made
with that reason. The clusters here are stand-ins with just what each fault asks of them.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pandas as pd
import pytest

from kchaos.checkers.faults import fault_application
from kchaos.harness.metadata import MetadataView, PartitionState
from kchaos.model.events import INFO, NEMESIS_PROCESS, START, STOP
from kchaos.model.fault_pins import FaultPin, PinsUnreadable, pinned_faults, read_pins
from kchaos.model.fault_plan import PlannedFault
from kchaos.model.fault_record import FaultRecord
from kchaos.model.fault_spec import parse_spec
from kchaos.model.faults.clients import ClientRecord
from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from kchaos.nemesis import clients, members
from kchaos.nemesis.carriers import fault_classes
from kchaos.nemesis.fault import Fault
from kchaos.nemesis.membership import AddBroker, Membership, RemoveBroker
from kchaos.nemesis.netfilter import Cuts
from kchaos.nemesis.network import OneWay
from kchaos.nemesis.schedule import Nemesis

# --- recorded, and read back ------------------------------------------------------------------------


def row(index: int, key: str, phase: str, record: FaultRecord) -> dict[str, Any]:
    detail = json.dumps(record.to_detail())
    return {"index": index, "process": NEMESIS_PROCESS, "key": key, "value": phase, "detail": detail}


def test_a_record_s_choices_are_read_back_as_written_and_an_old_row_has_none() -> None:
    record = FaultRecord(
        kind="partition", nodes=(1,), chose={"receivers": (2, 3), "clients": ("producer-0",)}
    )
    detail = json.loads(json.dumps(record.to_detail()))
    assert detail["chose"] == {"receivers": [2, 3], "clients": ["producer-0"]}
    assert FaultRecord.read(detail).chose == record.chose
    assert "chose" not in FaultRecord(kind="crash").to_detail()
    assert FaultRecord.read({"kind": "crash", "nodes": [1]}).chose is None
    assert FaultRecord.read({"kind": "crash", "chose": "garbled"}).chose is None


def test_a_fault_s_choices_are_its_start_row_s_and_those_its_stop_row_adds() -> None:
    rows = [
        row(3, "add-broker#1", START, FaultRecord(kind="membership", nodes=(4,))),
        row(7, "add-broker#1", STOP, FaultRecord(kind="membership", nodes=(4,), chose={"moved": (2,)})),
        row(9, "add-broker#1", STOP, FaultRecord(kind="membership", nodes=(4,), chose={"moved": (3,)})),
        row(1, "one-way#0", START, FaultRecord(kind="partition", nodes=(1,), chose={"receivers": (2, 3)})),
        row(2, "kill#2", START, FaultRecord(kind="crash", nodes=(2,))),  # an old row: no choices recorded
    ]
    assert pinned_faults(rows) == {
        "one-way#0": FaultPin((1,), {"receivers": (2, 3)}),
        "add-broker#1": FaultPin((4,), {"moved": (2,)}),  # the first stop row: a later one changes nothing
        "kill#2": FaultPin((2,)),
    }
    bad = FaultRecord(kind="partition", nodes=(1,), chose={"receivers": (cast(Any, 2.5),)})
    with pytest.raises(PinsUnreadable, match=r"the rows of one-way#0 record its receivers as \[2\.5\]"):
        pinned_faults([row(1, "one-way#0", START, bad)])


def test_a_runs_history_gives_each_fault_its_choices(tmp_path: Path) -> None:
    history = HistoryWriter(RunDir(tmp_path), tmp_path.name)
    started = FaultRecord(kind="partition", nodes=(1,), chose={"receivers": (3,)})
    history.record(NEMESIS_PROCESS, INFO, "one-way", key="one-way#1", value=START, detail=started.to_detail())
    stopped = FaultRecord(kind="membership", nodes=(4,), chose={"replica of kchaos-0 moved": (2,)})
    history.record(
        NEMESIS_PROCESS, INFO, "add-broker", key="add-broker#2", value=START, detail={"nodes": [4]}
    )
    history.record(
        NEMESIS_PROCESS, INFO, "add-broker", key="add-broker#2", value=STOP, detail=stopped.to_detail()
    )
    history.finish()
    assert read_pins(tmp_path) == {
        "one-way#1": FaultPin((1,), {"receivers": (3,)}),
        "add-broker#2": FaultPin((4,), {"replica of kchaos-0 moved": (2,)}),
    }


# --- stand-in clusters --------------------------------------------------------------------------------

#: The run's topic and an internal one on brokers 1 to 3, each partition led by its first replica.
PLACED = {
    ("kchaos", 0): PartitionState(0, 1, (1, 2, 3), (1, 2, 3)),
    ("kchaos", 1): PartitionState(1, 2, (2, 3, 1), (2, 3, 1)),
    ("__consumer_offsets", 0): PartitionState(0, 3, (3, 1), (3, 1)),
}


class Metadata:
    """A cluster's answers: partition 0 of the run's topic led by `leader` on `replicas`, and every
    partition's placement."""

    def __init__(self, leader: int, replicas: tuple[int, ...], placed: dict[Any, PartitionState]) -> None:
        self.leader, self.replicas, self.placed = leader, replicas, placed

    def leader_of(self, topic: str, partition: int, among: object = None) -> int:
        return self.leader

    def views(self, topic: str, nodes: object = None) -> list[MetadataView]:
        states = {p: PartitionState(p, self.leader, self.replicas, self.replicas) for p in range(3)}
        return [MetadataView(1, frozenset(range(1, 6)), states)]

    def placements(self) -> dict[Any, PartitionState]:
        return dict(self.placed)


def cluster(
    leader: int = 1,
    replicas: tuple[int, ...] = (1, 2, 3),
    down: tuple[int, ...] = (),
    brokers: int = 3,
    placed: dict[Any, PartitionState] | None = None,
) -> Any:
    """Brokers 1 to `brokers`, `down` of them not running; partition 0 of the run's topic on `replicas`,
    led by `leader`, and the partitions `placed` (`PLACED` unless given)."""
    nodes = {n: SimpleNamespace(state="killed" if n in down else "running") for n in range(1, brokers + 1)}
    metadata = Metadata(leader, replicas, PLACED if placed is None else placed)
    return SimpleNamespace(
        nodes=nodes, servers=nodes, metadata=metadata, controllers={}, zookeeper=None, spares=[], run_id="r"
    )


def fault(
    kind: type[Fault],
    spec: str,
    on: Any,
    pinned: FaultPin | None = None,
    seed: int = 0,
    held: dict[int | str, str] | None = None,
) -> Any:
    made = kind(on, "kchaos", 0, "f#1", parse_spec(spec), random.Random(seed))
    if pinned is not None:
        made.pinned, made.pinned_choices = pinned.nodes, pinned.choices
    made.held_by = held or {}
    return made


# --- one-way: its receivers ---------------------------------------------------------------------------


@pytest.fixture
def dropped(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    links: list[tuple[int, int]] = []

    def drop(self: Cuts, source: int, destination: int, source_port: int | None = None) -> None:
        links.append((source, destination))
        self.links.append((source, destination))

    monkeypatch.setattr(Cuts, "drop", drop)
    return links


def one_way(spec: str, on: Any, pinned: FaultPin | None = None, seed: int = 0, **kw: Any) -> FaultRecord:
    return cast(FaultRecord, fault(OneWay, spec, on, pinned, seed, **kw).start())


def test_a_replayed_one_way_cut_drops_packets_to_the_originals_receivers_while_it_may(
    dropped: list[tuple[int, int]],
) -> None:
    spec = "one-way:from=1:to=random"
    seeds = [seed for seed in range(30) if random.Random(seed).choice([1, 2, 3]) != 1]  # 1 sends
    assert {cast(Any, one_way(spec, cluster(), None, seed).chose)["receivers"] for seed in seeds} == {
        (2,),
        (3,),
    }
    for seed in seeds:  # the pin holds the draw to the original's receiver
        record = one_way(spec, cluster(), FaultPin((1,), {"receivers": (3,)}), seed)
        assert record.chose == {"receivers": (3,)} and record.re_chosen is None
        assert dropped[-1] == (1, 3)
    record = one_way(spec, cluster(down=(3,)), FaultPin((1,), {"receivers": (3,)}))
    assert record.chose == {"receivers": (2,)}
    assert record.re_chosen == "the original's receivers: [3]; node 3 is not running now"


def test_a_one_way_cut_s_receivers_that_no_longer_play_their_role_are_re_chosen_saying_why(
    dropped: list[tuple[int, int]],
) -> None:
    spec = "one-way:from=leader:to=followers"
    kept = one_way(spec, cluster(leader=1), FaultPin((1,), {"receivers": (2, 3)}))
    assert (kept.chose, kept.re_chosen) == ({"receivers": (2, 3)}, None)
    moved = one_way(spec, cluster(leader=2), FaultPin((2,), {"receivers": (2, 3)}))
    assert moved.chose == {"receivers": (1, 3)}
    assert moved.re_chosen == (
        "the original's receivers: [2, 3]; now the nodes target 'followers' may name beside the senders "
        "are [1, 3]"
    )


def test_a_one_way_cut_replayed_from_a_history_that_records_no_receivers_says_so(
    dropped: list[tuple[int, int]],
) -> None:
    record = one_way("one-way:from=leader:to=followers", cluster(), FaultPin((1,)))
    assert record.nodes == (1,) and record.chose == {"receivers": (2, 3)}
    assert record.re_chosen == "the original's rows record no receivers; this run chose [2, 3]"
    outside = one_way("one-way:from=leader:to=followers", cluster())
    assert outside.chose == {"receivers": (2, 3)} and outside.re_chosen is None  # no replay: no reason


# --- add-broker: the replica each partition moves ------------------------------------------------------


@pytest.fixture
def submitted(monkeypatch: pytest.MonkeyPatch) -> list[dict[Any, tuple[int, ...]]]:
    plans: list[dict[Any, tuple[int, ...]]] = []

    def submit(self: Membership, plan: dict[Any, tuple[int, ...]]) -> None:
        self.asked = plan
        plans.append(plan)

    monkeypatch.setattr(Membership, "_submit", submit)
    return plans


def moved_onto_4(on: Any, pinned: FaultPin | None, seed: int = 0, spec: str = "add-broker") -> Any:
    added = fault(AddBroker, spec, on, pinned, seed)
    added.nodes, added.joined = (4,), 4
    added._move_onto(4)
    return added


def test_a_replayed_add_broker_moves_the_replicas_the_original_moved_while_they_are_followers(
    submitted: list[dict[Any, tuple[int, ...]]],
) -> None:
    drawn = {moved_onto_4(cluster(), None, seed).chose["replica of kchaos-0 moved"] for seed in range(30)}
    assert drawn == {(2,), (3,)}  # seed after seed the draw moves ...
    pin = FaultPin((4,), {"replica of kchaos-0 moved": (3,), "replica of kchaos-1 moved": (1,)})
    for seed in range(30):  # ... and the pin holds it
        added = moved_onto_4(cluster(), pin, seed)
        assert submitted[-1] == {("kchaos", 0): (1, 2, 4), ("kchaos", 1): (2, 3, 4)}
        assert added.record().re_chosen is None
    assert added.record().chose == pin.choices  # recorded for the next replay (the stop row's)


def test_an_add_broker_replica_no_longer_a_follower_or_unrecorded_is_re_chosen_saying_why(
    submitted: list[dict[Any, tuple[int, ...]]],
) -> None:
    led_by_3 = {**PLACED, ("kchaos", 0): PartitionState(0, 3, (1, 2, 3), (1, 2, 3))}
    pin = FaultPin((4,), {"replica of kchaos-0 moved": (3,)})
    added = moved_onto_4(cluster(placed=led_by_3), pin)
    assert added.chose["replica of kchaos-0 moved"] in ((1,), (2,))
    assert added.record().re_chosen == (
        "the original's replica of kchaos-0 moved: [3]; now its followers are [1, 2]; "
        "the original's rows record no replica of kchaos-1 moved; this run chose "
        f"{list(added.chose['replica of kchaos-1 moved'])}"
    )
    leader = moved_onto_4(
        cluster(placed=led_by_3),
        FaultPin((4,), {"replica of kchaos-0 moved": (1,)}),
        spec="add-broker:replica=leader",
    )
    assert leader.chose["replica of kchaos-0 moved"] == (3,)
    assert "the original's replica of kchaos-0 moved: [1]; now its leader is [3]" in str(
        leader.record().re_chosen
    )


# --- remove-broker: where the drained broker's replicas go ---------------------------------------------

FOUR = {
    ("kchaos", 0): PartitionState(0, 1, (1, 2, 3), (1, 2, 3)),
    ("kchaos", 1): PartitionState(1, 2, (2, 1, 4), (2, 1, 4)),
    ("__consumer_offsets", 0): PartitionState(0, 1, (1, 4), (1, 4)),
}


def removed(on: Any, pinned: FaultPin | None, seed: int = 0) -> FaultRecord:
    return cast(FaultRecord, fault(RemoveBroker, "remove-broker:target=1", on, pinned, seed).start())


def test_a_replayed_drain_gives_each_replica_to_the_broker_the_original_gave_it_while_it_is_free(
    submitted: list[dict[Any, tuple[int, ...]]],
) -> None:
    four: dict[str, Any] = {"brokers": 4, "placed": FOUR}
    drawn = {
        cast(Any, removed(cluster(**four), None, seed).chose)["broker taking __consumer_offsets-0"]
        for seed in range(30)
    }
    assert drawn == {(2,), (3,)}
    pin = FaultPin(
        (1,),
        {
            "broker taking kchaos-0": (4,),
            "broker taking kchaos-1": (3,),
            "broker taking __consumer_offsets-0": (2,),
        },
    )
    for seed in range(30):
        record = removed(cluster(**four), pin, seed)
        assert submitted[-1] == {
            ("kchaos", 0): (4, 2, 3),
            ("kchaos", 1): (2, 3, 4),
            ("__consumer_offsets", 0): (2, 4),
        }
        assert record.re_chosen is None and record.chose == pin.choices


def test_a_drain_whose_original_taker_now_holds_the_partition_is_re_chosen_saying_why(
    submitted: list[dict[Any, tuple[int, ...]]],
) -> None:
    moved = {**FOUR, ("kchaos", 1): PartitionState(1, 2, (2, 1, 3), (2, 1, 3))}
    pin = FaultPin(
        (1,),
        {
            "broker taking kchaos-0": (4,),
            "broker taking kchaos-1": (3,),
            "broker taking __consumer_offsets-0": (2,),
        },
    )
    record = removed(cluster(brokers=4, placed=moved), pin)
    assert record.chose is not None and record.chose["broker taking kchaos-1"] == (4,)
    assert (
        record.re_chosen
        == "the original's broker taking kchaos-1: [3]; now the brokers free to take it is [4]"
    )


# --- the client processes a client fault hits ---------------------------------------------------------


class Client:
    def __init__(self, name: str) -> None:
        self.name = name
        self.paused = False

    def pause(self) -> None:
        self.paused = True


def paused(
    names: list[str],
    pinned: FaultPin | None,
    monkeypatch: pytest.MonkeyPatch,
    target: str = "clients",
    **kw: Any,
) -> ClientRecord:
    monkeypatch.setattr(clients, "run_clients", lambda cluster: {name: Client(name) for name in names})
    return cast(
        ClientRecord, fault(clients.PauseClient, f"pause:target={target}", cluster(), pinned, **kw).start()
    )


def test_a_replayed_client_fault_hits_the_originals_clients_while_they_run_and_says_why_when_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    both = ["producer-0", "producer-1"]
    pin = FaultPin((), {"clients": ("producer-0", "producer-1")})
    kept = paused(both, pin, monkeypatch)
    assert (tuple(kept.clients or ()), kept.chose, kept.re_chosen) == (
        ("producer-0", "producer-1"),
        pin.choices,
        None,
    )
    one = paused(["producer-0"], pin, monkeypatch)
    assert tuple(one.clients or ()) == ("producer-0",)
    assert (
        one.re_chosen == "the original's clients: [producer-0, producer-1]; this run chooses 1 of them there"
    )
    renamed = paused(["producer-0", "producer-2"], pin, monkeypatch)
    assert renamed.re_chosen == (
        "the original's clients: [producer-0, producer-1]; now the client processes running are "
        "[producer-0, producer-2]"
    )
    old = paused(both, FaultPin(()), monkeypatch)
    assert old.re_chosen == "the original's rows record no clients; this run chose [producer-0, producer-1]"
    named = paused(both, FaultPin(()), monkeypatch, target="producer-1")  # the spec names it: no choice
    assert (tuple(named.clients or ()), named.chose, named.re_chosen) == (("producer-1",), None, None)


def test_a_replayed_member_crash_crashes_the_originals_member_while_it_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Group:
        def __init__(self) -> None:
            self.crashed: list[str] = []

        def member_names(self) -> list[str]:
            return ["member-0", "member-1", "member-2"]

        def crash(self, process: str) -> frozenset[int]:
            self.crashed.append(process)
            return frozenset({int(process[-1])})

        def restart(self, process: str) -> bool:
            return True

        def assignment(self, process: str) -> frozenset[int]:
            return frozenset({int(process[-1])})

        def assignments(self, process: str) -> int:
            return 1

        def handed(self, process: str) -> int:
            return 1

    def crashed(pinned: FaultPin | None, seed: int) -> Any:
        made = fault(members.KillMember, "kill-member", cluster(), pinned, seed)
        made.use_readers(Group())
        return made.start()

    assert len({crashed(None, seed).member for seed in range(30)}) == 3
    pin = FaultPin((), {"member": ("member-1",)})
    assert {crashed(pin, seed).member for seed in range(30)} == {"member-1"}
    gone = crashed(FaultPin((), {"member": ("member-7",)}), 0)
    assert gone.re_chosen == (
        "the original's member: [member-7]; now the members reading their partitions are "
        "[member-0, member-1, member-2]"
    )


# --- through the nemesis, to the outcome --------------------------------------------------------------


class Chooser(Fault):
    """A fault that hits node 1 and, once started, chooses one of nodes 2 and 3 (as add-broker chooses
    its moves once the new broker has registered)."""

    def start(self) -> FaultRecord:
        self.nodes = (1,)
        return self.record()

    def stop(self) -> FaultRecord:
        return self.record()

    def effect_reached(self) -> bool:
        if "later" not in self.chose:
            self.keep_choice("later", [self.rng.choice([2, 3])], [2, 3], "nodes 2 and 3")
        return True

    def describe(self) -> str:
        return "a stand-in that chooses after it started"

    def healed(self) -> bool:
        return True


def test_the_nemesis_gives_each_fault_its_choices_and_a_reason_on_the_stop_row_reaches_the_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(cast(dict[Any, Any], fault_classes()), ("kill", "nodes"), Chooser)
    planned = [PlannedFault("kill#1", "kill", 0.0, 0.1), PlannedFault("kill#2", "kill", 0.2, 0.1)]
    history = HistoryWriter(RunDir(tmp_path), "pinned")
    pins = {"kill#1": FaultPin((1,), {"later": (3,)}), "kill#2": FaultPin((1,), {"later": (5,)})}
    nemesis = Nemesis(cluster(), history, "kchaos", 0, planned, pins=pins, effect_timeout=5)
    nemesis.start()
    assert nemesis.finished.wait(20) and nemesis.error is None, nemesis.error
    rows = pd.read_parquet(history.finish())
    again = pinned_faults(cast(Any, rows.to_dict("records")))
    assert again["kill#1"] == pins["kill#1"]  # kept, and recorded for the next replay
    assert again["kill#2"].choices["later"] in ((2,), (3,))
    applied = fault_application([p.key for p in planned], cast(Any, rows.to_dict("records")))
    assert applied.re_chosen == (("kill#2", "the original's later: [5]; node 5 is not in the cluster now"),)
