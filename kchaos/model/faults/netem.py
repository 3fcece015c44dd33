"""Links slowed, not cut (tc netem; skipped with a clear message where the kernel has no netem): delay
(`latency`), dropped packets (`loss`), a rate cap (`bandwidth`)."""

from __future__ import annotations

from collections.abc import Mapping

from kchaos.model.fault_definition import FaultDefinition, FaultKind
from kchaos.model.fault_options import Number, SpecError
from kchaos.model.fault_targets import Target

ORDER = 30
#: Light blue: links slowed, not cut.
DEGRADE = FaultKind("degrade", "none", "#17becf")


def check_jitter(options: Mapping[str, str]) -> None:
    """A delay cannot go below 0 ms, so its jitter is at most the delay."""
    if int(options["jitter"]) > int(options["ms"]):
        raise SpecError(
            f"latency: jitter ({options['jitter']}) exceeds ms ({options['ms']}): a delay cannot go below "
            f"0 ms; use jitter={options['ms']} or less, or raise ms"
        )


DEFINITIONS = (
    FaultDefinition(
        "latency",
        DEGRADE,
        (
            Target("target", "leader"),
            Number(
                "ms",
                "200",
                1,
                60_000,
                "milliseconds of added delay; beyond a minute, cut the link with isolate instead",
            ),
            Number("jitter", "50", 0, 60_000, "milliseconds the delay varies by", also="at most ms"),
        ),
        overlaps=True,
        check_options=check_jitter,
    ),
    FaultDefinition(
        "loss",
        DEGRADE,
        (Target("target", "leader"), Number("percent", "20", 1, 100, "percent of packets dropped")),
        overlaps=True,
    ),
    FaultDefinition(
        "bandwidth",
        DEGRADE,
        (Target("target", "leader"), Number("kbit", "256", 1, None, "kilobits per second")),
        overlaps=True,
    ),
)
