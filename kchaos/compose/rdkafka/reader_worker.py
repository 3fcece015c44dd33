"""kchaos's assigned reader as a process of its own: `kchaos.mode=reader` of the librdkafka worker
(kchaos/compose/rdkafka/worker.py), what `--client librdkafka-process` reads `--workload sends` and `txn`
with (`consumer-N`), so the nemesis can kill, freeze or cut off a reader as it does a producer.

It does what the in-process reader does (kchaos/workloads/in_harness/consumer.py `ConsumerProcess`): assigns
every partition of `kchaos.topic` (`kchaos.partitions` of them) from `kchaos.from` (`partition=offset`, comma
separated; a partition not named starts from the beginning), and prints every record it is handed. Its
lines are the group member's protocol (kchaos/compose/rdkafka/group_worker.py) where a reader does the
same: `started VERSION`, `poll PARTITION OFFSET KEY VALUE`, `stopped POLLED`; and its own where it differs:
`assign PARTITIONS FROM` (FROM as `kchaos.from`: where this process started reading), `poll-error ERROR
MESSAGE PARTITION` (PARTITION empty when the error is no partition's), `hold` and `release`. Each line has
the worker's monotonic clock second, as every worker's.

Held back on request (a scenario's lagging reader, `hold()` in kchaos/workloads/processes/rdkafka/reader.py):
SIGUSR1 holds it, SIGHUP releases it (not SIGUSR2: the Java reader worker takes the same pair, and HotSpot
keeps SIGUSR2 for itself). A signal needs no stdin (the harness starts clients detached) and reaches
the process through the container's init; the harness sends it again until the process's `hold` or
`release` line says it took effect, so a signal lost (to a process still starting) costs a retry, not a
reader stuck. Held, it pauses its assignment, as the in-process reader does
(librdkafka drops what it had prefetched, so nothing of the held period reaches it later from a stale local
queue), and polls nothing until released. `kchaos.hold=true` starts it held (a reader restarted while the
readers are held).

A fatal client error is printed as a `poll-error` and ends the process (exit `FATAL_EXIT`): the harness
starts a new one from the positions it recorded, as the in-process reader starts a new client. At SIGTERM
it stops polling and closes its client.

Imports only the standard library, confluent-kafka and the worker modules (the image holds nothing else).
"""

from __future__ import annotations

import io
import os
import signal
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kchaos.compose.rdkafka.group_worker import (
    BATCH,
    PARTITION_EOF,
    POLL_TIMEOUT_S,
    offsets_field,
    text_field,
)
from kchaos.compose.rdkafka.line_formats import (
    ASSIGNED,
    HELD,
    POLL_ERROR,
    POLLED,
    RELEASED,
    STARTED,
    STOPPED,
)
from kchaos.compose.rdkafka.worker import BAD_ARGUMENTS_EXIT, FATAL_EXIT, Lines

#: The worker's mode (`kchaos.mode`) that is an assigned reader.
READER_MODE = "reader"
#: The signals that hold a reader back and let it go.
HOLD_SIGNAL, RELEASE_SIGNAL = signal.SIGUSR1, signal.SIGHUP
#: How long a held reader sleeps between looks at whether it was released.
HELD_SLEEP_S = 0.2


def parse_positions(text: str) -> dict[int, int]:
    """`kchaos.from`'s `0=12,2=7` as next offsets by partition (ValueError for anything else)."""
    positions: dict[int, int] = {}
    for pair in (p for p in text.split(",") if p):
        partition, equals, offset = pair.partition("=")
        if not equals or int(partition) < 0 or int(offset) < 0:
            raise ValueError(f"kchaos.from: {pair!r} is not partition=offset")
        positions[int(partition)] = int(offset)
    return positions


@dataclass(frozen=True)
class ReaderArguments:
    """The reader's own arguments."""

    topic: str
    partitions: int
    #: Next offset by partition; a partition not here is read from the beginning.
    positions: dict[int, int] = field(default_factory=dict)
    held: bool = False


def reader_arguments(worker: Mapping[str, str]) -> ReaderArguments:
    """The reader's arguments from the worker's `kchaos.` ones (KeyError or ValueError when they are bad)."""
    partitions = int(worker["kchaos.partitions"])
    positions = parse_positions(worker.get("kchaos.from", ""))
    held = worker.get("kchaos.hold", "false")
    if partitions < 1 or any(p >= partitions for p in positions) or held not in ("true", "false"):
        raise ValueError(
            f"kchaos.partitions={partitions}, kchaos.from names partitions {sorted(positions)}, "
            f"kchaos.hold={held!r}: need at least one partition, positions within them, hold true or false"
        )
    return ReaderArguments(worker["kchaos.topic"], partitions, positions, held == "true")


