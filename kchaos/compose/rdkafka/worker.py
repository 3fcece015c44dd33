"""kchaos's librdkafka producer as a process of its own: what `--client librdkafka-process` writes with,
one per container (image `kchaos/rdkafka-client:<confluent-kafka version>`, kchaos/harness/rdkafka_image.py).

Why a process: a producer thread inside the harness shares the harness's GIL with every other producer,
the readers and the history writer (measured at 0.45-0.60x Kafka's ProducerPerformance), and no fault can
reach it. As a process it has an interpreter of its own and can be killed, paused or cut off like an
application's client.

It speaks the Java worker's line protocol (kchaos/compose/client/KchaosProducer.java), read by the same
recorder (kchaos/workloads/processes/worker_recorder.py): one tab-separated line per event, its kind, then the
worker's CLOCK_MONOTONIC in nanoseconds (`time.monotonic_ns()`, the clock the harness stamps its own rows
with), then the kind's fields: `started VERSION`, `invoke VALUE PARTITION` (written out before produce()), `ok
VALUE PARTITION OFFSET`, `error VALUE PARTITION ERROR MESSAGE` (the delivery report's error),
`refused VALUE PARTITION ERROR MESSAGE` (raised by produce() itself: never in the client's queue),
`stopped SENT OUTSTANDING`. Lines are written in batches, but every `invoke` reaches stdout before its
produce() is called and every outcome as soon as the poll that served it returns: what the process printed
before it died is what it did.

Arguments are `name=value`, as the Java worker's: `kchaos.mode` (`sends`, the default, is this module's;
another mode runs module `kchaos.compose.rdkafka.<mode>_worker`, whose `run(worker, settings)` takes the
split arguments and returns the exit status), `kchaos.process`, `kchaos.topic`, `kchaos.partitions`,
`kchaos.interval.us` (0: as fast as the client takes sends), `kchaos.limit`, `kchaos.drain.ms`; every other
pair is a librdkafka property (the harness gives it the in-process producer's settings,
kchaos/workloads/in_harness/producer.py `producer_settings`). Values are `<process>-<n>`, key the same,
partition n modulo the partitions.

Import-light on purpose: the image holds these worker modules (at their dotted names), Python's standard
library and confluent-kafka, so they import nothing else of kchaos.
"""

from __future__ import annotations

import importlib
import io
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from kchaos.compose.rdkafka.line_formats import ACKED, ERRORED, INVOKED, REFUSED, STARTED, STOPPED

PREFIX = "kchaos."
#: How far behind schedule sends may fall and still be made up (as the in-process producer's Pacer).
MAX_LAG_NS = 100_000_000
#: Sends made in one go when unpaced, between serving delivery reports.
UNPACED_BATCH = 500
#: How long a send waits for delivery reports before it tries a full client queue again.
QUEUE_FULL_POLL_S = 0.01
#: Shortest wait for delivery reports between paced sends (librdkafka counts whole milliseconds).
MIN_POLL_S = 0.001
#: What splits fields and lines in the protocol: never left inside a field.
SEPARATORS = ("\t", "\n", "\r", "\x1e")
#: Exit status of a worker whose client failed fatally: the harness's supervisor starts a new process.
FATAL_EXIT = 3
#: Exit status of a worker given arguments it cannot run with.
BAD_ARGUMENTS_EXIT = 2
#: What a worker can be (`kchaos.mode`): a workload's producer or group member, the assigned reader of
#: `sends` and `txn` (`reader`), or the check of a run's settings before it starts (`settings`); all but
#: `sends` live in a module of their own.
MODES = ("sends", "txn", "group", "eos", "reader", "settings")
SENDS = "sends"


def line(kind: str, *fields: str) -> str:
    """One event line without its end (`Lines.flush` ends it): its kind, the worker's monotonic clock in
    nanoseconds, its fields. A tab, newline or record separator inside a field (an error message) would
    break the protocol (the harness ends a line at either, kchaos/harness/client_container.py), so each
    becomes a space."""
    clean = (" ".join(f.split()) if any(c in f for c in SEPARATORS) else f for f in fields)
    return "\t".join((kind, str(time.monotonic_ns()), *clean))


