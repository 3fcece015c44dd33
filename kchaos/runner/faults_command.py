"""`kchaos faults`: the faults as a user reads them, printed from their definitions
(`kchaos.model.faults`), so the names --nemesis takes, their options and the values each accepts are listed
by what the parser checks against, not by a copy in the help text."""

from __future__ import annotations

import click

from kchaos.model.fault_definition import WHEN
from kchaos.model.fault_mix import EXAMPLE, MIX_HELP
from kchaos.model.fault_plan import OVERLAP_HELP
from kchaos.model.fault_table import FAULTS, listing, option_values
from kchaos.model.fault_triggers import TRIGGERS, WHEN_HELP


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
    click.echo(f"\n{WHEN}=STATE: {WHEN_HELP}")
    for trigger in TRIGGERS.values():
        click.echo(f"  {trigger.name}: {trigger.help}")
