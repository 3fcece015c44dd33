"""Every fact a story asserts agrees with the brokers' logs and the replica dumps, on three recorded runs
(tests/run_dirs/README.md): an ordinary default run on 4.3.1, the KIP-101 run and the divergence run on
0.10.2.2. The facts are read here from the logs and dumps with this file's own patterns, independently of
the story's readers, and each story line is parsed and checked against them; a planted stale leader
watcher view is said to be stale."""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kchaos.checkers.stories.evidence import RunEvidence
from kchaos.checkers.stories.leadership import led_at, sightings
from kchaos.checkers.stories.record_story import Subject, tell
from tests.test_divergence_story import DIVERGENCE
from tests.test_explain import KIP101, section, told

DEFAULT = Path(__file__).parent / "run_dirs" / "default-4.3.1"
#: An ISR stated by a broker: 0.10's and 3.x's shrinks and expansions, 4.x's updates and leader lines, 0.10's
#: controller decisions.
ISR_PATTERNS = (
    r"(?:Shrinking|Expanding) ISR .*? to ([\d,]+)",
    r"ISR updated to ([\d,]+)",
    r"starts at leader epoch .*ISR \[([\d,]+)\]",
    r'"isr":\[([\d,]+)\]',
)
TIME = re.compile(r"^\s+\+(\d+\.\d\d)s  ")


def started(run: Path) -> float:
    import json

    return float(json.loads((run / "config.json").read_text())["started_at"])


def log_facts(run: Path, partition: int) -> list[tuple[int, float, str]]:
    """(broker, seconds since the start, text) of every timestamped line about kchaos-`partition`."""
    start, facts = started(run), []
    named = re.compile(rf"(?<![\w.-])kchaos-{partition}(?![\w-])|\[kchaos,{partition}\]")
    for log in sorted((run / "logs").glob("kafka-*.log")):
        broker = int(log.stem.split("-")[1])
        for line in log.read_text().splitlines():
            stamp = re.match(r"\[(\S+ \S+)\] ", line)
            if stamp and named.search(line):
                when = datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=UTC)
                facts.append((broker, round(when.timestamp() - start, 3), line))
    return facts


def epoch_leaders(run: Path, partition: int) -> dict[int, int]:
    """Which broker led each leader epoch, as the brokers' own election lines say (4.x and 0.10 wording)."""
    led = {}
    for broker, _, line in log_facts(run, partition):
        if m := re.search(r"\] Leader \S+ .*starts at leader epoch (\d+)", line):
            led[int(m.group(1))] = broker
        if m := re.search(r'"leader":(\d+),"leader_epoch":(\d+)', line):
            led[int(m.group(2))] = int(m.group(1))
    return led


def isr_lines(run: Path, partition: int) -> list[tuple[float, list[int]]]:
    """Every ISR a broker's line states, and when."""
    found = []
    for _, at, line in log_facts(run, partition):
        m = next(
            (m for pattern in ISR_PATTERNS if (m := re.search(pattern, line))),
            None,
        )
        if m:
            found.append((at, sorted(int(node) for node in m.group(1).split(","))))
    return sorted(found)


def log_ends(run: Path, partition: int) -> list[tuple[int, float, int]]:
    """Where each broker's own lines say its log ended: (broker, time, log end offset)."""
    ends = []
    for broker, at, line in log_facts(run, partition):
        if m := re.search(
            r"log end offset (\d+)|logEndOffset=(\d+)|starts at leader epoch \d+ from offset (\d+)", line
        ):
            ends.append((broker, at, int(next(group for group in m.groups() if group))))
    return ends


def seconds(text: str) -> float:
    return float(text.strip().strip("+s"))


