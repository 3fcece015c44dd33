"""`corrupt`: its options refused before anything starts, the file and bytes it picks, what it does to them,
and the broker lines it keeps. The effect on Kafka is tests/cluster/test_fault_effects.py's."""

from __future__ import annotations

import pytest

from kchaos.model.corruption import (
    BYTES_RANGE,
    CORRUPT_FILES,
    HOWS,
    Damage,
    checksum,
    choose_damage,
    damaged,
    directory_of,
    last_batch,
    pick_file,
)
from kchaos.model.fault_definition import Shape
from kchaos.model.fault_mix import drawable_specs
from kchaos.model.fault_options import SpecError
from kchaos.model.fault_spec import check_cluster, parse_spec
from kchaos.model.fault_table import option_values
from kchaos.nemesis.corrupt import broker_lines


def batch(base_offset: int, records: bytes, magic: int = 2) -> bytes:
    """A record batch as a segment holds it: offset, length, the rest of its header (61 bytes in all in
    format v2), then its records."""
    header_rest = 61 - 12 if magic == 2 else 26 - 12
    body = bytearray(header_rest) + records
    body[16 - 12] = magic
    return base_offset.to_bytes(8, "big") + len(body).to_bytes(4, "big") + bytes(body)


SEGMENT = batch(0, b"a" * 100) + batch(5, b"b" * 200)
LAST = (len(batch(0, b"a" * 100)), len(SEGMENT))


def test_the_defaults_parse_and_spell_as_the_fault_alone() -> None:
    spec = parse_spec("corrupt")
    assert dict(spec.options) == {"target": "followers", "file": "segment", "how": "flip", "bytes": "64"}
    assert str(spec) == "corrupt"
    assert str(parse_spec("corrupt:file=index:how=zero:bytes=8:target=2")) == (
        "corrupt:bytes=8:file=index:how=zero:target=2"
    )


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            "corrupt:file=journal",
            ["file must be one of", "segment", "quorum-state", "e.g. corrupt:file=index"],
        ),
        ("corrupt:how=burn", ["how must be one of", "flip, truncate, zero"]),
        ("corrupt:bytes=0", ["bytes must be from 1 to 4096", "e.g. corrupt:bytes=64"]),
        ("corrupt:bytes=4097", ["bytes must be from 1 to 4096"]),
        ("corrupt:bytes=lots", ["bytes must be a whole number"]),
        ("corrupt:target=all", ["target=all may name several nodes", "one node id like 2"]),
        ("corrupt:target=majority", ["target=majority may name several nodes"]),
        ("corrupt:target=1+3", ["target=1+3 may name several nodes"]),
        ("corrupt:target=zookeeper", ["zookeeper not understood"]),
        ("corrupt:target=producer-0", ["is a client process"]),
        ("corrupt:size=3", ["option 'size=3' not understood", "file=...", "how=...", "bytes=..."]),
    ],
)
def test_bad_options_are_refused_naming_the_field_and_the_fix(text: str, words: list[str]) -> None:
    with pytest.raises(SpecError) as refused:
        parse_spec(text)
    assert all(word in str(refused.value) for word in words), str(refused.value)


@pytest.mark.parametrize(
    ("text", "shape", "words"),
    [
        ("corrupt:file=metadata-log", (3, 3, "zookeeper"), ["KRaft file", "--metadata kraft"]),
        ("corrupt:file=quorum-state", (3, 3, "zookeeper"), ["KRaft file"]),
        ("corrupt:target=leader", (3, 1, "kraft"), ["every replica", "--replication-factor 2 or more"]),
        ("corrupt", (3, 1, "kraft"), ["followers", "--replication-factor 1 has none"]),
        ("corrupt:target=4", (3, 3, "kraft"), ["names node 4", "--brokers"]),
    ],
)
def test_what_the_cluster_lacks_is_refused_before_it_starts(
    text: str, shape: tuple[int, int, str], words: list[str]
) -> None:
    brokers, replication_factor, metadata = shape
    with pytest.raises(SpecError) as refused:
        check_cluster(parse_spec(text), Shape(brokers, replication_factor, metadata))
    assert all(word in str(refused.value) for word in words), str(refused.value)


