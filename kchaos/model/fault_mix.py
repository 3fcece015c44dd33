"""`--nemesis mix:kinds=kill,isolate,pause`: faults of the kinds listed, each target drawn from the seed.

A hand-written nemesis tests the combinations someone thought of. A mix lets the seed choose, fault by
fault, the target among every one the fault takes that this run's shape has (`leader`, `random`, node `2`,
`producer-0`, ...); the plan (`kchaos.model.fault_plan`) draws which kind comes next, how long it holds and
the quiet period before it as it does for any nemesis. The plan lists each fault as the concrete spec it
drew (`kill:target=2`), so `schedule.json` says exactly what ran, and the same seed plans the same faults.

Pure (no Docker, no Kafka): a kind this run can never draw (an unknown name, a ZooKeeper fault on a KRaft
cluster, a client fault whose clients are threads) is refused with the configuration, before anything
starts. Only the target is drawn, and in a transactional run a request fault's `api` too (Produce, or a
transaction's EndTxn, AddPartitionsToTxn or WriteTxnMarkers where it arrives); other options (`ms`,
`percent`, `from`/`to`, ...) keep their defaults, and a fault with an option that has no default cannot be
drawn at all.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from kchaos.model.client_targets import CLIENTS_TARGET
from kchaos.model.fault_definition import TIME, WHEN, ZOOKEEPER_TARGET, RunShape, Shape
from kchaos.model.fault_options import SpecError
from kchaos.model.fault_spec import check_cluster, parse_spec, split_nemesis
from kchaos.model.fault_table import FAULTS
from kchaos.model.fault_targets import FIRST_CONTROLLER_ID, TARGETS
from kchaos.model.fault_triggers import TRIGGERS, check_when
from kchaos.model.faults.requests import REQUEST_FAULTS, TRANSACTION_REQUESTS
from kchaos.model.workload_names import TRANSACTIONAL

#: The name a mix goes by on the command line, and its one option.
MIX = "mix"
KINDS_OPTION = "kinds"
#: An example to name in refusals.
EXAMPLE = "mix:kinds=kill,isolate,pause"
TRIGGER_EXAMPLE = "mix:kinds=kill,pause:when=leader-down,follower-behind"

#: What a mix is, in the words `kchaos faults` prints below the table.
MIX_HELP = (
    "alone in --nemesis, draws faults of the names listed with the seed: which comes next (in turns with "
    "--schedule fixed, drawn with random), the target of each among those it takes that the run has "
    "(roles, node ids, client processes; in a transactional run a request fault's api too; other options "
    "keep their defaults), how long it holds and the "
    "quiet before it. schedule.json lists each fault drawn, e.g. kill:target=2; one fault holds at a time "
    "unless --fault-overlap says otherwise. With when=STATE,... each fault after the first round also "
    "draws the state it fires on among those and the clock (e.g. "
    "mix:kinds=kill,pause:when=leader-down,follower-behind)."
)

#: The options a mix draws; every other option keeps its default.
DRAWN_OPTION = "target"

#: Client process names a target may take (`producer-0`, `member-1`, ...); which exist is the run's shape's
#: to say, so every one is tried against `check_cluster` and only those it accepts are drawn.
_CLIENT_PREFIXES = ("producer", "member", "processor", "consumer")


@dataclass(frozen=True)
class Mix:
    """A parsed mix: the kinds it draws from, each named once, in the order written, and the states
    (`kchaos.model.fault_triggers`) a fault after the first round may be drawn to fire on."""

    kinds: tuple[str, ...]
    triggers: tuple[str, ...] = ()

    def __str__(self) -> str:
        fired = f":{WHEN}={','.join(self.triggers)}" if self.triggers else ""
        return f"{MIX}:{KINDS_OPTION}={','.join(self.kinds)}{fired}"


def is_mix(text: str) -> bool:
    """`text` (one `--nemesis` item, or the whole flag) asks for a mix."""
    return text.strip().split(":")[0].strip() == MIX


def split_with_mix(text: str) -> tuple[str, ...]:
    """`split_nemesis`, except that a mix keeps its comma-separated kinds: `mix:kinds=kill,pause` is one
    item. A mix draws every fault of the run, so it stands alone: a fault listed before it is refused with
    the mix that would include it."""
    parts = [part.strip() for part in text.split(",")]
    if not any(is_mix(part) for part in parts):
        return split_nemesis(text)
    if not is_mix(parts[0]):
        before = [part for part in parts if not is_mix(part)]
        raise SpecError(
            f"{text!r} lists faults besides a mix, which draws every fault of the run; write the mix alone "
            f"and add their names to its kinds, e.g. {MIX}:{KINDS_OPTION}={','.join(before)},..."
        )
    mix = parse_mix(text)
    return (str(mix),)


def parse_mix(text: str) -> Mix:
    """The mix `text` names; refuses a missing or empty kinds list, an unknown option, a kind with options
    of its own, an unknown or repeated kind, each naming the fix."""
    name, _, rest = text.strip().partition(":")
    kinds_part, _, when_part = rest.partition(f":{WHEN}=")
    key, sep, value = kinds_part.partition("=")
    if name.strip() != MIX or key != KINDS_OPTION or not sep:
        given = f" (got {rest!r})" if rest else ""
        raise SpecError(
            f"{MIX}: takes {KINDS_OPTION}=NAME,NAME,... (the faults it draws from), then optionally "
            f"{WHEN}=STATE,STATE,...{given}, e.g. {EXAMPLE}"
        )
    kinds = [kind.strip() for kind in value.split(",")]
    if not any(kinds):
        raise SpecError(f"{MIX}: {KINDS_OPTION} lists no fault; name one or more, e.g. {EXAMPLE}")
    if not all(kinds):
        raise SpecError(f"{MIX}: {KINDS_OPTION}={value} has an empty item between commas; remove the comma")
    for kind in kinds:
        if ":" in kind or "=" in kind:
            bare = kind.split(":")[0]
            raise SpecError(
                f"{MIX}: {kind!r} in {KINDS_OPTION} has options; a mix draws the target itself and keeps the "
                f"other defaults, so name the fault alone ({bare}), or list the spec in --nemesis without mix"
            )
        if kind == MIX:
            raise SpecError(f"{MIX}: {KINDS_OPTION} names {MIX} itself; name faults, e.g. {EXAMPLE}")
        if kind not in FAULTS:
            raise SpecError(
                f"{MIX}: unknown fault {kind!r} in {KINDS_OPTION}; choose from {', '.join(FAULTS)} "
                "(`kchaos faults` lists them)"
            )
        undefaulted = [option for option, default in FAULTS[kind].defaults.items() if not default]
        if undefaulted:
            raise SpecError(
                f"{MIX}: {kind} needs {', '.join(undefaulted)}, which has no default, so a mix cannot draw "
                f"it; remove it from {KINDS_OPTION} and list it with its options in --nemesis instead"
            )
    repeated = sorted({kind for kind in kinds if kinds.count(kind) > 1})
    if repeated:
        raise SpecError(f"{MIX}: {', '.join(repeated)} named twice in {KINDS_OPTION}; name each fault once")
    return Mix(tuple(kinds), _triggers(when_part, kinds) if f":{WHEN}=" in rest else ())


def _triggers(text: str, kinds: Sequence[str]) -> tuple[str, ...]:
    """The states a mix's `when=` lists; refuses an empty or unknown one, a repeat, `time` (every mix
    draws it), and a list no kind of the mix can fire on."""
    states = [state.strip() for state in text.split(",")]
    if not all(states):
        raise SpecError(f"{MIX}: {WHEN}={text} lists an empty state; name states, e.g. {TRIGGER_EXAMPLE}")
    for state in states:
        if state == TIME:
            raise SpecError(f"{MIX}: {WHEN} lists {TIME}, which a mix always draws; name states only")
        check_when(MIX, state, overlaps=True)
    repeated = sorted({state for state in states if states.count(state) > 1})
    if repeated:
        raise SpecError(f"{MIX}: {', '.join(repeated)} named twice in {WHEN}; name each state once")
    if not any(FAULTS[kind].overlaps for kind in kinds):
        raise SpecError(
            f"{MIX}: {WHEN}= fires a fault while the one before it holds, and none of {', '.join(kinds)} "
            "may overlap another; add one that may (kill, pause, isolate, ...), or leave when= out"
        )
    return tuple(states)


def draw_trigger(rng: random.Random, mix: Mix, spec: str, shape: RunShape) -> str:
    """A fault after the first round, `spec` as drawn, to fire on a state drawn among the mix's states and
    the clock: on the clock it is `spec`; on a state it is aimed anew, among the targets the state is
    about (`Trigger.aims`) that the fault takes and the run has (as drawn when it has none)."""
    when = rng.choice((TIME, *mix.triggers))
    if when == TIME:
        return spec
    name = parse_spec(spec).name
    aimed = [text for text in drawable_specs(name, shape) if parse_spec(text).target in TRIGGERS[when].aims]
    return f"{rng.choice(aimed) if aimed else spec}:{WHEN}={when}"


def mix_of(nemesis: Sequence[str]) -> Mix | None:
    """The mix a run's nemesis is (it stands alone), or None for a nemesis of concrete faults."""
    if len(nemesis) == 1 and is_mix(nemesis[0]):
        return parse_mix(nemesis[0])
    return None


