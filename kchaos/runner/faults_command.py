"""`kchaos faults`: the fault table as a user reads it, so the names --nemesis takes are listed by the one
table that defines them, not by a copy in the help text."""

from __future__ import annotations

import click

from kchaos.model.fault_spec import targets_text
from kchaos.model.fault_table import listing


@click.command()
def faults() -> None:
    """List every fault --nemesis takes: its kind, options with defaults, what the oracle treats it as."""
    rows = [("fault", "kind", "options (defaults)", "the guarantee oracle treats it as"), *listing()]
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    for name, kind, options, treated_as in rows:
        click.echo(f"{name:{widths[0]}}  {kind:{widths[1]}}  {options:{widths[2]}}  {treated_as}")
    click.echo(f"\ntargets: {targets_text()}")
