"""`kchaos faults`: the fault table as a user reads it, so the names --nemesis takes are listed by the one
table that defines them, not by a copy in the help text.

Below the table, what each option accepts: the bounds and choices come from the definitions the spec
parser checks against (`kchaos.model.fault_spec`), so the listing cannot offer a value a run refuses.
"""

from __future__ import annotations

import click

from kchaos.model.corruption import CORRUPT_FILES, HOWS
from kchaos.model.fault_mix import EXAMPLE, MIX_HELP
from kchaos.model.fault_plan import OVERLAP_HELP
from kchaos.model.fault_spec import (
    CLOCK_MODES,
    DIRENTS,
    FLAGS,
    MEMBER_WORKLOADS,
    NUMBERS,
    ONE_WAY_PORTS,
    REASSIGNED_REPLICAS,
    TEARS,
    targets_text,
)
from kchaos.model.fault_table import FAULTS, listing

#: Choices the parser checks inline rather than from a named table; tests/test_bad_input.py holds each
#: to what `parse_spec` accepts.
SCOPES = ("topic", "cluster")

#: What a numeric option must also respect, beyond its own bounds.
_ALSO = {
    "jitter": "; at most ms",
    "value": "; at most the topic's --replication-factor",
}


def _number_text(key: str) -> str:
    low, high, what = NUMBERS[key]
    bounds = f"from {low} to {high}" if high is not None else f"at least {low}"
    return f"a whole number {bounds} ({what}){_ALSO.get(key, '')}"


def option_values() -> list[tuple[str, str]]:
    """(option, what it accepts) for every option some fault takes, in the table's order.

    Raises KeyError for an option with no description here, so a new option cannot go unlisted.
    """
    member_faults = [name for name, fault in FAULTS.items() if fault.needs_group_members]
    member_target = (
        "random, or a member's process name: "
        + " or ".join(
            f"{name(0)[:-1]}N (--workload {workload})" for workload, name in MEMBER_WORKLOADS.items()
        )
        + ", N from 0 to --consumers - 1"
    )
    described: dict[str, str] = {}
    for name, fault in FAULTS.items():
        for key in fault.options:
            if key == "target" and fault.needs_group_members:
                described[f"target of {', '.join(member_faults)}"] = member_target
            elif key in ("target", "from", "to"):
                described[key] = targets_text() if key == "target" else "as target"
            elif key in NUMBERS:
                described[key] = _number_text(key)
            elif key in FLAGS:
                described[key] = "true or false"
            elif key == "port":
                described[key] = " or ".join(ONE_WAY_PORTS)
            elif key == "scope":
                described[key] = " or ".join(SCOPES)
            elif key == "file":
                described[key] = " or ".join(CORRUPT_FILES) + (
                    " (the fault partition's last segment, its indexes or its leader-epoch checkpoint; "
                    "KRaft's metadata log or quorum-state)"
                )
            elif key == "how":
                described[key] = " or ".join(HOWS) + " (bits inverted, the file cut, or bytes zeroed)"
            elif key == "replica":
                described[key] = " or ".join(REASSIGNED_REPLICAS) + (
                    " (which replica moves: reassign's of the fault partition, add-broker's of every "
                    "partition of the topic)"
                )
            elif key == "mode":
                described[key] = (
                    " or ".join(CLOCK_MODES) + " (the clock jumps by offset, swings between true time and "
                    "offset every period ms, or gains offset ms each second)"
                )
            elif key == "offset":
                described[key] = "a whole number of milliseconds other than 0, negative for behind: " + (
                    ", ".join(f"{mode} within ±{bound:,}" for mode, bound in CLOCK_MODES.items())
                )
            elif key == "tear":
                described[key] = " or ".join(TEARS) + (
                    " (a file with unsynced bytes is cut at its synced size, cut inside its first unsynced "
                    "write, or keeps that write's length with its second half zeros)"
                )
            elif key == "dirents":
                described[key] = " or ".join(DIRENTS) + (
                    " (lost: names created since their directory was last synced are gone, as POSIX "
                    "allows; renames are kept)"
                )
            else:
                raise KeyError(f"{name}: option {key!r} has no description in kchaos faults")
    return list(described.items())


@click.command()
def faults() -> None:
    """List every fault --nemesis takes: its kind, options with defaults, what the oracle treats it as,
    and the values each option accepts."""
    rows = [("fault", "kind", "options (defaults)", "the guarantee oracle treats it as"), *listing()]
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    for name, kind, options, treated_as in rows:
        click.echo(f"{name:{widths[0]}}  {kind:{widths[1]}}  {options:{widths[2]}}  {treated_as}")
    click.echo("\noption values:")
    for key, accepted in option_values():
        click.echo(f"  {key}: {accepted}")
    limited = [(name, fault.since) for name, fault in FAULTS.items() if fault.since is not None]
    if limited:
        click.echo("\nreleases:")
        for name, (line, why) in limited:
            click.echo(f"  {name}: Kafka {'.'.join(map(str, line))} on ({why})")
    click.echo(f"\n{EXAMPLE}: {MIX_HELP}")
    overlapping = ", ".join(name for name, fault in FAULTS.items() if fault.overlaps)
    click.echo(f"\n--fault-overlap P: {OVERLAP_HELP} May overlap: {overlapping}.")
