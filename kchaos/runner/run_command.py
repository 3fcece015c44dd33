"""`kchaos run`: one chaos run from the command line, its flags made from RunConfig's fields."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from kchaos.model.config import ConfigError, RunConfig, load_config
from kchaos.runner.config_options import flag_name, run_options
from kchaos.runner.failures import (
    fail,
    harness_failed,
    require_engine,
    require_java,
    require_runs_dir,
    working_in,
)
from kchaos.runner.outcome_echo import echo_outcome
from kchaos.runner.progress_echo import ProgressEcho
from kchaos.runner.replay import REPLAY_FLAG, Replay, ReplayRefused, read_replay, replay_config

if TYPE_CHECKING:  # the judge's modules load Spark; `kchaos run --help` should not wait for them
    from kchaos.runner.outcome import RunOutcome


@click.command()
@click.option(
    REPLAY_FLAG,
    "replay",
    type=click.Path(path_type=Path),
    default=None,
    metavar="RUN_DIR",
    help="Run again as the run in RUN_DIR ran: its settings and seed (options given beside it override "
    "them, except those that would change its faults), its topics' replicas placed as they were, and each "
    "fault on the nodes it hit there, with the choices it made (a one-way cut's receivers, the replicas "
    "add-broker or a drain moved, the clients hit), while they are still valid for its target (else chosen "
    "anew, and the outcome says why). `kchaos hunt` prints this command for each of its runs.",
)
@run_options
def run(
    broker_config: tuple[str, ...],
    topic_config: tuple[str, ...],
    run_id: str | None,
    replay: Path | None = None,
    **options: Any,
) -> None:
    """Start a cluster, write under faults, heal, read everything back and judge the result."""
    ctx = click.get_current_context()
    values = run_values(ctx, broker_config, topic_config, run_id, options)
    replayed: Replay | None = None
    try:
        if replay is None:
            config = load_config(**values)
        else:
            config, replayed = replay_of(ctx, replay, values)
    except (ConfigError, ReplayRefused) as exc:
        fail(str(exc))
    require_runs_dir(config.runs_dir)
    if config.run_dir.exists():
        fail(
            f"{config.run_dir} already exists (an earlier run?); pick another --run-id, or remove that "
            "directory to run again under this id"
        )
    # The check at the end starts Spark: a run it could not judge would be spent for nothing.
    require_java(config.spark_url)
    require_engine()  # before the run directory is created: no empty directory is left behind
    import docker.errors

    from kchaos.harness.cluster_error import ClusterError
    from kchaos.harness.engine import EngineError
    from kchaos.harness.image import ImageError
    from kchaos.model.waiting import WaitTimeout
    from kchaos.runner.run import execute

    working_in(config.run_dir)
    codes: list[int] = []
    try:
        with ProgressEcho() as progress:  # in place on a terminal, milestones alone elsewhere

            def judged(outcome: RunOutcome) -> None:
                """The verdict as soon as it is in; the report follows at the path it names."""
                with progress.aside():
                    codes.append(echo_outcome(outcome))

            outcome = execute(config, progress=progress, judged=judged, replay=replayed)
    except ConfigError as exc:  # the client refused its settings, before the run began (`execute`)
        fail(str(exc))
    except KeyboardInterrupt:
        fail(
            f"interrupted; cleaned up. What was recorded is in {config.run_dir}; `kchaos check "
            f"{config.run_dir}` judges it as the partial run it is"
        )
    except (ImageError, ClusterError, WaitTimeout, EngineError, docker.errors.DockerException) as exc:
        harness_failed(exc, str(exc), config.run_dir)
    sys.exit(codes[0] if codes else echo_outcome(outcome))


#: The repeatable client-setting flags, each with the example its refusal of a malformed item shows.
CLIENT_CONFIG_EXAMPLES = {"producer_config": "linger.ms=50", "consumer_config": "max.poll.records=100"}


def run_values(
    ctx: click.Context,
    broker_config: tuple[str, ...],
    topic_config: tuple[str, ...],
    run_id: str | None,
    options: dict[str, Any],
) -> dict[str, Any]:
    """The configuration values `kchaos run`'s flags (parsed in `ctx`) give `load_config`; `kchaos hunt`
    reads its own flags the same way, so a hunt's run and its replay command are configured alike."""
    # Only the flags given are passed: a flag left out is the configuration's to choose (a named scenario's
    # setting; the duration the faults' first round needs; the default faults fitted into a duration given,
    # `kchaos.model.plan_fit`; a txn run's reader of each isolation level), as `model_fields_set` says.
    given = ctx.get_parameter_source
    values = {k: v for k, v in options.items() if v is not None and given(k) is not ParameterSource.DEFAULT}
    if run_id is not None:  # given, even empty: an empty id is refused, not replaced by a generated one
        values["run_id"] = run_id
    flush = "log.flush.interval.messages=1"
    if broker_config or not options.get("scenario"):
        values["broker_config"] = key_values("--broker-config", broker_config, flush)
    if topic_config or not options.get("scenario"):
        values["topic_config"] = key_values("--topic-config", topic_config, "flush.messages=1")
    for name, example in CLIENT_CONFIG_EXAMPLES.items():
        if name in values:
            values[name] = key_values(flag_name(name), values[name], example)
    return values


def replay_of(ctx: click.Context, source: Path, values: dict[str, Any]) -> tuple[RunConfig, Replay]:
    """The configuration of `kchaos run --replay source` and what it replays: the original's settings, with
    the options given beside it (`values` those of the flags parsed in `ctx` that were given) overriding
    them. Raises `ReplayRefused` or `ConfigError`, saying what to fix."""
    original, replay = read_replay(source)
    return replay_config(original, given_flags(ctx, values), replay), replay


def given_flags(ctx: click.Context, values: dict[str, Any]) -> dict[str, Any]:
    """The `values` of the flags given in `ctx` (not left to their defaults): what a replay overrides."""
    return {
        name: value
        for name, value in values.items()
        if ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)
    }


def key_values(flag: str, items: tuple[str, ...], example: str) -> dict[str, str]:
    """The KEY=VALUE items of a repeatable flag as a mapping; refuses an item that is not one."""
    found: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            fail(f"{flag} {item!r}: write it as KEY=VALUE, e.g. {example}")
        found[key.strip()] = value.strip()
    return found
