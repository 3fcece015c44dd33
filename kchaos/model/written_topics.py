"""The topics a run's producers write (`--topics N`): the test topic, then `<topic>-1` ... `<topic>-<N-1>`,
made alike, and which producer and reader takes which.

Each producer writes one topic and each reader reads one, the `i`th the topic `i` modulo N: a producer's
process then keeps its one-topic rows and its worker's line protocol, and the run still writes N topics at
once, so several partitions' leaders take writes side by side and a fault aimed at one leaves the others
writing. Readers that alternate isolation levels (`--isolation mixed`: consumer-0 read_committed,
consumer-1 read_uncommitted, ...) go in pairs, so each topic is read at both levels. Every check already
goes by topic, partition and offset; the report adds a row per topic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kchaos.model.events import output_topic
from kchaos.model.fault_table import kinds_treated_as
from kchaos.model.workload_names import EOS, SENDS, TXN, Workload

#: The most topics a run writes: each takes a producer of its own and, with readers, a reader.
MAX_TOPICS = 8

#: The workloads that write several topics: the others read one input topic in their group members or
#: eos processors, whose protocol lines name partitions only.
MULTI_TOPIC_WORKLOADS: tuple[Workload, ...] = (SENDS, TXN)


def written_topics(topic: str, count: int) -> tuple[str, ...]:
    """The `count` topics the producers write, the test topic first (the one faults aim at)."""
    return (topic, *(f"{topic}-{index}" for index in range(1, count)))


def made_topics(topic: str, count: int, workload: Workload) -> tuple[str, ...]:
    """The topics a run creates, made alike: those its producers write (`written_topics`), and for
    `--workload eos` its processors' output topic."""
    written = written_topics(topic, count)
    return (*written, output_topic(topic)) if workload == EOS else written


def run_topics(config: Mapping[str, object]) -> tuple[str, ...]:
    """The topics a run's producers wrote, as its config.json records them (`topic`, `topics`); none for a
    history that names no test topic (one converted from another tool)."""
    topic, count = config.get("topic"), config.get("topics")
    if not isinstance(topic, str):
        return ()
    return written_topics(topic, count if isinstance(count, int) and count > 0 else 1)


def topics_by_process(names: Sequence[str], topic: str, count: int, paired: bool = False) -> dict[str, str]:
    """Each of `names` (the producers' or the readers' processes, in order) with the topic it takes: the
    `i`th topic `i` modulo `count`, or with `paired` readers (alternating isolation levels) `i // 2`."""
    topics = written_topics(topic, count)
    return {name: topics[(index // 2 if paired else index) % count] for index, name in enumerate(names)}


def topics_refusal(
    workload: Workload,
    topics: int,
    producers: int,
    consumers: int,
    faults: Iterable[str] = (),
    paired: bool = False,
) -> str | None:
    """Why `--topics` cannot run with the other settings (`faults`: the fault names or specs the plan
    runs; `paired`: the readers alternate isolation levels), naming the fix; None when it can."""
    if topics == 1:
        return None
    if workload not in MULTI_TOPIC_WORKLOADS:
        takes = " or ".join(f"--workload {name}" for name in MULTI_TOPIC_WORKLOADS)
        return (
            f"--topics {topics}: --workload {workload} reads one input topic in its group members or "
            f"processors; leave --topics out or use {takes}"
        )
    power = sorted({fault.partition(":")[0] for fault in faults} & kinds_treated_as("power-loss"))
    if power:
        return (
            f"--topics {topics} with {power[0]}: after a power loss each partition is judged by what the "
            "loss did to its own replicas, which the leader watch records for the test topic only; run "
            "the power loss with one topic (leave --topics out)"
        )
    if producers < topics:
        return (
            f"--topics {topics} needs a producer for each topic (producer-i writes topic i modulo "
            f"{topics}), and --producers {producers} starts fewer: give --producers {topics} or more"
        )
    readers = 2 * topics if paired else topics
    if 0 < consumers < readers:
        each = (
            "two readers for each topic, one of each isolation level (consumer-i reads topic i/2 modulo "
            f"{topics})"
            if paired
            else f"a reader for each topic (consumer-i reads topic i modulo {topics})"
        )
        return (
            f"--topics {topics} needs {each}, and --consumers {consumers} starts fewer: give --consumers "
            f"{readers} or more, or 0 (only the final read)"
        )
    return None
