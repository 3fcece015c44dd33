"""What each Kafka release needs from kchaos: its jars' Scala build, the cluster modes it can run in.

Releases kchaos builds images for run from 0.10.2 (the oldest with the APIs librdkafka needs and named
listeners, KIP-103) to the newest 4.x, all on Java 17, the only JVM Debian bookworm ships:

- the broker jar is published per Scala version: `kafka_2.11` for 0.10.x and 0.11.x (the build measured
  to start on Java 17), `kafka_2.12` for 1.0 to 2.3, `kafka_2.13` from 2.4;
- releases before 2.0 use `javax.xml.bind`, gone from the JDK since 11, so their image adds `jaxb-api`
  (without it 0.10.2.2 dies with `NoClassDefFoundError: javax/xml/bind/DatatypeConverter`);
- before 3.3 a cluster needs ZooKeeper; 3.3 to 3.9 run in either mode; 4.0 removed ZooKeeper;
- the idempotent producer came in 0.11 (KIP-98): a 0.10 broker refuses its InitProducerId request;
- the Java producer's `delivery.timeout.ms` came in 2.1 (KIP-91), and with it retries by default: before,
  a send was retried only when `retries` said so, and timed out by `request.timeout.ms` alone.

This module is the one place these facts live: the image recipe and the configuration ask it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

MetadataMode = Literal["kraft", "zookeeper"]

#: The release runs use unless told otherwise.
DEFAULT_KAFKA_VERSION = "4.3.1"

#: The oldest release kchaos builds, and the first that runs without ZooKeeper in production (KIP-833).
OLDEST = (0, 10, 2)
FIRST_KRAFT = (3, 3)
FIRST_WITHOUT_ZOOKEEPER = (4, 0)
FIRST_IDEMPOTENT = (0, 11)
FIRST_DELIVERY_TIMEOUT = (2, 1)
#: KIP-447: offsets committed in a transaction carry the group's generation, so a zombie processor is fenced
#: by the group rather than by a transactional.id per input partition.
FIRST_GROUP_FENCED_TRANSACTIONS = (2, 5)

#: A Kafka release as Maven Central and the image tags name it: 4.3.1, or an old four-part 0.10.2.2.
_VERSION = re.compile(r"[0-9]+(\.[0-9]+){2,3}")


@dataclass(frozen=True)
class Release:
    """One Kafka release, e.g. `4.3.1` or `0.10.2.2` (before 1.0 releases had four numbers)."""

    text: str

    @classmethod
    def parse(cls, text: str) -> Release:
        """The release `text` names; a ValueError saying what one looks like otherwise."""
        if not _VERSION.fullmatch(text):
            raise ValueError(
                f"{text!r} is not a Kafka release; give one as digits.digits.digits, "
                f"e.g. {DEFAULT_KAFKA_VERSION}"
            )
        release = cls(text)
        if release.parts < OLDEST:
            raise ValueError(
                f"{text} is older than the oldest release kchaos runs ({'.'.join(map(str, OLDEST))}): "
                "librdkafka needs its ApiVersions request; use 0.10.2.2 or newer"
            )
        return release

    @property
    def parts(self) -> tuple[int, ...]:
        return tuple(int(part) for part in self.text.split("."))

    @property
    def scala_artifact(self) -> str:
        """The Maven artifact of the broker jar for this release."""
        if self.parts < (1, 0):
            return "kafka_2.11"
        if self.parts < (2, 4):
            return "kafka_2.12"
        return "kafka_2.13"

    @property
    def needs_jaxb(self) -> bool:
        return self.parts < (2, 0)

    @property
    def metadata_modes(self) -> tuple[MetadataMode, ...]:
        """The ways a cluster of this release can keep its metadata, the default first."""
        if self.parts < FIRST_KRAFT:
            return ("zookeeper",)
        if self.parts < FIRST_WITHOUT_ZOOKEEPER:
            return ("kraft", "zookeeper")
        return ("kraft",)

    @property
    def default_metadata_mode(self) -> MetadataMode:
        """The mode a cluster of this release runs in unless told: KRaft where it has it."""
        return self.metadata_modes[0]

    def check_metadata_mode(self, mode: str) -> None:
        """A ValueError saying why this release cannot keep its metadata in `mode`, and which way it can."""
        if mode in self.metadata_modes:
            return
        if mode == "zookeeper":
            raise ValueError(
                f"{self.text} has no ZooKeeper mode: 4.0 removed ZooKeeper; use --metadata kraft, or a "
                "release from 3.3 to 3.9 (before 3.3 ZooKeeper is the only mode)"
            )
        if mode == "kraft":
            raise ValueError(
                f"{self.text} runs only with ZooKeeper (KRaft came in {'.'.join(map(str, FIRST_KRAFT))}): "
                "pass --metadata zookeeper, or pick 3.3 or newer for KRaft"
            )
        raise ValueError(f"{mode!r} is no metadata mode; use kraft or zookeeper")

    @property
    def idempotent_producer(self) -> bool:
        """Whether its brokers take idempotent producers (InitProducerId, sequence numbers)."""
        return self.parts >= FIRST_IDEMPOTENT

    @property
    def delivery_timeout(self) -> bool:
        """Whether its Java producer bounds a send by `delivery.timeout.ms` and retries by default
        (KIP-91)."""
        return self.parts >= FIRST_DELIVERY_TIMEOUT

    @property
    def group_fenced_transactions(self) -> bool:
        """Whether its brokers fence a transactional producer by its consumer group's generation (KIP-447),
        which a consume-transform-produce loop with one transactional.id per processor needs."""
        return self.parts >= FIRST_GROUP_FENCED_TRANSACTIONS


#: The newest release line kchaos builds and has run: a later line may change what the image recipe
#: assumes (a jar's name, a tool's class), so it is added here once a run on it has passed.
NEWEST_LINE = (4, 3)
#: The minor lines of each major version between the oldest and the newest line, as Apache released them.
_LINES_OF_MAJOR: dict[int, range] = {0: range(10, 12), 1: range(0, 2), 2: range(0, 9), 3: range(0, 10)}


def buildable_lines() -> tuple[tuple[int, int], ...]:
    """Every release line kchaos builds images of, oldest first: 0.10 (from 0.10.2) to `NEWEST_LINE`."""
    lines = [(major, minor) for major, minors in _LINES_OF_MAJOR.items() for minor in minors]
    return (*lines, *((NEWEST_LINE[0], minor) for minor in range(NEWEST_LINE[1] + 1)))


def buildable_text() -> str:
    """The release lines kchaos builds, runs of a major version together: `0.10.2, 0.11, 1.0-1.1, ...`."""
    oldest = ".".join(map(str, OLDEST))
    runs: dict[int, list[int]] = {}
    for major, minor in buildable_lines():
        runs.setdefault(major, []).append(minor)
    spans = [f"{major}.{minors[0]}-{major}.{minors[-1]}" for major, minors in runs.items()]
    return ", ".join(span.replace(f"{OLDEST[0]}.{OLDEST[1]}-", f"{oldest}-", 1) for span in spans)


def check_buildable(value: str) -> None:
    """A ValueError naming the release lines kchaos builds, unless `value` belongs to one of them.

    A version of a line no Kafka ever had (9.9.9) used to fail only when Maven could not find its jars, a
    screenful of Maven output after the run had begun. Only the line is checked, not the patch: which
    patches Apache has published is Maven Central's to say, and a list kept here would refuse the next one.
    """
    if tuple(Release.parse(value).parts[:2]) not in buildable_lines():
        raise ValueError(
            f"kchaos builds no image of Kafka {value}: it builds the release lines {buildable_text()} "
            "(any release of them on Maven Central). For another release, pass an image of it with "
            "--kafka-image"
        )


def check_kafka_version(value: str) -> str:
    """`value` if it names a release kchaos can build, else a ValueError saying what one looks like.

    Checked even with `--kafka-image`: the version is then what the run records when the image's labels
    and tag name none, and a typo would mislabel every report of the run.
    """
    return Release.parse(value).text