def test_a_zookeeper_cluster_takes_the_partition_s_own_files() -> None:
    check_cluster(parse_spec("corrupt:file=leader-epoch-checkpoint"), Shape(3, 3, "zookeeper"))


def test_a_mix_draws_only_single_node_targets() -> None:
    class Shape:
        brokers, replication_factor, metadata, workload, consumers, client, producers = 3, 3, "kraft", "sends", 1, "librdkafka", 1  # fmt: skip  # noqa: E501
        spare_brokers = controllers = spare_controllers = 0

    drawn = drawable_specs("corrupt", Shape())
    targets = {spec.split("target=")[1] for spec in drawn}
    assert {"leader", "followers", "random", "controller", "1", "2", "3"} <= targets
    assert not targets & {"all", "majority", "minority"}, drawn


def test_the_file_is_the_partition_s_last_segment_or_the_named_checkpoint() -> None:
    names = ["00000000000000000000.log", "00000000000000001234.log", "00000000000000001234.index",
             "00000000000000000000.index", "00000000000000001234.timeindex", "00000000000000999.log.deleted",
             "leader-epoch-checkpoint", "partition.metadata"]  # fmt: skip
    assert pick_file("segment", names) == "00000000000000001234.log"
    assert pick_file("index", names) == "00000000000000001234.index"
    assert pick_file("timeindex", names) == "00000000000000001234.timeindex"
    assert pick_file("leader-epoch-checkpoint", names) == "leader-epoch-checkpoint"
    assert pick_file("quorum-state", names) is None
    assert (
        pick_file("metadata-log", ["00000000000000000042.log", "quorum-state"]) == "00000000000000000042.log"
    )
    assert directory_of("segment", "t", 2) == "t-2"
    assert (
        directory_of("quorum-state", "t", 2) == directory_of("metadata-log", "t", 0) == "__cluster_metadata-0"
    )


def test_the_last_complete_batch_is_found_and_a_torn_tail_ignored() -> None:
    assert last_batch(SEGMENT) == LAST
    assert last_batch(SEGMENT + b"\0\0\0") == LAST  # a preallocated or torn tail
    assert last_batch(SEGMENT + batch(9, b"c" * 50)[:40]) == LAST
    assert last_batch(b"short") is None


@pytest.mark.parametrize("how", ["flip", "zero"])
def test_a_segment_is_damaged_in_its_last_batch_s_records_past_the_header(how: str) -> None:
    damage = choose_damage("segment", how, 64, SEGMENT)
    start, end = LAST
    assert start + 61 <= damage.start and damage.start + damage.length <= end and damage.length == 64
    assert damage.start - (start + 61) == end - (damage.start + damage.length)  # the middle of the records
    after = damaged(SEGMENT, how, damage)
    assert len(after) == len(SEGMENT) and after[: start + 61] == SEGMENT[: start + 61]
    changed = [i for i in range(len(SEGMENT)) if after[i] != SEGMENT[i]]
    assert changed == list(range(damage.start, damage.start + damage.length))
    assert checksum(after) != checksum(SEGMENT)


def test_more_bytes_than_the_records_damage_the_records_alone() -> None:
    start, end = LAST
    damage = choose_damage("segment", "flip", 4096, SEGMENT)
    assert damage == Damage(start + 61, end - start - 61, damage.where)


def test_truncation_cuts_inside_the_last_batch_and_drops_its_tail() -> None:
    start, end = LAST
    damage = choose_damage("segment", "truncate", 10, SEGMENT + b"\0" * 5)
    assert damage.start == end - 10 and damage.length == 15
    assert damaged(SEGMENT, "truncate", damage) == SEGMENT[: end - 10]
    whole = choose_damage("segment", "truncate", 4096, SEGMENT)
    assert whole.start == start + 61  # never into the header: the batch still begins as a batch