def _candidates(name: str, shape: RunShape) -> tuple[str, ...]:
    """Every target value worth trying for fault `name` in a run of this shape, before the checks."""
    if DRAWN_OPTION not in FAULTS[name].defaults:
        return ()
    nodes = [str(node) for node in range(1, shape.brokers + 1)]
    nodes += [str(FIRST_CONTROLLER_ID + n) for n in range(shape.controllers)]
    many = max(shape.producers, shape.consumers)
    clients = [f"{prefix}-{n}" for prefix in _CLIENT_PREFIXES for n in range(many)]
    return (*TARGETS, *nodes, ZOOKEEPER_TARGET, CLIENTS_TARGET, *clients)


def _refusal(spec_text: str, shape: RunShape) -> str | None:
    """Why `spec_text` cannot run in a run of this shape (the words `--nemesis` would be refused in)."""
    try:
        check_cluster(parse_spec(spec_text), shape)
    except SpecError as exc:
        return str(exc)
    return None


def drawable_specs(name: str, shape: RunShape) -> tuple[str, ...]:
    """The concrete specs a mix may draw for fault `name` in a run of this shape, in a fixed order: one per
    target it takes and the shape has, or the fault with its defaults when it takes no target."""
    return _drawable(name, Shape.of(shape))


def _transaction_requests(name: str, shape: Shape) -> list[str]:
    """A request fault's specs that take a transaction's own requests, where each arrives, in a
    transactional run (`TRANSACTION_REQUESTS`); none for another fault or workload."""
    if name not in REQUEST_FAULTS or shape.workload not in TRANSACTIONAL:
        return []
    return [
        f"{name}:api={api}:{DRAWN_OPTION}={target}"
        for api, targets in TRANSACTION_REQUESTS.items()
        for target in targets
    ]


