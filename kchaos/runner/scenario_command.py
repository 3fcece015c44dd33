"""`kchaos scenario list`: the named scenarios `kchaos run --scenario` takes, from the one table that
defines them."""

from __future__ import annotations

import click

from kchaos.model.scenario_table import listing


@click.group()
def scenario() -> None:
    """Named scenarios: crafted fault sequences, each step waiting for Kafka's reaction."""


@scenario.command("list")
def list_scenarios() -> None:
    """One line each: the name, what it provokes, where it is expected to lose acknowledged writes, its
    KIP. Run one with `kchaos run --scenario NAME`; flags given override the scenario's settings."""
    rows = [("scenario", "KIP", "loses acknowledged writes on", "provokes"), *listing()]
    widths = [max(len(row[0]) for row in rows), max(len(row[3]) for row in rows)]
    for name, provokes, loses_on, kip in rows[1:]:
        click.echo(f"{name:{widths[0]}}  {kip:{widths[1]}}  {provokes}; loses data on: {loses_on}")
