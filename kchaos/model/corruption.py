"""What `corrupt` does to a file, decided from the file's bytes alone: which file of a replica's directory,
which bytes of it, and what they become.

Kafka promises to notice damage to what it wrote: each record batch carries a CRC, and a broker that did
not shut down cleanly re-reads its unflushed segments on start, truncating the log at the first batch that
does not check out (and rebuilding the segment's indexes), after which a follower fetches the rest again
from the leader. So the damage lands inside the last batch of the last segment, past its header: the records
themselves, where a flipped bit is what only the CRC can catch, not a length that already looks wrong. An
index's last entries, or the middle of a small text file (a checkpoint, `quorum-state`), get the same.

Pure (no Docker, no Kafka), so the choice of file and bytes is tested on bytes, and the fault
(`kchaos.nemesis.corrupt`) only reads and writes the file.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from kchaos.model.client_names import JAVA

#: The files `corrupt` can damage, by the name its `file` option gives them.
CorruptFile = Literal[
    "segment", "index", "timeindex", "leader-epoch-checkpoint", "metadata-log", "quorum-state"
]
CORRUPT_FILES: tuple[CorruptFile, ...] = (
    "segment", "index", "timeindex", "leader-epoch-checkpoint", "metadata-log", "quorum-state",
)  # fmt: skip
#: The files of the KRaft metadata log's directory rather than of the fault partition's (KRaft only).
METADATA_FILES: tuple[CorruptFile, ...] = ("metadata-log", "quorum-state")
#: How `corrupt` damages the bytes it picks: every bit inverted, set to zero, or the file cut there.
HOWS = ("flip", "truncate", "zero")
#: The least and most bytes one fault damages: one byte is the least damage there is; past 4 KiB a batch is
#: no longer damaged in its middle but wiped, which says nothing more about how Kafka checks its data.
BYTES_RANGE = (1, 4096)

#: The KRaft metadata log's directory in a node's log dir (`__cluster_metadata`, its one partition).
METADATA_DIR = "__cluster_metadata-0"
#: A log segment's and its indexes' names: the segment's base offset, twenty digits.
_SEGMENT_NAME = re.compile(r"(\d{20})\.(log|index|timeindex)")
#: The suffix each file option picks among a directory's segments.
_SUFFIX = {"segment": "log", "metadata-log": "log", "index": "index", "timeindex": "timeindex"}
#: The single-file options and the file each names.
_NAMED = {"leader-epoch-checkpoint": "leader-epoch-checkpoint", "quorum-state": "quorum-state"}
#: Bytes per entry of an offset index (relative offset, position) and of a time index (timestamp, offset).
_ENTRY = {"index": 8, "timeindex": 12}
#: A batch's offset (8 bytes) and length (4) come first, and its magic byte sits at 16 in every format: the
#: v2 batch header is 61 bytes long, a v0/v1 message's header (crc, magic, attributes, timestamp) 26.
_LOG_OVERHEAD = 12
_MAGIC_AT = 16
_HEADER = {2: 61, 1: 26, 0: 18}


class CorruptionError(ValueError):
    """The file holds nothing `corrupt` can damage as asked (no complete batch, an empty file)."""


@dataclass(frozen=True)
class Damage:
    """The bytes `corrupt` damages: `length` bytes from `start` (for `truncate`, the file is cut at `start`
    and `length` is how many bytes that drops), and what in the file they are."""

    start: int
    length: int
    where: str


def directory_of(file: CorruptFile, topic: str, partition: int) -> str:
    """The directory in a log dir holding the file: the fault partition's, or the metadata log's."""
    return METADATA_DIR if file in METADATA_FILES else f"{topic}-{partition}"


def pick_file(file: CorruptFile, names: Iterable[str]) -> str | None:
    """The file of a directory's `names` that `file` means: the last segment's log or index (the highest
    base offset; the active segment), or the named checkpoint; None if the directory has none."""
    listed = [name.strip() for name in names]
    if file in _NAMED:
        return _NAMED[file] if _NAMED[file] in listed else None
    found = [m for m in map(_SEGMENT_NAME.fullmatch, listed) if m is not None and m.group(2) == _SUFFIX[file]]
    return max(found, key=lambda m: int(m.group(1))).group(0) if found else None


def last_batch(data: bytes) -> tuple[int, int] | None:
    """(start, end) of the last complete record batch (a message, before format v2) of a log segment."""
    position, last = 0, None
    while position + _LOG_OVERHEAD <= len(data):
        length = int.from_bytes(data[position + 8 : position + 12], "big", signed=True)
        end = position + _LOG_OVERHEAD + length
        if length <= 0 or end > len(data):
            break
        last = (position, end)
        position = end
    return last


def choose_damage(file: CorruptFile, how: str, count: int, data: bytes) -> Damage:
    """Where `count` bytes of damage go in `data`, the content of a file `file` names.

    A segment: the middle of its last batch's records (past the batch header), or, to truncate, the file cut
    `count` bytes before that batch's end (never before its records). An index: its last entries (an index
    of the active segment is allocated ahead, zeros after its entries). A checkpoint or `quorum-state`: its
    middle, or its last `count` bytes cut. At most the part named is damaged, whatever `count` asks.
    """
    if not data:
        raise CorruptionError("the file is empty: nothing to damage")
    if file in ("segment", "metadata-log"):
        batch = last_batch(data)
        if batch is None:
            raise CorruptionError("the segment holds no complete record batch")
        start, end = batch
        magic = data[start + _MAGIC_AT] if start + _MAGIC_AT < end else 2
        body = min(end - 1, start + _HEADER.get(magic, _HEADER[2]))
        where = (
            f"the records of the last batch (bytes {start}-{end} of the segment, its header {body - start})"
        )
        return _within(how, count, body, end, len(data), where)
    if file in _ENTRY:
        entry = _ENTRY[file]
        used = len(data.rstrip(b"\0"))
        used = -(-used // entry) * entry
        if used == 0:
            return _within(how, count, 0, min(len(data), entry), len(data), "its first entry (it has none)")
        low = max(0, used - -(-count // entry) * entry)
        return _within(how, count, low, used, len(data), f"its last entries (of {used // entry})")
    return _within(how, count, 0, len(data), len(data), "its text")


def _within(how: str, count: int, low: int, high: int, size: int, where: str) -> Damage:
    """`count` bytes (at most the span) in the middle of [low, high); for `truncate`, the file cut at
    `high - count` (at least `low`), dropping everything after."""
    length = min(count, high - low)
    if how == "truncate":
        cut = high - length
        return Damage(cut, size - cut, where)
    return Damage(low + (high - low - length) // 2, length, where)


def damaged(data: bytes, how: str, damage: Damage) -> bytes:
    """`data` with `damage` done as `how` says: bits inverted, bytes zeroed, or the file cut."""
    end = damage.start + damage.length
    if how == "truncate":
        return data[: damage.start]
    if how == "zero":
        return data[: damage.start] + bytes(damage.length) + data[end:]
    return data[: damage.start] + bytes(b ^ 0xFF for b in data[damage.start : end]) + data[end:]


def checksum(data: bytes) -> str:
    """A file's CRC-32 and size, to say in the history that it changed (`zero` over zeros would not)."""
    return f"crc32:{zlib.crc32(data):08x} size:{len(data)}"


def readers_check_crcs(client: str) -> bool:
    """Whether a run's readers check each record's CRC as they read, by `--client`: kchaos sets no
    `check.crcs`, so each client's default holds, off in librdkafka and on in the Java consumer. A batch
    damaged on disk and served to a reader that does not check is read as whatever its bytes now say."""
    return client == JAVA
