"""What each release needs: the broker jar's Scala build, jaxb on Java 17, the metadata modes it runs in."""

from __future__ import annotations

import pytest

from kchaos.model.releases import Release


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
    assert release.default_metadata_mode == ("kraft" if "kraft" in modes else "zookeeper")


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


@pytest.mark.parametrize(
    ("version", "mode", "says"),
    [
        ("0.11.0.3", "kraft", "pass --metadata zookeeper"),
        ("3.2.3", "kraft", "KRaft came in 3.3"),
        ("4.0.0", "zookeeper", "4.0 removed ZooKeeper"),
        ("4.3.1", "zookeeper", "use --metadata kraft"),
    ],
)
def test_a_mode_the_release_lacks_is_refused_with_the_way_it_runs(version: str, mode: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        Release.parse(version).check_metadata_mode(mode)


@pytest.mark.parametrize(("version", "mode"), [("0.10.2.2", "zookeeper"), ("3.9.2", "zookeeper"),
                                               ("3.9.2", "kraft"), ("4.3.1", "kraft")])  # fmt: skip
def test_a_mode_the_release_has_passes(version: str, mode: str) -> None:
    Release.parse(version).check_metadata_mode(mode)


@pytest.mark.parametrize(
    ("version", "idempotent"), [("0.10.2.2", False), ("0.11.0.3", True), ("4.3.1", True)]
)
def test_the_idempotent_producer_came_in_0_11(version: str, idempotent: bool) -> None:
    assert Release.parse(version).idempotent_producer is idempotent