def split_arguments(args: Sequence[str]) -> tuple[dict[str, str], dict[str, str]]:
    """The worker's own `kchaos.` arguments and the client's properties; ValueError for one not name=value."""
    worker: dict[str, str] = {}
    settings: dict[str, str] = {}
    for arg in args:
        name, equals, value = arg.partition("=")
        if not equals or not name:
            raise ValueError(f"argument {arg!r} is not name=value")
        (worker if name.startswith(PREFIX) else settings)[name] = value
    return worker, settings


class Schedule:
    """How many sends are due now: one per `interval_ns`, or a batch at a time when unpaced (0)."""

    def __init__(self, interval_ns: int) -> None:
        self.interval_ns = interval_ns
        self.next_at = time.monotonic_ns()

    def due(self) -> int:
        if self.interval_ns == 0:
            return UNPACED_BATCH
        now = time.monotonic_ns()
        if self.next_at < now - MAX_LAG_NS:
            self.next_at = now  # behind schedule (a stalled client): carry on from now
        if self.next_at > now:
            return 0
        count = (now - self.next_at) // self.interval_ns + 1
        self.next_at += count * self.interval_ns
        return count

    def wait_s(self) -> float:
        if self.interval_ns == 0:
            return 0.0
        return max(MIN_POLL_S, (self.next_at - time.monotonic_ns()) / 1e9)


class Lines:
    """The worker's stdout: lines gathered, then written out together by `flush`, each ended by the ASCII
    record separator and the write by one newline, as the Java workers do (kchaos/harness/client_container.py
    ends a line at either). When stdout went through the engine's log stream, which costs a JSON record and
    a write per newline, a newline per line had a 10,000 sends/s run spend most of a core of the two in
    `dockerd`; stdout is a file now, and one write per flush is still the cheapest."""

    def __init__(self, out: io.BufferedWriter) -> None:
        self.out = out
        self.pending: list[str] = []

    def add(self, kind: str, *fields: str) -> None:
        self.pending.append(line(kind, *fields))

    def add_invoked(self, sends: Sequence[tuple[str, int]]) -> None:
        """An `invoke` line for each send (value, partition) about to be made, all at one reading of the
        clock: they are printed together, before the first of them is produced. The values are the
        worker's own (`process-n`), so nothing in them needs cleaning (`line`): at tens of thousands of sends
        a second, cleaning fields the worker made itself was a fifth of its time per send."""
        stamp = time.monotonic_ns()
        self.pending.extend(f"{INVOKED}\t{stamp}\t{value}\t{partition}" for value, partition in sends)

    def add_acknowledged(self, value: str, partition: int, offset: int | None) -> None:
        """The `ok` line of a send of the worker's own value (`add_invoked`), as `line` would spell it."""
        self.pending.append(f"{ACKED}\t{time.monotonic_ns()}\t{value}\t{partition}\t{offset_field(offset)}")

    def flush(self) -> None:
        if self.pending:
            self.out.write(("\x1e".join(self.pending) + "\n").encode())
            self.pending.clear()
        self.out.flush()


def offset_field(offset: int | None) -> str:
    """An acknowledged record's offset as its line's field: empty when librdkafka reports none (None, as it
    does for some retried sends), which the harness records as an `ok` without an offset."""
    return str(offset) if offset is not None and offset >= 0 else ""


def delivery_line(lines: Lines, outstanding: list[int]) -> Callable[[Any, Any], None]:
    """The producer's delivery report callback: the send's outcome as a line."""

    def delivered(error: Any, message: Any) -> None:
        outstanding[0] -= 1
        value = message.value().decode()
        if error is None:
            lines.add_acknowledged(value, message.partition(), message.offset())
        else:
            lines.add(ERRORED, value, str(message.partition()), error.name(), error.str())

    return delivered


