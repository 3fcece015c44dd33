"""A replay's faults keep to what the original run's faults hit and chose, while that is still valid.

A fault's target is resolved against the cluster as it is when the fault starts (`kchaos.nemesis.fault`),
so a run planned again from its seed may hit other nodes: Kafka led the partition from another broker, a
follower was drawn among others. A replay (`kchaos run --replay RUN_DIR`) gives each fault what its key hit
and chose in the original (`kchaos.model.fault_pins`). Every choice a fault makes of its nodes goes through
`keep_pinned`, and every other choice it makes (a one-way cut's receivers, which replica of each partition
`add-broker` moves, which broker takes each replica a drained broker held, which client processes a client
fault hits) through `keep_choice`, which also records it (`FaultRecord.chose`) for the next replay. The
original's stands in for what the fault chose when it is still among what the choice could name now (for a
role, its holders now) and, for nodes a fault keeps off when down or held, still in the cluster, running
and held by no fault in force. Otherwise the fault takes what it chose, and its record says why
(`FaultRecord.re_chosen`), so a replay never passes off other nodes as the original's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar, cast

from kchaos.harness.cluster import KafkaCluster
from kchaos.model.fault_definition import FaultSpec

#: What a choice names: node ids, or client processes by name.
Thing = TypeVar("Thing", int, str)


def _spelled(things: Iterable[int | str]) -> str:
    """`node 3`, `nodes 2, 3`; client processes by their names alone."""
    named = list(things)
    if any(isinstance(thing, str) for thing in named):
        return ", ".join(map(str, named))
    return ("node " if len(named) == 1 else "nodes ") + ", ".join(map(str, named))


def listed(things: Iterable[int | str]) -> str:
    """`[2, 3]`, `[producer-0, member-1]`: a choice as a reason prints it."""
    return "[" + ", ".join(map(str, things)) + "]"


class Pinned:
    """The choices of a fault in a replay: the original's while valid, else its own and why. Mixed into
    `kchaos.nemesis.fault.Fault`, whose state it reads."""

    cluster: KafkaCluster
    spec: FaultSpec
    nodes: tuple[int, ...]
    held_by: Mapping[int | str, str]
    #: In a replay, the nodes the original run's fault of this key hit, which its choices keep to while
    #: they are valid (`keep_pinned`); None outside a replay (the nemesis sets it).
    pinned: tuple[int, ...] | None
    #: In a replay, the original's other choices, by name (`keep_choice`); empty when its rows record none.
    pinned_choices: Mapping[str, tuple[int | str, ...]]
    #: Its choices beyond its nodes, by name, as made: what its rows record for a replay of this run.
    chose: dict[str, tuple[int | str, ...]]
    #: Why it hit other nodes than `pinned`, each choice's reason, for its rows.
    re_chosen: list[str]

    def re_chosen_reason(self) -> str | None:
        """In a replay, why it hit or chose otherwise than the original's fault of its key: the reasons its
        choices gave, or (a fault that chooses without `keep_pinned`) the two lists of nodes. None when it
        hit and chose the same, or replays nothing."""
        if self.pinned is None:
            return None
        if self.re_chosen:
            return "; ".join(self.re_chosen)
        if tuple(self.nodes) != self.pinned:
            return f"the original hit {list(self.pinned)}; {self.spec} hit {list(self.nodes)} in this run"
        return None

    def pick(self, drawn: int, eligible: Sequence[int], what: str, index: int = 0) -> int:
        """`drawn`, chosen among `eligible` (`what`, a noun: `the followers`), or in a replay the node the
        original chose there, its nodes' `index`th, while it is still eligible (`keep_pinned`). The draw is
        made either way, so the choices after it draw as the original's did."""
        return self.keep_pinned((drawn,), eligible, what, slice(index, index + 1))[0]

    def keep_pinned(
        self, chosen: Sequence[int], eligible: Sequence[int], what: str, at: slice = slice(None)
    ) -> tuple[int, ...]:
        """`chosen`, or in a replay the original's nodes (`pinned[at]`) when they may stand in for it now:
        as many, each among `eligible` (what this choice, called `what`, could have named now), in the
        cluster, running, and held by no fault in force. Otherwise `chosen`, and the reason is noted for the
        record (`re_chosen`)."""
        if self.pinned is None or tuple(self.pinned[at]) == tuple(chosen):
            return tuple(chosen)
        pinned = self.pinned[at]
        why = self._pin_misfit(pinned, len(chosen), eligible, what, free=True)
        if why is None:
            return pinned
        self.re_chosen.append(f"the original hit {list(pinned)}; {why}")
        return tuple(chosen)

    def keep_choice(
        self, name: str, chosen: Sequence[Thing], eligible: Sequence[Thing], what: str, free: bool = True
    ) -> tuple[Thing, ...]:
        """A choice beyond the fault's nodes, called `name` (`receivers`), recorded under it (`chose`):
        `chosen`, or in a replay the original's choice of that name when it may stand in for it now: as
        many, each among `eligible` (what the choice, called `what`, could have named now) and, when `free`
        (a choice that keeps off what is down or held, as a target does), running and held by no fault in
        force. Otherwise `chosen`, and the reason is noted (`re_chosen`): the original's did not fit now,
        or its rows record none (a run by a kchaos that did not record it, or a fault that stopped before
        making this choice)."""
        kept = tuple(chosen)
        if self.pinned is not None:
            original = self.pinned_choices.get(name)
            if original is None:
                self.re_chosen.append(f"the original's rows record no {name}; this run chose {listed(kept)}")
            elif tuple(original) != kept:
                why = self._pin_misfit(original, len(kept), eligible, what, free)
                if why is None:
                    kept = cast(tuple[Thing, ...], tuple(original))  # each among `eligible`: a Thing
                else:
                    self.re_chosen.append(f"the original's {name}: {listed(original)}; {why}")
        self.chose[name] = kept
        return kept

    def _pin_misfit(
        self,
        pinned: Sequence[int | str],
        count: int,
        eligible: Sequence[int | str],
        what: str,
        free: bool,
    ) -> str | None:
        """Why `pinned` cannot stand in for a choice of `count` things among `eligible` now; None if it
        can. `free`: nor can nodes not in the cluster, not running, or held by a fault in force."""
        nodes = [thing for thing in pinned if isinstance(thing, int)]
        if len(pinned) != count:
            return f"this run chooses {count} {'node(s)' if len(nodes) == len(pinned) else 'of them'} there"
        if free:
            servers = self.cluster.servers
            gone = [node for node in nodes if node not in servers]
            down = [
                node
                for node in nodes
                if node in servers and getattr(servers[node], "state", "running") != "running"
            ]
            held = [thing for thing in pinned if thing in self.held_by]
            if gone:
                return f"{_spelled(gone)} is not in the cluster now"
            if down:
                return f"{_spelled(down)} is not running now"
            if held:
                holders = ", ".join(sorted({self.held_by[thing] for thing in held}))
                return f"{_spelled(held)} is held by {holders}"
        if not set(pinned) <= set(eligible):
            return f"now {what} {'is' if len(eligible) == 1 else 'are'} {listed(eligible)}"
        return None
