"""Which broker property names Kafka knows, release by release, and what a `--broker-config` key Kafka does
not know means.

A broker ignores a property it does not know: it may be meant for a plugin (an authorizer, a metric
reporter, remote storage), which is handed every property. So `--broker-config log.flush.intervl.messages=1`
ran without a word, the user believing flush was set. The names each release knows are read from its own
jars (`broker_property_names.tsv`, made by tools/broker_property_names.py from the broker's ConfigDef) and
a key is judged against them:

- no release knows it, and it is a small edit away from one that does: a misspelling, refused with the name
  meant;
- the chosen release does not know it and another does: refused, naming those releases (only for a release
  of a line that was read: a newer one may know it);
- a key under a plugin's or a listener's prefix, or one near no known name: passed on, since a plugin may
  read it, with a warning at run start that Kafka ignores it otherwise.
"""

from __future__ import annotations

import difflib
import importlib.resources
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from kchaos.model.releases import Release

#: The data file beside this module.
DATA_FILE_NAME = "broker_property_names.tsv"

#: How alike a key and a known name must be for the key to be taken for a misspelling
#: (`difflib.SequenceMatcher.ratio`): one character wrong, missing or extra in a name of 10 or more.
CLOSE = 0.9

#: Where the broker reads listener-prefixed overrides of a known name (`listener.name.internal.ssl.…`): not
#: in the ConfigDef, and read by the broker itself.
LISTENER_PREFIX = "listener.name."
#: Prefixes (and whole names) whose properties belong to plugins Kafka hands every property to: security
#: providers and callbacks (`ssl.`, `sasl.`), remote storage's managers (`remote.log.storage.`,
#: `remote.log.metadata.`, and their default prefixes `rsm.config.`, `rlmm.config.`), authorizers
#: (`authorizer.`, `super.users`, `allow.everyone.if.no.acl.found`), metric reporters (`metric.reporters.`,
#: `kafka.metrics.`, `cruise.control.metrics.`), and Confluent's own broker (`confluent.`). Not refused even
#: when near a known name, nor when another release knows them.
PLUGIN_PREFIXES = (
    "ssl.", "sasl.", "remote.log.storage.", "remote.log.metadata.", "rsm.config.", "rlmm.config.",
    "authorizer.", "super.users", "allow.everyone.if.no.acl.found", "metric.reporters.", "kafka.metrics.",
    "cruise.control.metrics.", "confluent.",
)  # fmt: skip


@dataclass(frozen=True)
class BrokerNames:
    """The releases read, oldest first, and for each name the first and the last of them that know it."""

    releases: tuple[str, ...]
    known: dict[str, tuple[str, str]]

    def line_read(self, version: str) -> str | None:
        """The release read of `version`'s release line (4.3.0 -> 4.3.1); None when no release of its line
        was read, so what it knows is not known here."""
        try:
            line = Release(version).parts[:2]
        except ValueError:  # an image's label may name its release otherwise (`kchaos.harness.image`)
            return None
        return next((read for read in self.releases if Release(read).parts[:2] == line), None)

    def knows(self, name: str, release: str) -> bool:
        """Whether release `release`, one of those read, knows `name`."""
        if name not in self.known:
            return False
        first, last = self.known[name]
        index = self.releases.index
        return index(first) <= index(release) <= index(last)


@cache
def broker_names() -> BrokerNames:
    """The names of the data file, read once."""
    text = importlib.resources.files("kchaos.model").joinpath(DATA_FILE_NAME).read_text(encoding="utf-8")
    releases: tuple[str, ...] = ()
    known: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        if line.startswith("# releases:"):
            releases = tuple(line.removeprefix("# releases:").split())
        elif line and not line.startswith("#") and not line.startswith("name\t"):
            name, first, last = line.split("\t")
            known[name] = (first, last)
    return BrokerNames(releases, known)


def _known_by(first: str, last: str) -> str:
    return f"Kafka {first}" if first == last else f"Kafka {first} to {last}"


def broker_name_refusal(key: str, version: str | None) -> str | None:
    """Why `--broker-config` may not set `key` on Kafka `version` (None: not known, the version's own
    check failed), and the fix; None when Kafka knows it or may hand it to a plugin."""
    names = broker_names()
    release = names.line_read(version) if version is not None else None
    if key.startswith((LISTENER_PREFIX, *PLUGIN_PREFIXES)):
        return None
    if key in names.known:
        if release is None or names.knows(key, release):
            return None
        first, last = names.known[key]
        return (
            f"{key}: Kafka {version} does not know this broker property and would ignore it; "
            f"{_known_by(first, last)} know it (of the releases {names.releases[0]} to {names.releases[-1]} "
            "kchaos read); remove it, or pick one of those with --kafka-version"
        )
    meant = _close_name(key, release)
    if meant is None or (version is not None and release is None):
        return None  # a release kchaos did not read may know a name near one it read
    return (
        f"{key}: no Kafka release knows this broker property, and Kafka would ignore it (it hands unknown "
        f"ones to plugins only); did you mean {meant}?"
    )


def broker_name_warning(key: str, version: str) -> str | None:
    """The warning a run starts with for a `key` that passed `broker_name_refusal` and Kafka `version`
    does not know: that only a plugin reads it. None when the broker itself reads it."""
    names = broker_names()
    release = names.line_read(version)
    if key.startswith(LISTENER_PREFIX) or (release is None and key in names.known):
        return None
    if release is not None and names.knows(key, release):
        return None
    plugins = "it hands it to its plugins (authorizer, metric reporters, remote storage) only, and ignores it"
    if release is not None:
        return f"warning: Kafka {version} does not know the broker property {key}: {plugins} otherwise"
    # Of a line not read, what the release knows is not known here: say only what is.
    meant = _close_name(key, release)
    near = f" (did you mean {meant}?)" if meant is not None else ""
    return (
        f"warning: no Kafka release kchaos read ({names.releases[0]} to {names.releases[-1]}) knows the "
        f"broker property {key}{near}; if Kafka {version} does not either, {plugins} otherwise"
    )


def broker_config_warnings(properties: Iterable[str], version: str) -> list[str]:
    """The warnings a run on Kafka `version` starts with, one a line, for the `--broker-config` keys in
    `properties` that only a plugin reads."""
    warnings = (broker_name_warning(key, version) for key in properties)
    return [warning for warning in warnings if warning is not None]


def _close_name(key: str, release: str | None) -> str | None:
    """The known name `key` is most likely a misspelling of, preferring those `release` knows."""
    names = broker_names()
    mine = [name for name in names.known if release is not None and names.knows(name, release)]
    for candidates in (mine, list(names.known)):
        found = difflib.get_close_matches(key, candidates, n=1, cutoff=CLOSE)
        if found:
            return found[0]
    return None