def mode_module(mode: str) -> str:
    """The module that runs `mode` (ValueError for one kchaos has no worker for)."""
    if mode not in MODES:
        raise ValueError(f"kchaos.mode={mode!r} is none of {', '.join(MODES)}")
    return __name__ if mode == SENDS else f"{__package__}.{mode}_worker"


def main(args: Sequence[str]) -> int:  # pragma: no cover - runs in the client container
    try:
        worker, settings = split_arguments(args)
        module = mode_module(worker.get("kchaos.mode", SENDS))
    except ValueError as exc:
        print(f"kchaos rdkafka worker: bad arguments: {exc}", file=sys.stderr)
        return BAD_ARGUMENTS_EXIT
    runner: Callable[[dict[str, str], dict[str, str]], int] = importlib.import_module(module).run
    return runner(worker, settings)


def run(worker: dict[str, str], settings: dict[str, str]) -> int:  # pragma: no cover - in the container
    """The `sends` mode: paced sends, each line as the module's docstring says."""
    from confluent_kafka import KafkaException, Producer, libversion

    try:
        process = worker["kchaos.process"]
        topic = worker["kchaos.topic"]
        partitions = int(worker["kchaos.partitions"])
        interval_ns = int(worker["kchaos.interval.us"]) * 1000
        limit = int(worker.get("kchaos.limit", "-1"))
        drain_s = int(worker["kchaos.drain.ms"]) / 1000
        queue_wait_s = int(settings.get("message.timeout.ms", "30000")) / 1000
    except (ValueError, KeyError) as exc:
        print(f"kchaos rdkafka worker: bad arguments: {exc}", file=sys.stderr)
        return BAD_ARGUMENTS_EXIT
    stopping = [False]
    signal.signal(signal.SIGTERM, lambda *_: stopping.__setitem__(0, True))
    lines = Lines(io.BufferedWriter(io.FileIO(1, "w", closefd=False), 1 << 16))
    outstanding = [0]
    fatal: list[Any] = []

    def on_error(error: Any) -> None:
        if error.fatal():
            fatal.append(error)

    producer = Producer({**settings, "on_delivery": delivery_line(lines, outstanding), "error_cb": on_error})
    lines.add(STARTED, libversion()[0])
    lines.flush()
    schedule = Schedule(interval_ns)
    sent = 0
    while not stopping[0] and not fatal and (limit < 0 or sent < limit):
        due = schedule.due()
        if limit >= 0:
            due = min(due, limit - sent)
        batch = [(f"{process}-{n}", n % partitions) for n in range(sent, sent + due)]
        sent += due
        lines.add_invoked(batch)
        lines.flush()  # every invoke is out before its produce()
        for value, partition in batch:
            encoded = value.encode()
            give_up_at = time.monotonic() + queue_wait_s
            while True:
                try:
                    producer.produce(topic, encoded, encoded, partition)
                    outstanding[0] += 1
                    break
                except BufferError:  # the queue is full: serve reports to make room, as Java blocks
                    if time.monotonic() < give_up_at and not stopping[0] and not fatal:
                        producer.poll(QUEUE_FULL_POLL_S)
                        lines.flush()
                        continue
                    lines.add(
                        "refused", value, str(partition), "_QUEUE_FULL", "the client's queue stayed full"
                    )
                    break
                except KafkaException as exc:
                    error = exc.args[0]
                    lines.add(REFUSED, value, str(partition), error.name(), error.str())
                    break
        try:
            producer.poll(schedule.wait_s())
        except KafkaException as exc:
            fatal.append(exc.args[0])
        lines.flush()
    deadline = time.monotonic() + drain_s
    while outstanding[0] > 0 and time.monotonic() < deadline:
        try:
            producer.poll(0.05)
        except KafkaException:
            break
        lines.flush()
    lines.add(STOPPED, str(sent), str(outstanding[0]))
    lines.flush()
    if fatal:
        print(f"kchaos rdkafka worker: fatal client error: {fatal[0]}", file=sys.stderr, flush=True)
    # Not flush()/close(): they would wait for sends the drain gave up on; those are indeterminate.
    os._exit(FATAL_EXIT if fatal else 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
