"""`kchaos run --replay RUN_DIR`: a run again as the original ran, its faults on the original's nodes.

The same configuration and seed plan the same faults, but a fault's target is resolved when it starts,
against the cluster as it is then: Kafka placed the topic's replicas elsewhere (KRaft's placer starts at a
random broker), another broker led, and `clock:target=followers` hit [1, 3] where the original hit [2, 3].
A replay therefore takes three things from the original's directory: its configuration (`config.json`:
every setting, the seed too), where its topics' replicas were (`assignment.json`, created again so, which
makes the same broker lead first), and the nodes each fault hit and the choices it made beyond them (its
history's start and stop rows: a one-way cut's receivers, the replicas add-broker or a drain moved, the
clients hit), which each fault of the same key keeps to while they are valid (`kchaos.nemesis.pinning`).

Options given beside `--replay` override the original's, except those that would change the plan or the
topics' placement: the run would no longer be a replay of the original, and is refused naming them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kchaos.model.client_names import LIBRDKAFKA_PROCESS
from kchaos.model.config import KAFKA_REPO, ConfigError, RunConfig, load_config
from kchaos.model.fault_plan import plan
from kchaos.model.run_files import ASSIGNMENT_NAME, CONFIG_NAME, HISTORY_FILES, RunDir
from kchaos.model.topic_assignment import AssignmentUnreadable, misfit, read_assignment
from kchaos.model.written_topics import made_topics
from kchaos.runner.config_options import flag_name

if TYPE_CHECKING:
    from kchaos.model.fault_pins import Pins  # loads Arrow: not for `kchaos run --help`

#: The option, as the user types it.
REPLAY_FLAG = "--replay"
#: The settings that decide where the topics' replicas can go: one given beside --replay that changes them
#: leaves the recorded assignment nothing to place.
TOPIC_SHAPE = ("topic", "partitions", "replication_factor", "brokers", "workload")
#: The setting that leaves planned faults out: the one that may change a replay's plan.
SHRINKS = "without"


class ReplayRefused(ValueError):
    """A replay that cannot be made as asked; the message names the option and the fix."""


@dataclass(frozen=True)
class Replay:
    """What a replay takes from the run it replays beside its configuration: what each fault key hit and
    chose, and each topic's replica lists."""

    source: Path
    pins: Pins
    assignment: dict[str, dict[int, tuple[int, ...]]]


def original_values(settings: Mapping[str, Any], run_dir: Path) -> dict[str, Any]:
    """The `load_config` values that configure the original run again, from its `config.json`: every
    setting it records, except its run id (a replay is a run of its own) and those it recorded resolved
    where the original left them to kchaos (the image built for its release, a Java client of the
    cluster's release, the librdkafka of threads in the harness; a librdkafka process's release is kept,
    so the replay runs the client the original ran). The runs directory is the one the original's
    directory is in."""
    values = {key: value for key, value in settings.items() if key in RunConfig.model_fields}
    values.pop("run_id", None)
    if values.get("kafka_image") == f"{KAFKA_REPO}:{values.get('kafka_version')}":
        values.pop("kafka_image")
    if values.get("java_client_version") == values.get("kafka_version"):
        values.pop("java_client_version")
    if values.get("client") != LIBRDKAFKA_PROCESS:  # the threads' librdkafka is the harness's, no choice
        values.pop("librdkafka_version", None)
    values["runs_dir"] = run_dir.parent
    return values


def replay_run_id(original: str, runs_dir: Path) -> str:
    """`<original>-replay`, or `-replay-2`, ... when that directory exists: beside the original, named for
    it (cut so the id stays within the 100 characters a run id may have)."""
    base = f"{original[:89]}-replay"
    for number in range(1, 1000):
        name = base if number == 1 else f"{base}-{number}"
        if not (runs_dir / name).exists():
            return name
    raise ReplayRefused(
        f"{REPLAY_FLAG} {runs_dir / original}: {runs_dir} already holds 999 replays of it; remove some, or "
        "name this one with --run-id"
    )