def check_story(run: Path, record: str, partition: int) -> list[str]:
    """Checks what the story of `record` asserts against the run's logs and dumps; returns the story."""
    lines = told(str(run), "--record", record)
    ack = next(line for line in lines[1:4] if "acknowledged at" in line)
    acked_at, offset = seconds(ack.split()[0]), int(re.search(r"offset (\d+)", ack).group(1))  # type: ignore[union-attr]
    by = next(line for line in lines if line.startswith("  by "))
    # the leader: the one the brokers' election lines name for the record's batch epoch, when it has one
    dump = pq.read_table(run / "replicas" / "replicas.parquet").to_pylist()
    epochs = {
        row["leader_epoch"]
        for row in dump
        if (row["partition"], row["offset"], row["value"]) == (partition, offset, record)
    }
    leaders = epoch_leaders(run, partition)
    stated = re.match(r"  by leader (\d+) \(ISR \[([\d, ]*)\]\)", by)
    if epochs and max(epochs) >= 0 and max(epochs) in leaders:
        assert stated is not None and int(stated.group(1)) == leaders[max(epochs)], (by, leaders, epochs)
    # the ISR: never one a broker's line at or before the ack contradicts, unless a later source is cited
    before = [(at, isr) for at, isr in isr_lines(run, partition) if at <= acked_at]
    if stated and before:
        cited = re.search(r"(?:says at|since) \+(\d+\.\d\d)s", by.split("the ISR as")[-1])
        assert cited is not None, by
        latest_at, latest_isr = before[-1]
        if latest_at > seconds(cited.group(1)) + 0.01:
            pytest.fail(f"{by!r} cites a source older than the ISR line at +{latest_at}s")
        if "broker" in by.split(" as ")[-1]:
            assert [int(node) for node in stated.group(2).split(", ")] == latest_isr, (by, before[-1])
    # the window: no timeline line before the header's "from"
    header = next(line for line in lines if line.startswith("what the cluster did"))
    since = seconds(re.search(r"from (\+\S+)\):", header).group(1))  # type: ignore[union-attr]
    timeline = section(lines, "what the cluster did")
    assert all(seconds(TIME.match(line).group(1)) >= since for line in timeline), timeline  # type: ignore[union-attr]
    # each line once: in the timeline and in each broker's log lines
    logs = section(lines, "the brokers' logs")
    heading = ""
    for shown in (timeline, logs):
        assert not [line for line, count in Counter(shown).items() if count > 1], shown
    per_broker: dict[str, list[str]] = {}
    for line in logs:
        if not TIME.match(line):
            heading = line
            continue
        per_broker.setdefault(heading, []).append(line.split("s  ", 1)[-1])
    for texts in per_broker.values():
        assert len(set(texts)) == len(texts), texts
    # a truncation names only offsets its broker's own lines, or the acknowledgement it took part in,
    # show it held
    holders = {int(node) for node in (stated.group(2).split(", ") if stated and stated.group(2) else [])}
    if stated:
        holders.add(int(stated.group(1)))
    for line in timeline:
        cut = re.search(
            r"broker (\d+) truncates its log to offset (\d+), cutting off offsets? (\d+)(?:-(\d+))?", line
        )
        if cut is None:
            continue
        broker, to, last = int(cut.group(1)), int(cut.group(2)), int(cut.group(4) or cut.group(3))
        at = seconds(TIME.match(line).group(1))  # type: ignore[union-attr]
        assert int(cut.group(3)) == to
        known = [end for node, when, end in log_ends(run, partition) if node == broker and when <= at]
        acked = broker in holders and acked_at <= at and last == offset
        assert (known and last < max(known)) or acked, (line, known, holders)
    return lines


def test_the_default_runs_record_was_acknowledged_by_the_leader_of_its_epoch_not_the_killed_one() -> None:
    lines = check_story(DEFAULT, "producer-0-1500", 0)
    by = next(line for line in lines if line.startswith("  by "))
    assert epoch_leaders(DEFAULT, 0)[1] == 3
    assert by.startswith("  by leader 3 (ISR [1, 3])") and "leader epoch 1" in by, by
    assert not any(line.startswith("  by leader 2") for line in lines)
    stale = lines[lines.index(by) + 1]
    assert stale.startswith("  the leader watcher last saw leader 2") and "kill#1" in stale, stale
    assert stale.endswith(": stale")


def test_the_default_runs_repeated_fetcher_warnings_are_one_line_each() -> None:
    logs = section(told(str(DEFAULT), "--record", "producer-0-1500"), "the brokers' logs")
    fetcher = [line for line in logs if "ReplicaFetcher" in line and "Error in response" in line]
    assert fetcher and all(re.search(r"repeated \d+ times, \+\S+s to \+\S+s$", line) for line in fetcher), (
        fetcher
    )
    assert len(fetcher) <= 3


def test_the_default_runs_truncation_is_told_once_with_what_the_broker_held() -> None:
    lines = check_story(DEFAULT, "producer-1-3534", 0)
    cuts = [line for line in lines if "truncates its log" in line and "+" in line.split()[0]]
    assert len(cuts) == 1 and cuts[0].endswith(
        "broker 3 truncates its log to offset 2361, cutting off offsets 2361-2362"
    )