def test_an_old_format_message_is_damaged_past_its_own_header() -> None:
    segment = batch(0, b"v" * 40, magic=1)
    damage = choose_damage("segment", "flip", 8, segment)
    assert damage.start >= 26 and damage.start + damage.length <= len(segment)


def test_an_index_is_damaged_in_its_last_entries_not_in_its_preallocated_zeros() -> None:
    entries = b"".join(i.to_bytes(4, "big") + (i * 4096).to_bytes(4, "big") for i in range(1, 11))
    index = entries + bytes(1000)
    damage = choose_damage("index", "flip", 16, index)
    assert damage == Damage(len(entries) - 16, 16, damage.where) and "of 10" in damage.where
    assert choose_damage("index", "truncate", 8, index) == Damage(
        len(entries) - 8, len(index) - 72, damage.where
    )
    empty = choose_damage("timeindex", "flip", 64, bytes(120))
    assert (empty.start, empty.length) == (0, 12)


def test_a_text_file_is_damaged_in_its_middle_or_cut_at_its_end() -> None:
    text = b"0\n2\n0 0\n3 1234\n"
    assert choose_damage("leader-epoch-checkpoint", "flip", 4, text).start == (len(text) - 4) // 2
    cut = choose_damage("quorum-state", "truncate", 5, text)
    assert damaged(text, "truncate", cut) == text[:-5]


def test_nothing_is_damaged_in_an_empty_or_batchless_file() -> None:
    from kchaos.model.corruption import CorruptionError

    with pytest.raises(CorruptionError, match="empty"):
        choose_damage("index", "flip", 8, b"")
    with pytest.raises(CorruptionError, match="no complete record batch"):
        choose_damage("segment", "flip", 8, b"x" * 20)


def test_kchaos_faults_lists_the_files_and_ways_a_spec_accepts() -> None:
    listed = dict(option_values())
    assert listed["file"].startswith(" or ".join(CORRUPT_FILES) + " (")
    assert listed["how"].startswith(" or ".join(HOWS) + " (")
    for file in CORRUPT_FILES:
        assert parse_spec(f"corrupt:file={file}").option("file") == file
    for how in HOWS:
        assert parse_spec(f"corrupt:how={how}").option("how") == how


def test_the_bytes_range_is_what_the_parser_enforces() -> None:
    low, high = BYTES_RANGE
    parse_spec(f"corrupt:bytes={low}")
    parse_spec(f"corrupt:bytes={high}")


def test_the_broker_s_lines_about_the_damage_are_kept_and_others_left() -> None:
    log = "\n".join([
        "[2026-11-26 19:20:00,0] INFO [LogLoader partition=t-0, dir=/k] Recovering unflushed "
        "segment 0. 0/1 recovered for t-0. (kafka.log.LogLoader$)",
        "[2026-11-26 19:20:00,1] WARN Found invalid messages in log segment /var/lib/kafka/data/t-0/"
        "00000000000000000000.log at byte offset 4096: Record is corrupt (kafka.log.LogSegment)",
        "[2026-11-26 19:20:00,2] INFO [LogLoader partition=t-1, dir=/k] Recovering unflushed "
        "segment 0 (kafka.log.LogLoader$)",
        "[2026-11-26 19:20:00,3] INFO [KafkaServer id=2] started (kafka.server.KafkaServer)",
        "[2026-11-26 19:20:00,3] INFO [QuorumController id=3] Replayed PartitionRecord for new partition t-0 "
        "with PartitionRegistration(replicas=[1, 2, 3], leaderRecoveryState=RECOVERED) (QuorumController)",
        "[2026-11-26 19:20:00,4] ERROR Exiting Kafka due to fatal exception (kafka.Kafka$)",
    ])  # fmt: skip
    kept = broker_lines(log, ("t-0", "00000000000000000000.log"))
    assert [line.split()[2:4] for line in kept] == [
        ["INFO", "[LogLoader"],
        ["WARN", "Found"],
        ["ERROR", "Exiting"],
    ]
