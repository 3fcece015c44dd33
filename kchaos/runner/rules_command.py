"""`kchaos rules [RULE]`: the oracle's rule table as a user reads it. The terminal after a run names each
verdict's rule by its id only; this is where the id leads: what the rule says, when it applies, what it
expects of which anomalies, and the document it rests on. Listed from the table the oracle judges by
(`kchaos.checkers.rules.rule_table.RULES`), in the order it tries them, so the listing cannot drift from the
judge.
"""

from __future__ import annotations

import click

from kchaos.checkers.rules.oracle import Rule
from kchaos.checkers.rules.rule_table import RULES
from kchaos.checkers.rules.verdicts import OCCURRED
from kchaos.runner.failures import fail

#: What each expectation says of the anomalies, for the verdict `OCCURRED` gives one that occurred.
EXPECTED_TEXT = {
    "none": "none may occur",
    "possible": "some may occur",
    "unknown": "the run cannot tell whether any may occur",
}


def rule_lines(rule: Rule) -> list[str]:
    """One rule in full, a line per part."""
    return [
        f"{rule.id}",
        f"  anomalies:    {', '.join(sorted(rule.anomalies))}",
        f"  expected:     {EXPECTED_TEXT[rule.expected]} (one that occurred is {OCCURRED[rule.expected]})",
        f"  applies when: {rule.applies_when}",
        f"  says:         {rule.statement}",
        f"  source:       {rule.source}",
    ]


@click.command()
@click.argument("rule_id", required=False)
def rules(rule_id: str | None) -> None:
    """List the oracle's rules (id, expectation, anomalies), or print RULE_ID's in full: what it says, when
    it applies and the document it rests on. The verdict lines of `kchaos run` and `kchaos check` name
    rules by these ids."""
    if rule_id is None:
        width = max(len(rule.id) for rule in RULES)
        click.echo(f"{'rule':<{width}}  {'expected':<8}  anomalies")
        for rule in RULES:
            click.echo(f"{rule.id:<{width}}  {rule.expected:<8}  {', '.join(sorted(rule.anomalies))}")
        click.echo("kchaos rules RULE_ID prints one rule in full; rules are tried in this order")
        return
    found = [rule for rule in RULES if rule.id == rule_id]
    if not found:
        fail(f"no rule {rule_id!r}; `kchaos rules` lists the {len(RULES)} rule ids")
    for line in rule_lines(found[0]):
        click.echo(line)