def read_replay(run_dir: Path) -> tuple[dict[str, Any], Replay]:
    """The original's configuration values (`original_values`) and what it hit, read from `run_dir`;
    `ReplayRefused`, naming what is missing or damaged, when the directory cannot be replayed."""
    from kchaos.model.fault_pins import read_pins  # loads Arrow: not for `kchaos run --help`
    from kchaos.model.history_files import HistoryCorrupt

    where = f"{REPLAY_FLAG} {run_dir}"
    files = RunDir(run_dir)
    if not run_dir.is_dir():
        raise ReplayRefused(
            f"{where}: no such run directory; give the directory of a run kchaos made (<runs dir>/<run id>, "
            "as a hunt prints it)"
        )
    try:
        settings = json.loads(files.config.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReplayRefused(
            f"{where}: its {CONFIG_NAME} cannot be read ({exc}); it holds the run's settings, so restore "
            "it, or replay another run"
        ) from None
    if not isinstance(settings, dict) or not isinstance(settings.get("run_id"), str):
        raise ReplayRefused(
            f"{where}: its {CONFIG_NAME} holds no run's settings; restore it, or replay another run"
        )
    if settings.get("scenario"):
        raise ReplayRefused(
            f"{where}: it ran the scenario {settings['scenario']}, whose steps aim at the nodes they mean "
            f"to, so there is nothing to pin; run it again with kchaos run --scenario {settings['scenario']}"
        )
    try:
        pins = read_pins(run_dir)
    except (FileNotFoundError, HistoryCorrupt, ValueError, OSError) as exc:
        raise ReplayRefused(
            f"{where}: its history ({HISTORY_FILES}) cannot be read ({exc}), and it records which nodes "
            "the faults hit; restore it, or replay another run"
        ) from None
    try:
        assignment = read_assignment(files.assignment)
    except (OSError, AssignmentUnreadable) as exc:
        raise ReplayRefused(
            f"{where}: its {ASSIGNMENT_NAME} cannot be read ({exc}), and it records where the topics' "
            "replicas were (a run made before kchaos recorded it, or one that failed before creating "
            "its topics, has none); plan the run again instead, with its options and --seed "
            f"{settings.get('seed')}"
        ) from None
    return original_values(settings, run_dir), Replay(run_dir, pins, assignment)


def _flags(names: list[str]) -> str:
    return ", ".join(flag_name(name) for name in names)


def replay_config(original: dict[str, Any], overrides: Mapping[str, Any], replay: Replay) -> RunConfig:
    """The replay's configuration: the original's `original` values with `overrides` (the options given
    beside --replay), and a run id of its own unless one is given. Refuses (`ReplayRefused`) overrides that
    would change the plan or the topics' placement, naming them; a value RunConfig refuses raises its
    `ConfigError`."""
    where = f"{REPLAY_FLAG} {replay.source}"
    # Faults left out (`--without`) shrink the plan without moving the rest: still a replay of the rest.
    shrunk = {SHRINKS: overrides[SHRINKS]} if SHRINKS in overrides else {}
    try:
        planned = plan(load_config(**original))
    except ConfigError as exc:
        raise ReplayRefused(
            f"{where}: its {CONFIG_NAME} is no configuration this kchaos runs ({exc}); replay a run of this "
            "release of kchaos"
        ) from None
    if shrunk:
        try:
            planned = plan(load_config(**{**original, **shrunk}))
        except ConfigError as exc:
            raise ReplayRefused(f"{where} --{SHRINKS}: {exc}") from None
    changing = []
    for name, value in overrides.items():
        try:
            if name != SHRINKS and plan(load_config(**{**original, **shrunk, name: value})) != planned:
                changing.append(name)
        except ConfigError:
            continue  # refused below, in RunConfig's words, with every override applied
    values = {**original, **overrides}
    if "run_id" not in overrides:
        values["run_id"] = replay_run_id(str(replay.source.name), Path(values["runs_dir"]))
    config = load_config(**values)
    if not changing and plan(config) != planned:
        changing = list(overrides)
    if changing:
        raise ReplayRefused(
            f"{where} {_flags(changing)}: would change the faults the run plans, so it would no longer "
            f"replay {replay.source}; leave {_flags(changing)} out (or run the changed run without "
            f"{REPLAY_FLAG})"
        )
    made = made_topics(config.topic, config.topics, config.workload)
    wrong = misfit(replay.assignment, made, config.partitions, config.replication_factor, config.brokers)
    if wrong is not None:
        shaping = [
            name for name in TOPIC_SHAPE if name in overrides and overrides[name] != original.get(name)
        ]
        if shaping:
            raise ReplayRefused(
                f"{where} {_flags(shaping)}: the original's topics cannot be placed as they were ({wrong}); "
                f"leave {_flags(shaping)} out"
            )
        raise ReplayRefused(
            f"{where}: its {ASSIGNMENT_NAME} does not fit its own configuration ({wrong}); restore it, or "
            "replay another run"
        )
    return config
