"""A replay's faults keep to the nodes the original run's faults hit, while those are still valid.

A fault's target is resolved against the cluster as it is when the fault starts (`kchaos.nemesis.fault`),
so a run planned again from its seed may hit other nodes: Kafka led the partition from another broker, a
follower was drawn among others. A replay (`kchaos run --replay RUN_DIR`) gives each fault the nodes its
key hit in the original (`kchaos.model.fault_pins`), and every choice a fault makes of its nodes goes
through `keep_pinned`: the pinned nodes stand in for what it chose when they are still in the cluster,
running, held by no fault in force, and among what the choice could have named now (for a role, its
holders now). Otherwise the fault hits what it chose, and its record says why (`FaultRecord.re_chosen`),
so a replay never passes off other nodes as the original's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kchaos.harness.cluster import KafkaCluster
from kchaos.model.fault_definition import FaultSpec


def _spelled(nodes: Iterable[int]) -> str:
    ids = list(nodes)
    return ("node " if len(ids) == 1 else "nodes ") + ", ".join(map(str, ids))


class Pinned:
    """The choice of a fault's nodes in a replay: its pinned nodes while valid, else its own choice and
    why. Mixed into `kchaos.nemesis.fault.Fault`, whose state it reads."""

    cluster: KafkaCluster
    spec: FaultSpec
    nodes: tuple[int, ...]
    held_by: Mapping[int | str, str]
    #: In a replay, the nodes the original run's fault of this key hit, which its choices keep to while
    #: they are valid (`keep_pinned`); None outside a replay (the nemesis sets it).
    pinned: tuple[int, ...] | None
    #: Why it hit other nodes than `pinned`, each choice's reason, for its rows.
    re_chosen: list[str]

    def re_chosen_reason(self) -> str | None:
        """In a replay, why it hit other nodes than the original's fault of its key: the reasons its choices
        gave, or (a fault that chooses without `keep_pinned`) the two lists of nodes. None when it hit the
        same nodes, or replays nothing."""
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
        why = self._pin_misfit(pinned, len(chosen), eligible, what)
        if why is None:
            return pinned
        self.re_chosen.append(f"the original hit {list(pinned)}; {why}")
        return tuple(chosen)

    def _pin_misfit(
        self, pinned: tuple[int, ...], count: int, eligible: Sequence[int], what: str
    ) -> str | None:
        """Why `pinned` cannot stand in for a choice of `count` nodes among `eligible` now; None if it can."""
        servers = self.cluster.servers
        if len(pinned) != count:
            return f"this run chooses {count} node(s) there"
        gone = [node for node in pinned if node not in servers]
        down = [
            node
            for node in pinned
            if node in servers and getattr(servers[node], "state", "running") != "running"
        ]
        held = [node for node in pinned if node in self.held_by]
        if gone:
            return f"{_spelled(gone)} is not in the cluster now"
        if down:
            return f"{_spelled(down)} is not running now"
        if held:
            return f"{_spelled(held)} is held by {', '.join(sorted({self.held_by[n] for n in held}))}"
        if not set(pinned) <= set(eligible):
            return f"now {what} {'is' if len(eligible) == 1 else 'are'} {list(eligible)}"
        return None