@cache
def _drawable(name: str, shape: Shape) -> tuple[str, ...]:
    # Cached: the plan asks once per fault, and checking every candidate each time would be wasted work.
    targets = _candidates(name, shape)
    specs = [f"{name}:{DRAWN_OPTION}={target}" for target in targets] if targets else [name]
    specs += _transaction_requests(name, shape)
    found: list[str] = []
    for text in specs:
        try:
            parse_spec(text)
        except SpecError:
            continue  # a target this fault does not take at all (zookeeper for isolate, ...)
        if _refusal(text, shape) is None:
            found.append(text)  # the target spelled out, even the default: schedule.json says what ran
    return tuple(found)


def mix_refusal(mix: Mix, shape: RunShape) -> str | None:
    """Why a run of this shape cannot draw every kind of `mix` (with the fix), or None when it can."""
    for kind in mix.kinds:
        if not drawable_specs(kind, shape):
            reason = _refusal(kind, shape) or "no target it takes exists in this run"
            return (
                f"{mix}: {kind} has no target this run can take ({reason}); remove {kind} from "
                f"{KINDS_OPTION}, or change the run as said"
            )
    return None


def draw_spec(rng: random.Random, kind: str, shape: RunShape) -> str:
    """One concrete spec of fault `kind`, its target drawn with `rng` among those this run has."""
    return rng.choice(drawable_specs(kind, shape))