@pytest.mark.parametrize(
    ("run", "record", "partition"),
    [(KIP101, "producer-0-44", 2), (KIP101, "producer-1-44", 2), (KIP101, "producer-0-5", 2),
     (DEFAULT, "producer-0-1500", 0), (DEFAULT, "producer-1-3534", 0), (DEFAULT, "producer-0-900", 0)],
)  # fmt: skip
def test_every_asserted_fact_agrees_with_the_logs_and_dumps(run: Path, record: str, partition: int) -> None:
    check_story(run, record, partition)


def test_the_kip101_truncations_cut_off_only_what_the_broker_held() -> None:
    lines = check_story(KIP101, "producer-0-44", 2)
    timeline = section(lines, "what the cluster did")
    # broker 3 loaded its log with log end offset 29, then truncated to 25 twice: the second cut nothing it
    # is known to have held, so only the first names offsets
    threes = [line for line in timeline if "broker 3 truncates" in line]
    assert threes[0].endswith("cutting off offsets 25-28") and threes[1].endswith("to offset 25"), threes


def test_the_divergence_runs_isr_at_the_ack_is_the_one_broker_1_logged() -> None:
    lines = told(str(DIVERGENCE))
    side = next(line for line in section(lines, "each side") if "from +23.24s" in line)
    first_ack = seconds(side.split(" from ")[1].split(" to ")[0])
    shrunk = [(at, isr) for at, isr in isr_lines(DIVERGENCE, 0) if at <= first_ack]
    assert shrunk[-1][1] == [1]
    assert "ISR [1, 2, 3]" not in side and "by leader 1 (ISR [1])" in side, side
    timeline = section(lines, "what the cluster did")
    since = seconds(
        re.search(
            r"from (\+\S+)\):", next(text for text in lines if text.startswith("what the cluster"))
        ).group(1)
    )  # type: ignore[union-attr]
    assert all(seconds(TIME.match(line).group(1)) >= since for line in timeline)  # type: ignore[union-attr]


def _planted(logs: dict[int, str] | None = None) -> RunEvidence:
    """A run whose watcher saw leader 2 at +1s, whose fault killed node 2 at +5s, and a record acked at
    +10s."""
    watch = {
        "process": "leader-watch",
        "topic": "t",
        "partition": 0,
        "wall_time": 101.0,
        "f": "leader",
        "value": None,
        "key": "2",
        "detail": '{"leader": 2, "isr": [1, 2, 3]}',
    }
    kill = {
        "process": "nemesis",
        "topic": None,
        "partition": None,
        "wall_time": 105.0,
        "f": "kill",
        "key": "kill#1",
        "value": "start",
        "detail": '{"description": "SIGKILL node 2", "nodes": [2]}',
    }
    rows = [
        {"process": "producer-0", "type": "invoke", "topic": "t", "partition": 0, "offset": None,
         "value": "v", "wall_time": 104.0, "index": 1, "error": None},
        {"process": "producer-0", "type": "ok", "topic": "t", "partition": 0, "offset": 7,
         "value": "v", "wall_time": 110.0, "index": 2, "error": None},
    ]  # fmt: skip
    return RunEvidence(100.0, {"v": rows}, [watch, kill], [], [], {}, logs, {})


def test_a_planted_stale_watcher_view_is_said_to_be_stale() -> None:
    evidence = _planted()
    led = led_at(evidence, sightings(evidence, "t", 0), 110.0)
    assert led.leader is None and led.stale is not None
    story = tell(evidence, Subject("v"))
    by = next(line for line in story if line.startswith("  by "))
    assert not by.startswith("  by leader 2"), by
    assert (
        "the leader watcher last saw leader 2 (ISR [1, 2, 3]) at +1.00s, before fault kill#1 at +5.00s" in by
    )
    assert by.endswith(": stale)"), by
    # with the new leader's own line before the ack, the leader is the line's and the watcher is called stale
    line = (
        "[1970-01-01 00:01:48,000] INFO [Broker id=3] Leader t-0 with topic id x starts at leader epoch 1 "
        "from offset 7 with partition epoch 1, high watermark 6, ISR [3,1], adding replicas []"
    )
    story = tell(_planted({3: line}), Subject("v"))
    by = next(number for number, text in enumerate(story) if text.startswith("  by "))
    assert story[by].startswith("  by leader 3 (ISR [1, 3]), as broker 3's log says at +8.00s"), story[by]
    assert story[by + 1].startswith("  the leader watcher last saw leader 2") and story[by + 1].endswith(
        ": stale"
    )
