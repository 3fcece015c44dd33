"""The producers' delivery timeout against the run's faults, for the report.

A producer fails a send it could not get acknowledged within its delivery timeout (librdkafka's
`message.timeout.ms`, the Java client's `delivery.timeout.ms`: `--message-timeout-ms`), whether or not
the broker wrote it. A fault that holds longer than that turns sends outstanding through it into
indeterminate ones, and with idempotence the producer then bumps its epoch and may write records again
(the `idempotent-epoch-bump` rule). A platform team that runs with a short timeout should see that its
faults outlasted it, next to the verdict, not only in `config.json`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kchaos.checkers.faults import FaultInterval


def delivery_timeout(config: Mapping[str, Any], faults: Sequence[FaultInterval]) -> dict[str, Any] | None:
    """`ms` (the producers' delivery timeout), `longest_fault_s`, whether the timeout is `shorter` than that
    fault, and the report's `line`; None for a run directory that records no timeout (converted tool
    output)."""
    raw = config.get("message_timeout_ms")
    if isinstance(raw, bool) or not isinstance(raw, int | float) or raw <= 0:
        return None
    held = [
        fault.stop_wall - fault.start_wall
        for fault in faults
        if fault.start_wall is not None and fault.stop_wall is not None
    ]
    longest = round(max(held), 1) if held else None
    shorter = longest is not None and raw / 1000 < longest
    seconds = f"{raw / 1000:g} s"
    if longest is None:
        line = f"delivery timeout {seconds} (message.timeout.ms, delivery.timeout.ms in Java); no fault held"
    elif shorter:
        line = (
            f"delivery timeout {seconds} (message.timeout.ms, delivery.timeout.ms in Java) is shorter than "
            f"the longest fault ({longest:g} s): a send outstanding through it was failed by its producer "
            "though it may have been written (recorded info), and an idempotent producer then bumps its "
            "epoch and may write records again (rule idempotent-epoch-bump)"
        )
    else:
        line = (
            f"delivery timeout {seconds} (message.timeout.ms, delivery.timeout.ms in Java), longer than the "
            f"longest fault ({longest:g} s)"
        )
    return {"ms": int(raw), "longest_fault_s": longest, "shorter": shorter, "line": line}
