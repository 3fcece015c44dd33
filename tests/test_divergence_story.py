"""`kchaos explain` tells how replicas diverged, from a real run: `kip-101-divergence` on Kafka 0.10.2.2
(tests/run_dirs/divergence-0.10.2.2: partition 0 of the run, its history trimmed to the sends of the
records the replicas hold at offsets 361-1533 and to the cluster's rows, its dumps to those offsets and its
brokers' logs to the lines about kchaos-0). There leader 1 acknowledged writes alone once replication to
brokers 2 and 3 was cut and its ISR shrank to itself; it was killed, the controller elected broker 3
uncleanly ("There's potential data loss"), which wrote other records at the same offsets; broker 1 came
back and truncated only to its own high watermark (1524), keeping its records at 371-1523: 1,153 offsets
where broker 1 holds one record and brokers 2 and 3 another. The story must show each of those steps."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kchaos.checkers.stories.divergence_story import Place, divergent_offsets, sides, stretches
from kchaos.checkers.stories.teller import choose
from tests.test_explain import KIP101, LOST, section, told

DIVERGENCE = Path(__file__).parent / "run_dirs" / "divergence-0.10.2.2"
PLACE = "kchaos/0/371"


def test_the_divergence_is_told_as_its_offsets_and_what_each_side_holds() -> None:
    lines = told(str(DIVERGENCE))
    assert lines[0] == f"{PLACE} (replica-divergence)"
    assert section(lines, "where the replicas of kchaos-0 differ at the end (1,153 offsets)") == [
        "  offsets 371-1523"
    ]
    sides_told = section(lines, "each side of offsets 371-1523")
    assert sides_told[0].startswith("  broker 1: 1,153 records (no epoch): producer-0-567, producer-1-546")
    # broker 1's own line shrank the ISR to [1] at +23.24s, before the first of these acknowledgements
    assert sides_told[1].endswith("by leader 1 (ISR [1]), as broker 1's log says at +23.24s"), sides_told[1]
    assert sides_told[2].startswith("  brokers 2, 3: 1,153 records (no epoch): producer-1-2598")
    assert sides_told[3].endswith("by leader 3 (ISR [2, 3]), as the leader watcher saw it since +44.07s"), (
        sides_told[3]
    )
    old, new = (float(line.split(" from ")[1].split("s ")[0].strip("+")) for line in sides_told[1:4:2])
    assert old < new, "the old leader's side was written first"


def test_each_replica_at_the_offset_and_the_sends_acknowledged_there() -> None:
    at = section(told(str(DIVERGENCE)), "at offset 371:")
    assert at[:3] == [
        "  broker 1: producer-0-567 (no epoch), acknowledged at offset 971 (+23.39s)",
        "  broker 2: producer-1-2598 (no epoch)",
        "  broker 3: producer-1-2598 (no epoch)",
    ]
    assert at[3] == "  1 send acknowledged at offset 371:"
    assert at[4].endswith(
        "producer-1-2598 by producer-1 (history row 14258), leader 3 (ISR [2, 3]), as the leader watcher saw "
        "it since +44.07s; held by broker 2, 3"
    )


def test_the_timeline_shows_the_unclean_election_and_the_old_leader_keeping_its_records() -> None:
    timeline = section(told(str(DIVERGENCE)), "what the cluster did")
    wanted = [
        "fault cut-replication#1 under way since +12.30s: cut replication from leader 1 to followers [2, 3]",
        "kchaos-0: ISR [1, 2, 3] -> [1]",
        "fault kill#2 begins: SIGKILL node 1",
        "broker 3 elected leader, leader epoch 1 (logged by broker 3)",
        "kchaos-0: leader none -> 3",
        "fault kill#2 healed",
        # broker 1's log loaded with log end offset 1744 when it came back: what it held is what it cut
        "broker 1 truncates its log to offset 1524, cutting off offsets 1524-1743, keeping its records at "
        "offsets 371-1523",
        "kchaos-0: ISR [2, 3] -> [1, 2, 3]",
    ]
    places = [next(number for number, line in enumerate(timeline) if text in line) for text in wanted]
    assert places == sorted(places), timeline


def test_the_brokers_own_lines_show_the_unclean_election_and_the_truncation_to_the_high_watermark() -> None:
    text = "\n".join(section(told(str(DIVERGENCE)), "the brokers' logs about kchaos-0"))
    assert "Elect leader 3 from live brokers 3,2. There's potential data loss." in text
    assert 'Selected new leader and ISR {"leader":3,"leader_epoch":1,"isr":[3]}' in text
    assert "Truncating log kchaos-0 to offset 1524." in text


def test_a_place_is_told_on_request_and_one_where_replicas_agree_says_so() -> None:
    assert told(str(DIVERGENCE), "--record", "kchaos/0/400")[0] == "kchaos/0/400"
    agreed = told(str(DIVERGENCE), "--record", "kchaos/0/5")
    assert "at offset 5 the replicas agree; the stretch's first offset, 371:" in agreed
    assert told(str(DIVERGENCE), "--record", "kchaos/1/5") == [
        "kchaos/1/5",
        "  no broker's dump holds kchaos-1",
    ]
    assert told(str(KIP101), "--record", "kchaos/2/28") == [
        "kchaos/2/28",
        "  the replicas of kchaos-2 agree at every offset they share",
    ]


def test_divergence_and_lost_records_share_max_examples(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(DIVERGENCE, run)
    results = json.loads((run / "results.json").read_text())
    results["anomalies"]["lost-write"].update(
        verdict="violation", count=1, examples=[{"value": "producer-1-2598", "partition": 0, "offset": 371}]
    )
    (run / "results.json").write_text(json.dumps(results))
    lines = told(str(run), "--max-examples", "1")
    assert lines[0] == "producer-1-2598 (lost-write)"
    assert not any(line.startswith(PLACE) for line in lines)
    assert lines[-1] == "1 of 2 violations explained; --max-examples N for more"
    both = told(str(run))
    assert both[0] == "producer-1-2598 (lost-write)" and f"{PLACE} (replica-divergence)" in both


def test_one_story_per_diverged_partition_and_a_kip101_loss_is_still_a_record() -> None:
    results = json.loads((DIVERGENCE / "results.json").read_text())
    assert len(results["anomalies"]["replica-divergence"]["examples"]) == 3
    chosen = choose(results, 5)
    assert chosen.subjects == [Place("kchaos", 0, 371, "replica-divergence")]
    assert (chosen.total, chosen.untold) == (1, [])
    kip101 = choose(json.loads((KIP101 / "results.json").read_text()), 5)
    assert [getattr(subject, "value", None) for subject in kip101.subjects] == [LOST]


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        # broker 3's log ends at 1: offset 2 is outside its range, so 1 and 2 agree where both are covered
        ([(1, 0, "a"), (1, 1, "b"), (1, 2, "c"), (2, 0, "a"), (2, 1, "b"), (2, 2, "c"),
          (3, 0, "a"), (3, 1, "b")], {}),
        # broker 2 holds nothing at 1 inside its range; at 2 it holds another record
        ([(1, 0, "a"), (1, 1, "b"), (1, 2, "c"), (2, 0, "a"), (2, 2, "x")],
         {1: {1: "b", 2: None}, 2: {1: "c", 2: "x"}}),
    ],
)  # fmt: skip
def test_divergent_offsets_are_those_inside_two_ranges_that_differ(
    rows: list[tuple[int, int, str]], expected: dict[int, dict[int, str | None]]
) -> None:
    dumped = [{"broker": broker, "offset": offset, "value": value} for broker, offset, value in rows]
    assert divergent_offsets(dumped) == expected


def test_stretches_and_sides() -> None:
    assert stretches([3, 4, 5, 9, 11, 12]) == [(3, 5), (9, 9), (11, 12)]
    divergent: dict[int, dict[int, str | None]] = {
        7: {1: "a", 2: "x", 3: "x"},
        8: {1: "b", 2: "y", 3: None},
    }
    assert sides(divergent, [7]) == [[1], [2, 3]]
    assert sides(divergent, [7, 8]) == [[1], [2], [3]]
    assert Place.parse("kchaos/2/28") == Place("kchaos", 2, 28)
    assert Place.parse("producer-0-44") is None and Place.parse("kchaos/x/28") is None
