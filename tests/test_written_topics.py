"""`--topics N`: which topics a run creates, writes and reads, and which process takes which."""

from __future__ import annotations

from pathlib import Path

from kchaos.checkers.topic_tally import tally_line
from kchaos.model.config import load_config
from kchaos.model.events import consumer_process, producer_process
from kchaos.model.written_topics import topics_by_process, written_topics
from kchaos.runner.outcome import RunOutcome
from kchaos.runner.run_steps import topics


def test_the_test_topic_comes_first_and_the_others_are_numbered_after_it() -> None:
    assert written_topics("orders", 1) == ("orders",)
    assert written_topics("orders", 3) == ("orders", "orders-1", "orders-2")


def test_each_producer_and_reader_takes_the_topic_of_its_number_modulo_n() -> None:
    producers = [producer_process(i) for i in range(5)]
    assert topics_by_process(producers, "t", 2) == {
        "producer-0": "t",
        "producer-1": "t-1",
        "producer-2": "t",
        "producer-3": "t-1",
        "producer-4": "t",
    }
    readers = [consumer_process(i) for i in range(3)]
    assert set(topics_by_process(readers, "t", 3).values()) == {"t", "t-1", "t-2"}
    # Readers alternating isolation levels go in pairs, so each topic is read at both.
    paired = topics_by_process([consumer_process(i) for i in range(4)], "t", 2, paired=True)
    assert list(paired.values()) == ["t", "t", "t-1", "t-1"]


def test_a_txn_run_of_several_topics_reads_each_at_both_levels_by_default() -> None:
    config = load_config(workload="txn", topics=3, producers=3)
    assert config.consumers == 6
    levels = (
        {config.reader_isolation(i) for i in range(0, 6, 2)},
        {config.reader_isolation(i) for i in range(1, 6, 2)},
    )
    assert levels == ({"read_committed"}, {"read_uncommitted"})


def test_a_run_creates_every_topic_it_writes_and_an_eos_run_its_output_too() -> None:
    assert topics(load_config(topics=3, producers=3, consumers=3)) == ["kchaos", "kchaos-1", "kchaos-2"]
    assert topics(load_config(workload="eos")) == ["kchaos", "kchaos-out"]
    assert topics(load_config(topics=2, consumers=0)) == ["kchaos", "kchaos-1"]


def test_the_run_s_last_lines_say_each_topic_s_counts_when_it_wrote_several(tmp_path: Path) -> None:
    tally = {
        "kchaos": {"acknowledged": 1200, "read_final": 1200, "read_poll": 1200, "unread": 0},
        "kchaos-1": {"acknowledged": 1190, "read_final": 1189, "read_poll": 1189, "unread": 1},
    }
    results = {"topics": {"tally": tally, "line": tally_line(tally)}}
    lines = RunOutcome(tmp_path, results, tmp_path / "report.html").run_lines()
    assert lines == [
        "topics: kchaos: 1,200 acknowledged, 1,200 in the final read, 0 never read; "
        "kchaos-1: 1,190 acknowledged, 1,189 in the final read, 1 never read"
    ]
    assert RunOutcome(tmp_path, {}, tmp_path / "report.html").run_lines() == []
