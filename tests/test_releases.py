"""What each release needs: the broker jar's Scala build, jaxb on Java 17, the metadata modes it runs in."""

from __future__ import annotations

import pytest

from harness.releases import Release


@pytest.mark.parametrize(
    ("version", "artifact", "jaxb", "modes"),
    [
        ("0.10.2.2", "kafka_2.11", True, ("zookeeper",)),
        ("0.11.0.3", "kafka_2.11", True, ("zookeeper",)),
        ("1.1.1", "kafka_2.12", True, ("zookeeper",)),
        ("2.3.1", "kafka_2.12", False, ("zookeeper",)),
        ("2.8.2", "kafka_2.13", False, ("zookeeper",)),
        ("3.3.2", "kafka_2.13", False, ("kraft", "zookeeper")),
        ("3.9.2", "kafka_2.13", False, ("kraft", "zookeeper")),
        ("4.0.0", "kafka_2.13", False, ("kraft",)),
        ("4.3.1", "kafka_2.13", False, ("kraft",)),
    ],
)
def test_each_release_gets_its_jars_and_modes(
    version: str, artifact: str, jaxb: bool, modes: tuple[str, ...]
) -> None:
    release = Release.parse(version)
    assert (release.scala_artifact, release.needs_jaxb, release.metadata_modes) == (artifact, jaxb, modes)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("0.10.1.1", "use 0.10.2.2 or newer"),
        ("4.1", "digits.digits.digits"),
        ("1.2.3.4.5", "digits.digits.digits"),
    ],
)
def test_what_is_no_release_kchaos_runs_says_why(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        Release.parse(text)
