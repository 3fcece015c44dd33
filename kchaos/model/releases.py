"""What each Kafka release needs from kchaos: its jars' Scala build, the cluster modes it can run in.

Releases kchaos builds images for run from 0.10.2 (the oldest with the APIs librdkafka needs and named
listeners, KIP-103) to the newest 4.x, all on Java 17, the only JVM Debian bookworm ships:

- the broker jar is published per Scala version: `kafka_2.11` for 0.10.x and 0.11.x (the build measured
  to start on Java 17), `kafka_2.12` for 1.0 to 2.3, `kafka_2.13` from 2.4;
- releases before 2.0 use `javax.xml.bind`, gone from the JDK since 11, so their image adds `jaxb-api`
  (without it 0.10.2.2 dies with `NoClassDefFoundError: javax/xml/bind/DatatypeConverter`);
- before 3.3 a cluster needs ZooKeeper; 3.3 to 3.9 run in either mode; 4.0 removed ZooKeeper;
- the idempotent producer came in 0.11 (KIP-98): a 0.10 broker refuses its InitProducerId request.

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
    def group_fenced_transactions(self) -> bool:
        """Whether its brokers fence a transactional producer by its consumer group's generation (KIP-447),
        which a consume-transform-produce loop with one transactional.id per processor needs."""
        return self.parts >= FIRST_GROUP_FENCED_TRANSACTIONS


#: Every release kchaos knows to build an image of: published on Maven Central (the jars the recipe fetches)
#: from the oldest kchaos runs on. A version outside it failed only when Maven could not find its jars,
#: a screenful of Maven output after the run had begun; add a release here when Apache publishes it.
#: (3.3.0 was never published: the 3.3 line starts at 3.3.1.)
BUILDABLE: tuple[str, ...] = (
    "0.10.2.0", "0.10.2.1", "0.10.2.2",
    "0.11.0.0", "0.11.0.1", "0.11.0.2", "0.11.0.3",
    "1.0.0", "1.0.1", "1.0.2",
    "1.1.0", "1.1.1",
    "2.0.0", "2.0.1",
    "2.1.0", "2.1.1",
    "2.2.0", "2.2.1", "2.2.2",
    "2.3.0", "2.3.1",
    "2.4.0", "2.4.1",
    "2.5.0", "2.5.1",
    "2.6.0", "2.6.1", "2.6.2", "2.6.3",
    "2.7.0", "2.7.1", "2.7.2",
    "2.8.0", "2.8.1", "2.8.2",
    "3.0.0", "3.0.1", "3.0.2",
    "3.1.0", "3.1.1", "3.1.2",
    "3.2.0", "3.2.1", "3.2.2", "3.2.3",
    "3.3.1", "3.3.2",
    "3.4.0", "3.4.1",
    "3.5.0", "3.5.1", "3.5.2",
    "3.6.0", "3.6.1", "3.6.2",
    "3.7.0", "3.7.1", "3.7.2",
    "3.8.0", "3.8.1",
    "3.9.0", "3.9.1", "3.9.2",
    "4.0.0", "4.0.1",
    "4.1.0", "4.1.1",
    "4.2.0",
    "4.3.0", "4.3.1",
)  # fmt: skip


def buildable_text() -> str:
    """The releases kchaos builds, each line's patches together: `0.10.2.0-0.10.2.2, ..., 4.3.0-4.3.1`."""
    lines: dict[str, list[str]] = {}
    for text in BUILDABLE:
        lines.setdefault(text.rsplit(".", 1)[0], []).append(text)
    return ", ".join(f"{found[0]}-{found[-1]}" if len(found) > 1 else found[0] for found in lines.values())


def check_buildable(value: str) -> None:
    """A ValueError naming the releases kchaos builds, unless `value` is one of them."""
    if value not in BUILDABLE:
        raise ValueError(
            f"kchaos knows no Kafka release {value} to build an image of; it builds {buildable_text()}. "
            "For another release, pass an image of it with --kafka-image"
        )


def check_kafka_version(value: str) -> str:
    """`value` if it names a release kchaos can build, else a ValueError saying what one looks like.

    Checked even with `--kafka-image`: the version is then what the run records when the image's labels
    and tag name none, and a typo would mislabel every report of the run.
    """
    return Release.parse(value).text
