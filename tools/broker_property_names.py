"""Regenerates kchaos/model/broker_property_names.tsv: every broker property each Kafka release knows, read
from the release's own jars, with the first and last release read that knows it.

Run by hand from a clone when a release line is added (`python tools/broker_property_names.py`); CI does not
run it, since it downloads every release's broker jar and its dependencies from Maven Central (about a
minute a release the first time, Maven's local repository after). It needs Maven and a JDK (17).

Each release's names are its broker ConfigDef's (`BrokerConfigNames.java` beside this file), loaded from the
broker jar with its dependencies on the classpath: reading the ConfigDef itself, not string constants, gives
exactly the names the broker parses, its log and topic defaults included, and nothing else.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kchaos.model.releases import Release  # noqa: E402

#: Where kchaos reads the names (`kchaos.model.broker_property_names`).
DATA_FILE = ROOT / "kchaos" / "model" / "broker_property_names.tsv"
#: The newest patch release of each line kchaos builds (`kchaos.model.releases.buildable_lines`), so that a
#: release of any line is judged by its own line's names.
RELEASES = (
    "0.10.2.2", "0.11.0.3", "1.0.2", "1.1.1", "2.0.1", "2.1.1", "2.2.2", "2.3.1", "2.4.1", "2.5.1", "2.6.3",
    "2.7.2", "2.8.2", "3.0.2", "3.1.2", "3.2.3", "3.3.2", "3.4.1", "3.5.2", "3.6.2", "3.7.2", "3.8.1",
    "3.9.2", "4.0.2", "4.1.2", "4.2.1", "4.3.1",
)  # fmt: skip

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>kchaos.tools</groupId><artifactId>broker-property-names</artifactId><version>1</version>
<dependencies><dependency><groupId>org.apache.kafka</groupId><artifactId>{artifact}</artifactId>
<version>{version}</version></dependency></dependencies></project>
"""

HEADER = """\
# The broker properties each Kafka release knows: the names in its broker ConfigDef (KafkaConfig's), read
# from the release's jars by tools/broker_property_names.py. Do not edit by hand; run that script.
# first and last: the oldest and the newest of the releases read that know the name.
# releases: {releases}
name\tfirst\tlast
"""


def names_of(version: str, work: Path) -> list[str]:
    """The broker property names Kafka `version` knows."""
    folder = work / version
    folder.mkdir()
    (folder / "pom.xml").write_text(POM.format(artifact=Release(version).scala_artifact, version=version))
    subprocess.run(
        ["mvn", "-B", "-q", "dependency:build-classpath", "-Dmdep.outputFile=classpath.txt"],
        cwd=folder, check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    classpath = (folder / "classpath.txt").read_text().strip()
    program = Path(__file__).with_name("BrokerConfigNames.java")
    printed = subprocess.run(
        ["java", "-cp", classpath, str(program)], check=True, capture_output=True, text=True
    ).stdout
    return printed.split()


def main() -> None:
    known: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as work:
        for version in RELEASES:
            names = names_of(version, Path(work))
            print(f"{version}: {len(names)} broker properties", file=sys.stderr)
            for name in names:
                known.setdefault(name, []).append(version)
    rows = []
    for name, versions in sorted(known.items()):
        first, last = RELEASES.index(versions[0]), RELEASES.index(versions[-1])
        if list(RELEASES[first : last + 1]) != versions:
            sys.exit(f"{name} is known by {versions}, with a gap: the file's first-last rows cannot say so")
        rows.append(f"{name}\t{versions[0]}\t{versions[-1]}\n")
    DATA_FILE.write_text(HEADER.format(releases=" ".join(RELEASES)) + "".join(rows), encoding="utf-8")
    print(f"wrote {len(rows)} names to {DATA_FILE.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