class ReaderLines:
    """What one reader prints."""

    def __init__(self, lines: Lines) -> None:
        self.lines = lines
        self.polled = 0

    def assigned(self, partitions: int, positions: Mapping[int, int]) -> None:
        self.lines.add(ASSIGNED, ",".join(str(p) for p in range(partitions)), offsets_field(dict(positions)))
        self.lines.flush()

    def handed(self, partition: int, offset: int, key: bytes | None, value: bytes | None) -> None:
        """A record handed over (printed at the batch's flush)."""
        self.lines.add(POLLED, str(partition), str(offset), text_field(key), text_field(value))
        self.polled += 1

    def poll_error(self, name: str, message: str, partition: int | None) -> None:
        """An error the client reported; the end of a partition is none."""
        if name != PARTITION_EOF:
            where = "" if partition is None or partition < 0 else str(partition)
            self.lines.add(POLL_ERROR, name, message, where)

    def steered(self, held: bool) -> None:
        self.lines.add(HELD if held else RELEASED)
        self.lines.flush()


class Steering:
    """What the signals asked for, set by their handlers and read by the reader's loop."""

    def __init__(self, held: bool) -> None:
        self.held = held
        self.stopping = False

    def install(self) -> None:
        signal.signal(HOLD_SIGNAL, lambda *_: setattr(self, "held", True))
        signal.signal(RELEASE_SIGNAL, lambda *_: setattr(self, "held", False))
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stopping", True))


def run(worker: dict[str, str], settings: dict[str, str]) -> int:  # pragma: no cover - in the container
    """The `reader` mode: the reader's loop, each line as the module's docstring says."""
    try:
        args = reader_arguments(worker)
    except (KeyError, ValueError) as exc:
        print(f"kchaos rdkafka reader: bad arguments: {exc}", file=sys.stderr)
        return BAD_ARGUMENTS_EXIT
    steering = Steering(args.held)
    steering.install()  # before anything slow: a signal the harness sends early must not end the process
    from confluent_kafka import (
        OFFSET_BEGINNING,
        Consumer,
        KafkaError,
        KafkaException,
        TopicPartition,
        libversion,
    )

    out = ReaderLines(Lines(io.BufferedWriter(io.FileIO(1, "w", closefd=False), 1 << 16)))
    fatal: list[KafkaError] = []

    def on_error(error: KafkaError) -> None:
        if error.fatal():
            fatal.append(error)

    consumer = Consumer({**settings, "error_cb": on_error})
    start = [
        TopicPartition(args.topic, p, args.positions.get(p, OFFSET_BEGINNING)) for p in range(args.partitions)
    ]
    consumer.assign(start)
    out.lines.add(STARTED, libversion()[0])
    out.assigned(args.partitions, args.positions)
    paused = False
    while not steering.stopping and not fatal:
        if steering.held != paused:
            paused = steering.held
            assignment: list[Any] = consumer.assignment()
            (consumer.pause if paused else consumer.resume)(assignment)
            out.steered(paused)
            continue
        if paused:
            time.sleep(HELD_SLEEP_S)
            continue
        try:
            messages = consumer.consume(num_messages=BATCH, timeout=POLL_TIMEOUT_S)
        except KafkaException as exc:
            error = exc.args[0]
            if error.fatal():
                fatal.append(error)  # printed as the process ends
            else:
                out.poll_error(error.name(), error.str(), None)
                out.lines.flush()
            continue
        for message in messages:
            error = message.error()
            partition, offset = message.partition(), message.offset()
            if error is None and partition is not None and offset is not None:
                out.handed(partition, offset, message.key(), message.value())
            elif error is not None:
                out.poll_error(error.name(), error.str(), partition)
        out.lines.flush()
    if fatal:
        out.poll_error(fatal[0].name(), fatal[0].str(), None)
        out.lines.flush()
        print(f"kchaos rdkafka reader: fatal client error: {fatal[0]}", file=sys.stderr, flush=True)
        os._exit(FATAL_EXIT)
    try:
        consumer.close()
    except (KafkaException, RuntimeError) as exc:
        print(f"kchaos rdkafka reader: close failed: {exc}", file=sys.stderr, flush=True)
    out.lines.add(STOPPED, str(out.polled))
    out.lines.flush()
    os._exit(0)
